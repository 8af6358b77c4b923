// The dispatcher on the GPU against the float64 reference, outputs poisoned (NaN) first: contiguous
// prefill and paged decode (vLLM layout, shuffled pages, split-KV from a reserved workspace); the
// tuned path (a hand-written record choosing block_n 32 and 3 splits); JIT off on an empty cache;
// a CUDA graph captured around run() and replayed on fresh inputs; a background compile that
// serves the heuristic kernel first and the tuned one once built; int8_qkv prefill, contiguous and
// paged, with and without the reserved workspace its V widening needs, and paged with a max_seqlen_k
// below a request's length (that request NaN, nothing written outside its rows). Skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <optional>

#include "runtime/dispatch/dispatcher.h"
#include "check/int8_inputs.h"
#include "check/reference.h"
#include "tests/gpu/ops_gpu_util.h"
#include "tests/unit/cache/cache_test_util.h"
#include "tests/unit/runtime/dispatch/dispatch_test_util.h"

namespace attnc {
namespace {

constexpr int kHq = 8, kHkv = 2, kD = 128, kPage = 16;

const char* kSpec = R"(version: 1
name: gpu-dispatch
head_dim: 128
num_q_heads: 8
num_kv_heads: 2
dtype: bf16
kv_cache: {dtype: same, layout: NHD, page_size: 16}
mask: causal
kernels: [prefill, decode]
)";

std::vector<int> prefix_sum(const std::vector<int>& lens) {
  std::vector<int> cu(lens.size() + 1, 0);
  std::partial_sum(lens.begin(), lens.end(), cu.begin() + 1);
  return cu;
}

// Compares a downloaded bf16 output with the float64 reference; NaN (never written) counts as bad.
void expect_matches(const std::vector<std::uint16_t>& got, const std::vector<double>& ref, const char* what) {
  ASSERT_EQ(got.size(), ref.size());
  long long bad = 0;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = bf16_to_float(got[i]), err = std::fabs(g - ref[i]);
    if (!(err <= 2e-2 + 2e-2 * std::fabs(ref[i]))) ++bad;
    if (std::isnan(g))
      worst = INFINITY;
    else
      worst = std::max(worst, err);
  }
  std::printf("RESULT dispatch %-28s %s max_abs_err=%.3g bad=%lld\n", what, bad ? "FAIL" : "PASS", worst, bad);
  EXPECT_EQ(bad, 0) << what << ": max_abs_err " << worst;
}

// A decode batch over a vLLM-layout cache [num_blocks, page, Hkv, D] (K and V buffers), pages
// shuffled, plus the float64 reference of it. Buffers stay put; refill() draws fresh values into
// them (what a graph replay needs).
struct DecodeCase {
  std::vector<int> lens;
  int batch = 0, num_blocks = 0, max_blocks = 0;
  DeviceBuffer q, k, v, o, block_table, seqused;
  std::vector<double> ref;

  explicit DecodeCase(std::vector<int> l) : lens(std::move(l)), batch(int(lens.size())) {
    const int max_len = *std::max_element(lens.begin(), lens.end());
    max_blocks = (max_len + kPage - 1) / kPage;
    num_blocks = batch * max_blocks + 7;
    q = DeviceBuffer(size_t(batch) * kHq * kD * 2);
    k = DeviceBuffer(size_t(num_blocks) * kPage * kHkv * kD * 2);
    v = DeviceBuffer(k.size());
    o = DeviceBuffer(size_t(batch) * kHq * kD * 2);
    block_table = DeviceBuffer(size_t(batch) * max_blocks * 4);
    seqused = DeviceBuffer::from(lens);
  }

