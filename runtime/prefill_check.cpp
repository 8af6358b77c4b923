#include "runtime/prefill_check.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <thread>

#include "runtime/device.h"
#include "runtime/half.h"
#include "runtime/module.h"
#include "runtime/attention_args.h"
#include "runtime/reference.h"

namespace attnc {
namespace {

std::vector<int> prefix_sum(const std::vector<int>& lens) {
  std::vector<int> cu(lens.size() + 1, 0);
  for (size_t i = 0; i < lens.size(); ++i) cu[i + 1] = cu[i] + lens[i];
  return cu;
}

// Random 16-bit inputs; `exact` receives the values they round to, for the reference.
std::vector<std::uint16_t> random_half(DType t, size_t n, std::mt19937_64& rng, std::vector<double>& exact) {
  std::normal_distribution<float> dist(0.f, 1.f);
  std::vector<std::uint16_t> h(n);
  exact.resize(n);
  for (size_t i = 0; i < n; ++i) {
    h[i] = to_half(t, dist(rng));
    exact[i] = from_half(t, h[i]);
  }
  return h;
}

ReferenceOptions reference_options(const KernelPlan& plan, float scale) {
  const Spec& s = plan.spec;
  ReferenceOptions r;
  r.head_dim = plan.head_dim;
  r.head_dim_v = plan.head_dim_v;
  r.num_q_heads = s.num_q_heads;
  r.num_kv_heads = s.num_kv_heads;
  r.scale = scale;
  r.causal = s.mask.kind == MaskKind::causal;
  if (s.mask.kind == MaskKind::sliding_window) {
    r.window_left = s.mask.window_left;
    r.window_right = s.mask.window_right;
  }
  r.softcap = s.softcap;
  return r;
}

// The reference is O(total_q * sk * D) in float64: split it over q heads on all cores (each call
// writes only its own head's outputs).
void parallel_reference(const ReferenceOptions& opt, const std::vector<int>& cu_q, const std::vector<int>& cu_k,
                        const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v,
                        std::vector<double>& o, std::vector<double>& lse) {
  o.assign(size_t(cu_q.back()) * opt.num_q_heads * opt.head_dim_v, 0.0);
  lse.assign(size_t(cu_q.back()) * opt.num_q_heads, 0.0);
  std::atomic<int> next{0};
  std::vector<std::thread> pool;
  const unsigned workers = std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(), opt.num_q_heads));
  for (unsigned w = 0; w < workers; ++w)
    pool.emplace_back([&] {
      for (int h; (h = next++) < opt.num_q_heads;) {
        ReferenceOptions one = opt;
        one.head_begin = h;
        one.head_end = h + 1;
        reference_attention(one, cu_q, cu_k, q, k, v, o, lse);
      }
    });
  for (auto& t : pool) t.join();
}

}  // namespace

double visible_pairs(const Spec& s, const std::vector<int>& lq, const std::vector<int>& lk_in) {
  const std::vector<int>& lk = lk_in.empty() ? lq : lk_in;
  int left = -1, right = -1;
  if (s.mask.kind == MaskKind::causal) right = 0;
  if (s.mask.kind == MaskKind::sliding_window) { left = s.mask.window_left; right = s.mask.window_right; }
  double pairs = 0;
  for (size_t b = 0; b < lq.size(); ++b) {
    for (long i = 0; i < lq[b]; ++i) {
      const long diag = i + lk[b] - lq[b];
      const long lo = left < 0 ? 0 : std::max(0L, diag - left);
      const long hi = right < 0 ? lk[b] - 1 : std::min<long>(lk[b] - 1, diag + right);
      if (hi >= lo) pairs += double(hi - lo + 1);
    }
  }
  return pairs;
}

std::string PrefillReport::summary() const {
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "%s max_abs_err=%.3g max_rel_err=%.3g rel_l2_err=%.3g lse_err=%.3g bad=%lld time=%.3f ms "
                "%.1f TFLOP/s seed=%llu",
                !checked ? "UNCHECKED" : passed ? "PASS" : "FAIL", max_abs_err, max_rel_err, rel_l2_err, lse_max_abs_err, bad_elements,
                time_ms, tflops, static_cast<unsigned long long>(seed));
  return buf;
}

