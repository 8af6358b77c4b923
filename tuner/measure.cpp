#include "tuner/measure.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>

#include "check/attention_check.h"
#include "generator/plan/plan_prefill_sm90.h"
#include "runtime/launch/attention_launch.h"
#include "runtime/driver/cuda_driver.h"
#include "runtime/driver/event_wait.h"
#include "check/half.h"
#include "tuner/int8_timing.h"

namespace attnc {
namespace {

constexpr std::size_t kAlign = 256;
std::size_t align_up(std::size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

// Random normal 16-bit values, never exactly zero: a small random block uploaded once, then
// doubled on the device until the buffer is full (filling tens of GiB from the host would be slow).
void fill_random(DeviceBuffer& buf, DType t, std::uint64_t seed) {
  if (buf.size() < 2) return;
  const std::size_t block = std::min<std::size_t>(buf.size(), 8u << 20) / 2 * 2;
  std::vector<std::uint16_t> host(block / 2);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.f, 1.f);
  for (auto& h : host) {
    h = to_half(t, dist(rng));
    if ((h & 0x7fff) == 0) h = to_half(t, 0.5f);
  }
  buf.upload(host.data(), block, 0);
  for (std::size_t filled = block; filled < buf.size();) {
    const std::size_t n = std::min(filled, buf.size() - filled);
    ATTNC_CU(MemcpyDtoD, buf.ptr() + filled, buf.ptr(), n);
    filled += n;
  }
}

}  // namespace

Timing summarize_times(std::vector<float> ms) {
  Timing t;
  if (ms.empty()) return t;
  std::sort(ms.begin(), ms.end());
  const std::size_t n = ms.size();
  t.median_us = (n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2])) * 1e3;
  t.min_us = ms.front() * 1e3;
  t.p90_us = ms[std::min(n - 1, static_cast<std::size_t>(std::ceil(0.9 * n)) - 1)] * 1e3;
  t.repeats = static_cast<int>(n);
  return t;
}

int rotation_sets(std::size_t set_bytes, std::size_t l2_bytes, std::size_t memory_budget, double factor) {
  if (set_bytes == 0) return 1;
  const double want = std::ceil(factor * static_cast<double>(l2_bytes) / static_cast<double>(set_bytes));
  const std::size_t fit = memory_budget / set_bytes;
  return static_cast<int>(std::min<double>({std::max(2.0, want), static_cast<double>(fit), 256.0}));
}

struct TimingInputs::Impl {
  const Device& dev;
  Spec spec;
  KernelKind kind;
  Problem problem;
  MeasureOptions options;
  bool paged = false, pass_cu_q = true;
  int total_q = 0, total_k = 0, blocks_per_req = 0, nsets = 0;
  int kv_bytes = 2;  // bytes per element of K/V (paged fp8 caches: 1)
  std::size_t q_bytes = 0, set_stride = 0, rotated = 0;
  long long q_off = 0, k_off = 0, v_off = 0;  // in bytes within a set (contiguous prefill)
  KvCacheStrides strides;
  DeviceBuffer inputs, cache, out, lse, meta, extras, workspace;
  Stream stream;
  std::vector<std::unique_ptr<Event>> events;
  Int8TimingInputs int8;  // int8 specs: their scales (and int8_qk's 16-bit V plane)