  void refill(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<double> qx, kx, vx;
    q.upload(random_half(DType::bf16, size_t(batch) * kHq * kD, rng, &qx));
    k.upload(random_half(DType::bf16, size_t(num_blocks) * kPage * kHkv * kD, rng, &kx));
    v.upload(random_half(DType::bf16, size_t(num_blocks) * kPage * kHkv * kD, rng, &vx));
    o.memset(0xff);
    std::vector<int> pages(num_blocks);
    std::iota(pages.begin(), pages.end(), 0);
    std::shuffle(pages.begin(), pages.end(), rng);
    pages.resize(size_t(batch) * max_blocks);
    block_table.upload(pages);
    // The reference reads the logical K/V each request sees, contiguous.
    std::vector<double> kc, vc;
    const size_t row = size_t(kHkv) * kD;
    for (int b = 0; b < batch; ++b)
      for (int t = 0; t < lens[b]; ++t) {
        const size_t at = (size_t(pages[size_t(b) * max_blocks + t / kPage]) * kPage + t % kPage) * row;
        kc.insert(kc.end(), kx.begin() + at, kx.begin() + at + row);
        vc.insert(vc.end(), vx.begin() + at, vx.begin() + at + row);
      }
    ReferenceOptions opt;
    opt.head_dim = opt.head_dim_v = kD;
    opt.num_q_heads = kHq;
    opt.num_kv_heads = kHkv;
    opt.causal = true;
    std::vector<double> lse;
    reference_attention_parallel(opt, prefix_sum(std::vector<int>(batch, 1)), prefix_sum(lens), qx, kc, vc, ref, lse);
    // Uploads and memsets run on the legacy stream; the test's stream does not wait for it.
    test_gpu()->synchronize();
  }

  AttentionArgs args() const {
    AttentionArgs a;
    a.q = q.as<void>();
    a.k = k.as<void>();
    a.v = v.as<void>();
    a.o = o.as<void>();
    a.batch = a.total_q = batch;
    a.max_seqlen_q = 1;
    a.max_seqlen_k = *std::max_element(lens.begin(), lens.end());
    a.page_size = kPage;
    a.num_blocks = num_blocks;
    a.k_row_stride = a.v_row_stride = kHkv * kD;
    a.k_head_stride = a.v_head_stride = kD;
    a.k_block_stride = a.v_block_stride = (long long)kPage * kHkv * kD;
    a.block_table = block_table.as<int>();
    a.block_table_stride = a.max_blocks_per_seq = max_blocks;
    a.seqused_k = seqused.as<int>();
    return a;
  }
};

class GpuDispatch : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test_gpu()) GTEST_SKIP() << "no GPU: " << Driver::get().error();
    spec_ = parse_spec(kSpec, "gpu-dispatch.yaml");
    stream_ = std::make_unique<Stream>();
  }
  AttentionOptions options() const {
    AttentionOptions o;
    o.db = dir_.file("attnc.db");
    o.no_jit = false;
    return o;
  }
  // A record for `bucket` of decode: block_n 32 (the heuristic has 64) and 3 splits.
  TunedChoice put_tuned(const std::string& bucket) const {
    TunedChoice c;
    c.config = default_config(spec_, KernelKind::decode, test_gpu()->arch());
    c.config.block_n = 32;
    c.num_splits = 3;
    test::put_record(dir_.file("attnc.db"),
                     test::key_for(spec_, DeviceInfo::of(*test_gpu()), KernelKind::decode, bucket), c.to_json());
    return c;
  }

  test::TempDir dir_;
  Spec spec_;
  std::unique_ptr<Stream> stream_;  // after the GPU check: constructing one needs the driver
};

// The ragged prefill batch of the prefill tests: queries (1, 37, 200) over keys (5, 37, 300).
const std::vector<int> kPrefillCuQ = prefix_sum({1, 37, 200}), kPrefillCuK = prefix_sum({5, 37, 300});

// The bf16 output of a prefill of the kPrefillCuQ / kPrefillCuK batch against the causal float64
// reference of qx, kx, vx (K/V rows contiguous per request).
std::vector<double> prefill_reference(const std::vector<double>& qx, const std::vector<double>& kx,
                                      const std::vector<double>& vx) {
  ReferenceOptions opt;
  opt.head_dim = opt.head_dim_v = kD;
  opt.num_q_heads = kHq;
  opt.num_kv_heads = kHkv;
  opt.causal = true;
  std::vector<double> ref, lse;
  reference_attention_parallel(opt, kPrefillCuQ, kPrefillCuK, qx, kx, vx, ref, lse);
  return ref;
}
void expect_prefill_matches(const DeviceBuffer& o, const std::vector<double>& qx, const std::vector<double>& kx,
                            const std::vector<double>& vx, const char* what) {
  expect_matches(o.download<std::uint16_t>(), prefill_reference(qx, kx, vx), what);
}