PrefillReport check_prefill(const KernelPlan& plan, const Kernel& kernel, const PrefillCase& c) {
  const Spec& s = plan.spec;
  const DType t = s.dtype;
  const int hq = s.num_q_heads, hkv = s.num_kv_heads, d = plan.head_dim, dv = plan.head_dim_v;
  const std::vector<int>& lq = c.seqlens_q;
  const std::vector<int>& lk = c.seqlens_k.empty() ? c.seqlens_q : c.seqlens_k;
  if (lq.empty() || lk.size() != lq.size())
    throw BadCall("check: seqlens_q must be non-empty and seqlens_k must have the same length");
  const std::vector<int> cu_q = prefix_sum(lq), cu_k = prefix_sum(lk);
  const int total_q = cu_q.back(), total_k = cu_k.back();

  PrefillReport rep;
  rep.seed = c.seed ? c.seed : std::uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  std::mt19937_64 rng(rep.seed);
  std::vector<double> qd, kd, vd;
  const auto qh = random_half(t, size_t(total_q) * hq * d, rng, qd);
  const auto kh = random_half(t, size_t(total_k) * hkv * d, rng, kd);
  const auto vh = random_half(t, size_t(total_k) * hkv * dv, rng, vd);

  DeviceBuffer q = DeviceBuffer::from(qh), k = DeviceBuffer::from(kh), v = DeviceBuffer::from(vh);
  DeviceBuffer o(std::max<size_t>(size_t(total_q) * hq * dv * 2, 16));
  DeviceBuffer lse(std::max<size_t>(size_t(total_q) * hq * 4, 16));
  DeviceBuffer cuq = DeviceBuffer::from(cu_q), cuk = DeviceBuffer::from(cu_k);
  o.memset(0xff);    // NaN in bf16 and fp16
  lse.memset(0xff);  // NaN in fp32

  AttentionArgs a;
  a.q = q.as(); a.k = k.as(); a.v = v.as(); a.o = o.as();
  a.lse = plan.lse ? lse.as<float>() : nullptr;
  a.cu_seqlens_q = cuq.as<int>();
  a.cu_seqlens_k = cuk.as<int>();
  a.batch = int(lq.size());
  a.max_seqlen_q = *std::max_element(lq.begin(), lq.end());
  a.total_q = total_q;
  a.softmax_scale = c.softmax_scale;
  const AttentionLaunch launch = prepare_attention(plan, a);
  const AttentionParams& params = launch.params;
  const Dim3 grid{launch.grid.x, launch.grid.y, launch.grid.z}, block{unsigned(plan.threads), 1, 1};
  Stream stream;
  kernel.launch(grid, block, plan.smem_bytes, stream.handle(), &params);
  stream.synchronize();

  if (c.check) {
    std::vector<double> ref_o, ref_lse;
    parallel_reference(reference_options(plan, c.softmax_scale), cu_q, cu_k, qd, kd, vd, ref_o, ref_lse);
    const auto out = o.download<std::uint16_t>();
    double num = 0, den = 0, worst = -1;
    for (size_t i = 0; i < ref_o.size(); ++i) {
      const double got = from_half(t, out[i]), ref = ref_o[i], diff = std::abs(got - ref);
      num += (got - ref) * (got - ref);
      den += ref * ref;
      if (!(diff <= c.atol + c.rtol * std::abs(ref))) ++rep.bad_elements;  // NaN counts as bad
      if (std::isnan(got)) continue;
      rep.max_abs_err = std::max(rep.max_abs_err, diff);
      const double excess = diff - c.atol - c.rtol * std::abs(ref);
      if (excess > worst) { worst = excess; rep.max_rel_err = diff / std::max(std::abs(ref), 1e-3); }
    }
    rep.rel_l2_err = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
    if (plan.lse) {
      const auto got_lse = lse.download<float>();
      const bool head_major = s.lse.layout == LseLayout::head_major;
      const double to_base = plan.lse == 2 ? 1.0 / std::log(2.0) : 1.0;
      for (int i = 0; i < total_q; ++i)
        for (int h = 0; h < hq; ++h) {
          const double ref = ref_lse[size_t(i) * hq + h] * to_base;
          const double got = got_lse[head_major ? size_t(h) * total_q + i : size_t(i) * hq + h];
          const bool both_empty = std::isinf(ref) && ref < 0 && std::isinf(got) && got < 0;
          const double diff = both_empty ? 0.0 : std::abs(got - ref);
          if (!(diff <= 1e-3 + 1e-4 * std::abs(ref))) ++rep.bad_elements;
          if (!std::isnan(diff)) rep.lse_max_abs_err = std::max(rep.lse_max_abs_err, diff);
        }
    }
    rep.checked = true;
    rep.passed = rep.bad_elements == 0;
  }

  if (c.timing_reps > 0) {
    for (int i = 0; i < 3; ++i) kernel.launch(grid, block, plan.smem_bytes, stream.handle(), &params);
    std::vector<float> times;
    Event start, stop;
    for (int i = 0; i < c.timing_reps; ++i) {
      start.record(stream.handle());
      kernel.launch(grid, block, plan.smem_bytes, stream.handle(), &params);
      stop.record(stream.handle());
      stop.synchronize();
      times.push_back(elapsed_ms(start, stop));
    }
    std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
    rep.time_ms = times[times.size() / 2];
    const double flops = 2.0 * visible_pairs(s, lq, lk) * hq * (d + dv);
    rep.tflops = rep.time_ms > 0 ? flops / (rep.time_ms * 1e-3) / 1e12 : 0;
  }
  return rep;
}

}  // namespace attnc