  Impl(const Device& d, const Spec& s, KernelKind k, const Problem& p, int page_size, KvCacheLayout layout,
       const MeasureOptions& o)
      : dev(d), spec(s), kind(k), problem(p), options(o) {
    const int hq = s.num_q_heads, hkv = s.num_kv_heads, dq = s.head_dim, dv = s.head_dim_v;
    const int B = p.batch, Q = p.max_seqlen_q, K = p.max_seqlen_k;
    paged = kind != KernelKind::prefill;
    kv_bytes = paged ? kv_cache_elem_bytes(s) : 2;
    pass_cu_q = !(kind == KernelKind::decode && Q == 1);  // plain decode: one token each, no cu_seqlens_q
    total_q = B * Q;
    total_k = B * K;
    q_bytes = std::size_t(total_q) * hq * dq * 2;
    std::size_t set_bytes = 0;
    if (paged) {
      blocks_per_req = (K + page_size - 1) / page_size;
      const KvCacheStrides one = kv_cache_strides(layout, 1, page_size, hkv, dq, dv);
      set_stride = align_up(q_bytes);
      set_bytes = set_stride + std::size_t(B) * blocks_per_req * one.page_elems * 2 * kv_bytes;
    } else {
      k_off = static_cast<long long>(align_up(q_bytes));
      v_off = k_off + static_cast<long long>(align_up(std::size_t(total_k) * hkv * dq * 2));
      set_stride = static_cast<std::size_t>(v_off) + align_up(std::size_t(total_k) * hkv * dv * 2);
      set_bytes = set_stride;
    }
    const std::size_t fixed = std::size_t(total_q) * hq * (dv * 2 + 4) + (64u << 20);  // o, lse, slack
    const double free = static_cast<double>(dev.free_memory()) * options.memory_fraction;
    const std::size_t budget = free > double(fixed) ? static_cast<std::size_t>(free) - fixed : 0;
    nsets = rotation_sets(set_bytes, static_cast<std::size_t>(dev.l2_bytes()), budget, options.rotation_factor);
    if (nsets < 1)
      throw std::runtime_error("the problem " + ShapeBucket::of(p).label() + " needs " +
                               std::to_string(set_bytes >> 20) + " MiB of inputs; " +
                               std::to_string(static_cast<std::size_t>(free) >> 20) +
                               " MiB of device memory may be used");
    rotated = set_bytes * nsets;

    inputs = DeviceBuffer(set_stride * nsets);
    fill_random(inputs, s.dtype, 1);
    if (paged) {
      strides = kv_cache_strides(layout, nsets * B * blocks_per_req, page_size, hkv, dq, dv);
      cache = DeviceBuffer(std::size_t(strides.total_elems) * kv_bytes);  // fp8: random bytes, timing only
      fill_random(cache, s.dtype, 2);
    }
    int8.setup(s, total_q, total_k, paged ? &strides : nullptr);
    out = DeviceBuffer(std::size_t(total_q) * hq * dv * 2 + 16);
    lse = DeviceBuffer(std::size_t(total_q) * hq * 4 + 16);

    // ints: cu_q [B+1], cu_k [B+1], seqused [B], then one block table [B, blocks_per_req] per set,
    // each over its own shuffled page range [set * pages, (set + 1) * pages).
    std::vector<int> ints;
    for (int b = 0; b <= B; ++b) ints.push_back(b * Q);
    for (int b = 0; b <= B; ++b) ints.push_back(b * K);
    for (int b = 0; b < B; ++b) ints.push_back(K);
    if (paged) {
      std::mt19937_64 rng(3);
      const int pages = B * blocks_per_req;
      std::vector<int> perm(pages);
      for (int set = 0; set < nsets; ++set) {
        std::iota(perm.begin(), perm.end(), set * pages);
        std::shuffle(perm.begin(), perm.end(), rng);
        ints.insert(ints.end(), perm.begin(), perm.end());
      }
    }
    meta = DeviceBuffer::from(ints);

    std::vector<float> ex(2 * hq);
    std::mt19937_64 rng(4);
    std::uniform_real_distribution<float> unit(0.f, 1.f);
    for (int h = 0; h < hq; ++h) {
      ex[h] = std::exp2(-1.f - 7.f * unit(rng));  // ALiBi-like slopes
      ex[hq + h] = unit(rng) - 0.5f;              // sink logits
    }
    extras = DeviceBuffer::from(ex);
    ATTNC_CU(CtxSynchronize);  // the fills ran on the legacy stream; timing runs on `stream`
  }

  AttentionArgs args(const KernelPlan& plan, int set, int num_splits) const {
    const int B = problem.batch;
    AttentionArgs a;
    const auto base = reinterpret_cast<char*>(inputs.ptr()) + set * set_stride;
    a.q = base;
    a.o = out.as();
    a.lse = plan.lse != LseOut::none ? lse.as<float>() : nullptr;
    a.batch = B;
    a.total_q = total_q;
    a.max_seqlen_q = problem.max_seqlen_q;
    a.max_seqlen_k = problem.max_seqlen_k;
    const int* m = meta.as<int>();
    if (pass_cu_q) a.cu_seqlens_q = m;
    if (paged) {
      bind_kv_cache(a, strides, cache.as(), kv_bytes);
      a.block_table = m + 3 * B + 2 + std::size_t(set) * B * blocks_per_req;
      a.block_table_stride = blocks_per_req;
      a.max_blocks_per_seq = blocks_per_req;
      a.seqused_k = m + 2 * B + 2;
    } else {
      a.k = base + k_off;
      a.v = base + v_off;
      a.cu_seqlens_k = m + B + 1;
      a.total_k = total_k;
    }
    int8.bind(a);
    if (plan.alibi != Alibi::none) a.alibi_slopes = extras.as<float>();
    if (plan.sinks) a.sinks = extras.as<float>() + spec.num_q_heads;
    a.num_splits = num_splits;
    a.workspace = workspace.size() ? workspace.as() : nullptr;
    a.workspace_bytes = workspace.size();
    return a;
  }