// One contiguous prefill call through `att` on q, k, v (device; `extra` sets what else the spec
// needs), the bf16 output poisoned first, compared with the causal float64 reference of qx, kx, vx.
template <class Extra>
void run_prefill_and_compare(Attention& att, Stream& stream, const DeviceBuffer& q, const DeviceBuffer& k,
                             const DeviceBuffer& v, int total_k, const std::vector<double>& qx,
                             const std::vector<double>& kx, const std::vector<double>& vx, const char* what,
                             Extra extra) {
  const std::vector<int>&cq = kPrefillCuQ, &ck = kPrefillCuK;
  DeviceBuffer o(size_t(cq.back()) * kHq * kD * 2), dcq = DeviceBuffer::from(cq), dck = DeviceBuffer::from(ck);
  o.memset(0xff);
  test_gpu()->synchronize();  // the legacy stream's copies and memset, before the test's stream reads
  AttentionArgs a;
  a.q = q.as<void>();
  a.k = k.as<void>();
  a.v = v.as<void>();
  a.o = o.as<void>();
  a.cu_seqlens_q = dcq.as<int>();
  a.cu_seqlens_k = dck.as<int>();
  a.batch = 3;
  a.total_q = cq.back();
  a.total_k = total_k;
  a.max_seqlen_q = 200;
  a.max_seqlen_k = 300;
  extra(a);
  att.run(a, KernelKind::prefill, stream.handle());
  stream.synchronize();
  expect_prefill_matches(o, qx, kx, vx, what);
}

// With total_k, and without it (a caller that predates the field): on sm_90a the second call is
// served by prefill_sm80, since prefill_sm90's tensor maps need the rows of k and v.
TEST_F(GpuDispatch, PrefillMatchesReference) {
  Attention att(spec_, options());
  const int total_q = kPrefillCuQ.back(), rows_k = kPrefillCuK.back();
  for (const int total_k : {rows_k, -1}) {
    SCOPED_TRACE("total_k " + std::to_string(total_k));
    std::mt19937_64 rng(fresh_seed());
    std::vector<double> qx, kx, vx;
    DeviceBuffer q = DeviceBuffer::from(random_half(DType::bf16, size_t(total_q) * kHq * kD, rng, &qx));
    DeviceBuffer k = DeviceBuffer::from(random_half(DType::bf16, size_t(rows_k) * kHkv * kD, rng, &kx));
    DeviceBuffer v = DeviceBuffer::from(random_half(DType::bf16, size_t(rows_k) * kHkv * kD, rng, &vx));
    run_prefill_and_compare(att, *stream_, q, k, v, total_k, qx, kx, vx, "prefill", [](AttentionArgs&) {});
  }
  const Selection s = att.select({KernelKind::prefill, 3, 200, 300});
  EXPECT_EQ(s.origin, ChoiceOrigin::heuristic);
  EXPECT_TRUE(s.cached);
  EXPECT_TRUE(s.kernel_loaded);
}

// int8_qkv inputs of the kPrefillCuQ / kPrefillCuK batch, after `att`'s reserve() for `kind` when
// `reserved`: then the kernel that widens V once per call serves it, else the producer's.
Int8Inputs int8_qkv_prefill_inputs(Attention& att, KernelKind kind, bool reserved) {
  const Problem largest{kind, 3, 200, 300};
  if (reserved) att.reserve(largest);
  EXPECT_EQ(att.select(largest).config->v_prewiden, reserved);
  std::mt19937_64 rng(fresh_seed());
  return random_int8_inputs(Int8Mode::qkv, DType::bf16, kPrefillCuQ.back(), kPrefillCuK.back(), kHq, kHkv, kD, kD,
                            rng);
}

// int8_qkv prefill: without a workspace the kernel whose producer widens V serves the call; once
// reserve() has sized one, V is widened once per call into it (v_prewiden). Both against the float64
// reference on the dequantised inputs, the output poisoned before each call.
TEST_F(GpuDispatch, Int8QkvPrefillWidensVInTheReservedWorkspaceElseInTheProducer) {
  Attention att(test::as_int8_qkv(spec_), options());
  for (const bool reserved : {false, true}) {
    SCOPED_TRACE(reserved ? "reserved" : "no workspace");
    const Int8Inputs in = int8_qkv_prefill_inputs(att, KernelKind::prefill, reserved);
    DeviceBuffer q = DeviceBuffer::from(in.q), k = DeviceBuffer::from(in.k), v = DeviceBuffer::from(in.v);
    DeviceBuffer qs = DeviceBuffer::from(in.q_scale), ks = DeviceBuffer::from(in.k_token_scale),
                 vs = DeviceBuffer::from(in.v_channel_scale);
    run_prefill_and_compare(att, *stream_, q, k, v, kPrefillCuK.back(), in.q_exact, in.k_exact, in.v_exact,
                            reserved ? "int8_qkv prefill v_prewiden" : "int8_qkv prefill", [&](AttentionArgs& a) {
                              a.q_scale = qs.as<float>();
                              a.k_token_scale = ks.as<float>();
                              a.v_channel_scale = vs.as<float>();
                            });
  }
}

// One paged int8_qkv prefill of the kPrefillCuQ / kPrefillCuK batch (vLLM layout, random pages,
// page 16) through `att`, after its reserve() when `reserved`, with the call's max_seqlen_k; the
// output is poisoned with `poison` bytes first, and a reserved call's workspace holds an earlier
// call's leftovers (NaN), so rows the widening pass should have zeroed show. Returns the output and
// the inputs' exact values.
struct PagedInt8Run {
  std::vector<std::uint16_t> o;
  Int8Inputs in;
};
PagedInt8Run run_paged_int8_qkv(Attention& att, Stream& stream, bool reserved, int max_seqlen_k, int poison) {
  const std::vector<int> lens_k = {5, 37, 300};
  PagedInt8Run r{{}, int8_qkv_prefill_inputs(att, KernelKind::prefill_paged, reserved)};
  const Int8Inputs& in = r.in;
  std::mt19937_64 rng(fresh_seed());
  PageTableOptions po;
  po.page_size = kPage;
  po.num_blocks = 64;
  const HostPageTable t = build_page_table(lens_k, po, rng);
  const KvCacheStrides s = kv_cache_strides(KvCacheLayout::vllm, po.num_blocks, kPage, kHkv, kD, kD);
  const Int8CacheImages img = int8_cache_images(Int8Mode::qkv, s, t, kPrefillCuK, in, kD, kD);
  DeviceBuffer q = DeviceBuffer::from(in.q), cache = DeviceBuffer::from(img.kv),
               ks = DeviceBuffer::from(img.k_token_scale), qs = DeviceBuffer::from(in.q_scale),
               vs = DeviceBuffer::from(in.v_channel_scale), table = DeviceBuffer::from(t.block_table),
               seqused = DeviceBuffer::from(t.seqused_k), cq = DeviceBuffer::from(kPrefillCuQ);
  DeviceBuffer o(size_t(kPrefillCuQ.back()) * kHq * kD * 2);
  o.memset(poison);
  std::optional<DeviceBuffer> workspace;
  if (reserved) {
    workspace.emplace(att.workspace_bytes());
    workspace->memset(0xff);
  }
  test_gpu()->synchronize();  // the legacy stream's copies and memset, before the test's stream reads
  AttentionArgs a;
  a.q = q.as<void>();
  a.o = o.as<void>();
  a.cu_seqlens_q = cq.as<int>();
  a.batch = 3;
  a.total_q = kPrefillCuQ.back();
  a.max_seqlen_q = 200;
  a.max_seqlen_k = max_seqlen_k;
  bind_kv_cache(a, s, cache.as(), 1);  // int8 planes: one byte per element
  a.block_table = table.as<int>();
  a.block_table_stride = t.table_stride;
  a.max_blocks_per_seq = t.max_blocks_per_seq;
  a.seqused_k = seqused.as<int>();
  a.q_scale = qs.as<float>();
  a.k_token_scale = ks.as<float>();
  a.v_channel_scale = vs.as<float>();
  if (workspace) {
    a.workspace = workspace->as<void>();
    a.workspace_bytes = workspace->size();
  }
  att.run(a, KernelKind::prefill_paged, stream.handle());
  stream.synchronize();
  r.o = o.download<std::uint16_t>();
  return r;
}