  Event& event(std::size_t i) {
    while (events.size() <= i) events.push_back(std::make_unique<Event>());
    return *events[i];
  }
};

TimingInputs::TimingInputs(const Device& dev, const Spec& s, KernelKind kind, const Problem& p, int page_size,
                           KvCacheLayout layout, const MeasureOptions& o)
    : impl_(std::make_unique<Impl>(dev, s, kind, p, page_size, layout, o)) {}
TimingInputs::~TimingInputs() = default;
int TimingInputs::sets() const { return impl_->nsets; }
std::size_t TimingInputs::rotated_bytes() const { return impl_->rotated; }
const Problem& TimingInputs::problem() const { return impl_->problem; }

Timing TimingInputs::time(const KernelPlan& plan, const Kernel& kernel, const Kernel* combine, int num_splits) {
  Impl& m = *impl_;
  const MeasureOptions& o = m.options;
  const SplitShape shape{m.problem.batch, m.pass_cu_q ? m.problem.max_seqlen_q : 1, m.problem.max_seqlen_k, m.total_q,
                         m.dev.sm_count()};
  const int splits = decide_num_splits(plan, shape, num_splits);
  const std::size_t need =
      std::max(attention_workspace_bytes(plan, m.total_q, splits),
               v_prewiden_workspace_bytes(
                   plan, v_prewiden_rows(plan, m.problem.batch, m.problem.max_seqlen_k, m.total_k)));
  if (need > m.workspace.size()) m.workspace = DeviceBuffer(need);

  std::vector<AttentionLaunch> launches;
  for (int set = 0; set < m.nsets; ++set) launches.push_back(prepare_attention(plan, m.args(plan, set, splits)));
  const CUstream stream = m.stream.handle();
  const std::string what = kernel.entry() + " on " + ShapeBucket::of(m.problem).label();

  // Warm-up, timed as one batch to size the measured run.
  Event& w0 = m.event(0);
  Event& w1 = m.event(1);
  w0.record(stream);
  for (int i = 0; i < o.warmup; ++i) launch_attention(kernel, combine, launches[i % m.nsets], stream);
  w1.record(stream);
  wait_event(w1, std::chrono::steady_clock::now() + o.run_timeout, what);
  const double est_ms = std::max(1e-3, double(elapsed_ms(w0, w1)) / std::max(1, o.warmup));
  const int reps = std::clamp(static_cast<int>(std::ceil(o.target_ms / est_ms)), o.min_repeats, o.max_repeats);

  // Back to back, one event between consecutive launches: each interval is one call.
  m.event(reps);
  m.events[0]->record(stream);
  for (int i = 0; i < reps; ++i) {
    launch_attention(kernel, combine, launches[(o.warmup + i) % m.nsets], stream);
    m.events[i + 1]->record(stream);
  }
  const auto budget = o.run_timeout + std::chrono::milliseconds(static_cast<long long>(4 * reps * est_ms));
  wait_event(*m.events[reps], std::chrono::steady_clock::now() + budget, what);
  std::vector<float> ms(reps);
  for (int i = 0; i < reps; ++i) ms[i] = elapsed_ms(*m.events[i], *m.events[i + 1]);
  Timing t = summarize_times(std::move(ms));
  t.warmup = o.warmup;
  t.num_splits = launches.front().params.num_splits;
  return t;
}

double problem_throughput(const Spec& s, KernelKind kind, const Problem& p, double time_us) {
  if (time_us <= 0) return 0;
  if (kind == KernelKind::decode) {
    const double bytes = double(p.batch) * p.max_seqlen_k * s.num_kv_heads *
                         (double(s.head_dim) * kv_cache_elem_bytes(s) + double(s.head_dim_v) * kv_cache_v_elem_bytes(s));
    return bytes / (time_us * 1e-6) / 1e12;
  }
  const std::vector<int> lq(p.batch, p.max_seqlen_q), lk(p.batch, p.max_seqlen_k);
  const double flops = 2.0 * visible_pairs(s, lq, lk) * s.num_q_heads * (s.head_dim + s.head_dim_v);
  return flops / (time_us * 1e-6) / 1e12;
}

const char* throughput_unit(KernelKind kind) { return kind == KernelKind::decode ? "TB/s" : "TFLOP/s"; }

}  // namespace attnc