// Paged int8_qkv prefill (unowned slots poisoned): without a workspace the paged kernel whose
// producer widens V serves the call; once reserve() has sized one, the pages of V are gathered and
// widened once per call into it (v_prewiden), the rows from each request's end to its last key
// tile's zeroed over the workspace's leftovers.
TEST_F(GpuDispatch, PagedInt8QkvPrefillWidensVInTheReservedWorkspaceElseInTheProducer) {
  Attention att(test::as_int8_qkv(spec_), options());
  for (const bool reserved : {false, true}) {
    SCOPED_TRACE(reserved ? "reserved" : "no workspace");
    const PagedInt8Run r = run_paged_int8_qkv(att, *stream_, reserved, 300, 0xff);
    expect_matches(r.o, prefill_reference(r.in.q_exact, r.in.k_exact, r.in.v_exact),
                   reserved ? "paged int8_qkv v_prewiden" : "paged int8_qkv");
  }
}

// A call whose max_seqlen_k (128) is below a request's length (300): the widened V rows are laid out
// by it, so the widening pass NaNs that request's rows instead of writing into the next request's or
// past the workspace. The long request's output is NaN (the output is zeroed first, so the NaN is
// the kernel's), the others' match the reference.
TEST_F(GpuDispatch, PagedInt8QkvPrewidenNaNsARequestLongerThanMaxSeqlenK) {
  Attention att(test::as_int8_qkv(spec_), options());
  const PagedInt8Run r = run_paged_int8_qkv(att, *stream_, true, 128, 0);
  const std::vector<double> ref = prefill_reference(r.in.q_exact, r.in.k_exact, r.in.v_exact);
  const size_t short_end = size_t(kPrefillCuQ[2]) * kHq * kD;  // the rows of the two short requests
  expect_matches(std::vector<std::uint16_t>(r.o.begin(), r.o.begin() + short_end),
                 std::vector<double>(ref.begin(), ref.begin() + short_end), "paged int8_qkv short requests");
  long long finite = 0;
  for (size_t i = short_end; i < r.o.size(); ++i) finite += !std::isnan(bf16_to_float(r.o[i]));
  EXPECT_EQ(finite, 0) << "the request longer than max_seqlen_k should be NaN";
}

TEST_F(GpuDispatch, DecodeSplitsIntoTheReservedWorkspace) {
  Attention att(spec_, options());
  DecodeCase c({1, 17, 300, 4000});
  att.reserve({KernelKind::decode, 4, 1, 4000});
  const Selection s = att.select({KernelKind::decode, 4, 1, 4000});
  EXPECT_GT(s.num_splits, 1) << "the heuristic splits 4 requests x 2 kv heads over " << test_gpu()->sm_count()
                             << " SMs";
  c.refill(fresh_seed());
  att.run(c.args(), KernelKind::decode, stream_->handle());
  stream_->synchronize();
  expect_matches(c.o.download<std::uint16_t>(), c.ref, "decode heuristic");
}

// select() before any call, reserve() or device_info(), asked about a caller's workspace (the
// reserved one is empty until reserve(): 1 split fits it): it opens the device for the SM count, so it
// names the split count run() will use with that workspace (it said 1 while the count was unknown).
TEST_F(GpuDispatch, SelectBeforeAnyCallKnowsTheSmCount) {
  Attention att(spec_, options());
  const Problem p{KernelKind::decode, 4, 1, 4000};
  const size_t workspace = att.workspace_needed(p);  // no device needed
  const int splits = att.select(p, workspace).num_splits;
  EXPECT_GT(splits, 1) << "the heuristic splits 4 requests x 2 kv heads over " << test_gpu()->sm_count() << " SMs";
  att.reserve(p);
  EXPECT_EQ(att.select(p).num_splits, splits);
}

TEST_F(GpuDispatch, TunedRecordIsUsed) {
  const TunedChoice tuned = put_tuned("b4.q1.k4096");
  Attention att(spec_, options());
  att.reserve({KernelKind::decode, 4, 1, 4096});
  const Selection s = att.select({KernelKind::decode, 4, 1, 4000});
  EXPECT_EQ(s.origin, ChoiceOrigin::tuned);
  EXPECT_EQ(*s.config, tuned.config);
  EXPECT_EQ(s.num_splits, 3);
  DecodeCase c({1, 17, 300, 4000});
  c.refill(fresh_seed());
  att.run(c.args(), KernelKind::decode, stream_->handle());
  stream_->synchronize();
  expect_matches(c.o.download<std::uint16_t>(), c.ref, "decode tuned n32 k3");
  EXPECT_TRUE(att.select({KernelKind::decode, 4, 1, 4000}).kernel_loaded);
}

TEST_F(GpuDispatch, NoJitOnAnEmptyCacheFails) {
  AttentionOptions o = options();
  o.no_jit = true;
  Attention att(spec_, o);
  DecodeCase c({5, 9});
  c.refill(fresh_seed());
  try {
    att.run(c.args(), KernelKind::decode, stream_->handle());
    FAIL() << "expected JitDisabled";
  } catch (const JitDisabled& e) {
    EXPECT_NE(std::string(e.what()).find("attnc compile"), std::string::npos) << e.what();
  }
}

TEST_F(GpuDispatch, CudaGraphReplaysOnFreshInputs) {
  Attention att(spec_, options());
  att.reserve({KernelKind::decode, 4, 1, 2048});
  DecodeCase c({3, 100, 900, 2000});
  c.refill(fresh_seed());
  att.run(c.args(), KernelKind::decode, stream_->handle());  // warms the bucket: loading cannot be captured
  stream_->synchronize();

  const CUstream s = stream_->handle();
  ATTNC_CU(StreamBeginCapture, s, CU_STREAM_CAPTURE_MODE_GLOBAL);
  att.run(c.args(), KernelKind::decode, s);
  CUgraph graph = nullptr;
  ATTNC_CU(StreamEndCapture, s, &graph);
  CUgraphExec exec = nullptr;
  ATTNC_CU(GraphInstantiateWithFlags, &exec, graph, 0);
  for (int replay = 0; replay < 3; ++replay) {
    c.refill(fresh_seed() + replay);  // same buffers, new values
    ATTNC_CU(GraphLaunch, exec, s);
    stream_->synchronize();
    expect_matches(c.o.download<std::uint16_t>(), c.ref, ("graph replay " + std::to_string(replay)).c_str());
  }
  ATTNC_CU(GraphExecDestroy, exec);
  ATTNC_CU(GraphDestroy, graph);

  // A bucket first seen while capturing is refused (loading a module is not capturable).
  DecodeCase cold({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17});
  cold.refill(fresh_seed());
  ATTNC_CU(StreamBeginCapture, s, CU_STREAM_CAPTURE_MODE_GLOBAL);
  AttentionArgs cold_args = cold.args();
  EXPECT_THROW(att.run(cold_args, KernelKind::prefill_paged, s), std::exception);
  CUgraph empty = nullptr;
  Driver::get().api().StreamEndCapture(s, &empty);
  if (empty) Driver::get().api().GraphDestroy(empty);
}

TEST_F(GpuDispatch, BackgroundCompileSwitchesToTheTunedKernel) {
  const TunedChoice tuned = put_tuned("b2.q1.k1024");
  AttentionOptions o = options();
  o.background_compile = true;
  Attention att(spec_, o);
  att.reserve({KernelKind::decode, 2, 1, 1024});
  const Problem p{KernelKind::decode, 2, 1, 1000};
  EXPECT_EQ(att.select(p).origin, ChoiceOrigin::fallback);
  DecodeCase c({700, 1000});
  c.refill(fresh_seed());
  att.run(c.args(), KernelKind::decode, stream_->handle());  // the heuristic kernel serves
  stream_->synchronize();
  expect_matches(c.o.download<std::uint16_t>(), c.ref, "background: fallback");
  att.wait_background();
  const Selection s = att.select(p);
  EXPECT_EQ(s.origin, ChoiceOrigin::tuned) << att.warnings();
  EXPECT_EQ(*s.config, tuned.config);
  EXPECT_TRUE(s.kernel_loaded);
  c.refill(fresh_seed() + 1);
  att.run(c.args(), KernelKind::decode, stream_->handle());
  stream_->synchronize();
  expect_matches(c.o.download<std::uint16_t>(), c.ref, "background: tuned");
}

}  // namespace
}  // namespace attnc
