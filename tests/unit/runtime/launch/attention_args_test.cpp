// prepare_attention checks every argument of an attention call before any launch and names what
// is wrong; good arguments give the strides and scalars the kernel expects.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <limits>
#include <vector>

#include "runtime/launch/attention_args.h"
#include "runtime/launch/kv_cache_layout.h"

namespace attnc {
namespace {

// The mma.sync families: their argument checks need no driver (prefill_sm90's tensor maps do).
KernelPlan plan_for(const Spec& s, KernelKind kind = KernelKind::prefill) {
  const std::string json = kind == KernelKind::decode ? "" : R"({"family":"prefill_sm80"})";
  return plan_kernel(s, kind, config_for(s, kind, "sm_90a", json), "sm_90a");
}

Spec llama(LseLayout lse = LseLayout::none, float softcap = 0) {
  Spec s;
  s.num_q_heads = 32;
  s.num_kv_heads = 8;
  s.lse.layout = lse;
  s.softcap = softcap;
  return s;
}

// Fake but aligned device addresses: only checked, never dereferenced.
AttentionArgs good_args() {
  AttentionArgs a;
  a.q = reinterpret_cast<const void*>(0x10000);
  a.k = reinterpret_cast<const void*>(0x20000);
  a.v = reinterpret_cast<const void*>(0x30000);
  a.o = reinterpret_cast<void*>(0x40000);
  a.cu_seqlens_q = reinterpret_cast<const int*>(0x50000);
  a.cu_seqlens_k = reinterpret_cast<const int*>(0x60000);
  a.batch = 2;
  a.max_seqlen_q = 300;
  a.total_q = 400;
  a.num_splits = 1;  // decided: no split
  return a;
}

void expect_bad(const KernelPlan& plan, const AttentionArgs& a, const std::string& what) {
  try {
    prepare_attention(plan, a);
    ADD_FAILURE() << "accepted; expected an error containing: " << what;
  } catch (const BadCall& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(AttentionArgs, GoodCallGivesContiguousStridesAndBase2Scale) {
  const KernelPlan plan = plan_for(llama());
  const AttentionParams p = prepare_attention(plan, good_args()).params;
  EXPECT_EQ(p.q_row_stride, 32 * 128);
  EXPECT_EQ(p.k_row_stride, 8 * 128);
  EXPECT_EQ(p.o_head_stride, 128);
  EXPECT_FLOAT_EQ(p.scale_log2, 1.4426950408889634f / std::sqrt(128.f));
  const GridDims g = prepare_attention(plan, good_args()).grid;
  EXPECT_EQ(g.x, 3u);  // ceil(300 / 128)
  EXPECT_EQ(g.y, 32u);
  EXPECT_EQ(g.z, 2u);
}

// prefill_sm90 (the sm_90a default for prefill) reads K/V through TMA tensor maps, whose K and V
// extents are the rows of k and v: a call that says neither total_k nor host cu_seqlens_k is
// refused before the driver is asked for anything.
TEST(AttentionArgs, PrefillSm90NeedsTotalK) {
  const Spec s = llama();
  const KernelPlan plan = plan_kernel(s, KernelKind::prefill, default_config(s, KernelKind::prefill, "sm_90a"), "sm_90a");
  ASSERT_EQ(plan.family, "prefill_sm90");
  EXPECT_EQ(plan.threads, 384);  // a producer warpgroup and two consumers
  expect_bad(plan, good_args(), "prefill_sm90 reads K and V through TMA and needs total_k");
}

TEST(AttentionArgs, LseStridesFollowTheLayout) {
  AttentionArgs a = good_args();
  a.lse = reinterpret_cast<float*>(0x70000);
  const AttentionParams hm = prepare_attention(plan_for(llama(LseLayout::head_major)), a).params;
  EXPECT_EQ(hm.lse_row_stride, 1);
  EXPECT_EQ(hm.lse_head_stride, 400);
  const AttentionParams tm = prepare_attention(plan_for(llama(LseLayout::token_major)), a).params;
  EXPECT_EQ(tm.lse_row_stride, 32);
  EXPECT_EQ(tm.lse_head_stride, 1);
}

TEST(AttentionArgs, BadCallsNameTheProblem) {
  const KernelPlan plan = plan_for(llama());
  AttentionArgs a = good_args();
  a.batch = 0;
  expect_bad(plan, a, "batch must be >= 1, got 0");
  a = good_args();
  a.q = nullptr;
  expect_bad(plan, a, "q is null");
  a = good_args();
  a.k = reinterpret_cast<const void*>(0x20008);
  expect_bad(plan, a, "k must be 16-byte aligned");
  a = good_args();
  a.v_row_stride = 1028;
  expect_bad(plan, a, "v strides must be multiples of 8 elements (16 bytes), got 1028");
  a = good_args();
  a.cu_seqlens_k = nullptr;
  expect_bad(plan, a, "cu_seqlens_k is required with contiguous K/V");
  a = good_args();
  a.lse = reinterpret_cast<float*>(0x70000);
  expect_bad(plan, a, "lse given but the spec has lse.layout none");
  expect_bad(plan_for(llama(LseLayout::head_major)), good_args(), "the spec asks for LSE output but lse is null");
  a = good_args();
  a.softcap = 30;
  expect_bad(plan, a, "softcap given but the kernel was compiled without it");
  a = good_args();
  a.softcap = 0;
  expect_bad(plan_for(llama(LseLayout::none, 50)), a, "softcap must be > 0: the kernel was compiled with softcap");
}

// --- Every other rejection, one expectation each. -------------------------------------------

Spec with_mask(MaskSpec m) {
  Spec s = llama();
  s.mask = m;
  return s;
}

// A paged call: 3 requests over a vLLM-layout cache of 100 pages of 16, block table + seqused_k,
// with host mirrors that pass every content check.
struct PagedCall {
  std::vector<int> table = {5, 6, 7, 0, 1, 2, 3, 4, 99, 98, 97, 96};  // [3, 4]
  std::vector<int> seqused = {40, 64, 1};
  std::vector<int> cu_k = {0, 40, 104, 105};
  std::vector<int> cu_q = {0, 1, 2, 3};
  std::vector<int> indptr = {2, 5, 9, 10};  // FlashInfer form, not starting at 0
  std::vector<int> indices = {-1, -1, 5, 6, 7, 0, 1, 2, 3, 99};
  std::vector<int> last = {8, 16, 1};
  AttentionHostMetadata host;
  AttentionArgs a;

  PagedCall() {
    a = good_args();
    a.cu_seqlens_k = nullptr;
    a.max_seqlen_q = 1;
    a.total_q = 3;
    a.batch = 3;
    bind_kv_cache(a, kv_cache_strides(KvCacheLayout::vllm, 100, 16, 8, 128, 128), reinterpret_cast<const void*>(0x100000));
    a.block_table = reinterpret_cast<const int*>(0x80000);
    a.block_table_stride = 4;
    a.max_blocks_per_seq = 4;
    a.seqused_k = reinterpret_cast<const int*>(0x90000);
    host.cu_seqlens_q = cu_q.data();
    host.block_table = table.data();
    host.seqused_k = seqused.data();
    a.host = &host;
  }
  // The call, its host mirrors pointing at this object's tables (a copy keeps pointing at its
  // own); a mirror a test set to null stays null.
  const AttentionArgs& args() {
    auto rewire = [](const int*& p, const std::vector<int>& v) { if (p) p = v.data(); };
    rewire(host.cu_seqlens_q, cu_q);
    rewire(host.cu_seqlens_k, cu_k);
    rewire(host.seqused_k, seqused);
    rewire(host.block_table, table);
    rewire(host.kv_indptr, indptr);
    rewire(host.kv_indices, indices);
    rewire(host.kv_last_page_len, last);
    host.num_kv_indices = int(indices.size());
    if (a.host) a.host = &host;
    return a;
  }
  // Switch to the FlashInfer form.
  void flashinfer() {
    a.block_table = nullptr;
    a.seqused_k = nullptr;
    a.block_table_stride = 0;
    a.max_blocks_per_seq = 0;
    a.kv_indptr = reinterpret_cast<const int*>(0xa0000);
    a.kv_indices = reinterpret_cast<const int*>(0xb0000);
    a.kv_last_page_len = reinterpret_cast<const int*>(0xc0000);
    host.block_table = nullptr;
    host.seqused_k = nullptr;
    host.kv_indptr = indptr.data();
    host.kv_indices = indices.data();
    host.num_kv_indices = int(indices.size());
    host.kv_last_page_len = last.data();
  }
  // Switch to the fork's form: block table + cu_seqlens_k.
  void fork() {
    a.seqused_k = nullptr;
    a.cu_seqlens_k = reinterpret_cast<const int*>(0x60000);
    host.seqused_k = nullptr;
    host.cu_seqlens_k = cu_k.data();
  }
};

const KernelPlan& paged_plan() {
  static const KernelPlan p = plan_for(llama(), KernelKind::prefill_paged);
  return p;
}
const KernelPlan& decode_plan() {
  static const KernelPlan p = plan_for(llama(), KernelKind::decode);
  return p;
}

TEST(AttentionArgs, GoodPagedCallsInEveryForm) {
  PagedCall c;
  EXPECT_NO_THROW(prepare_attention(paged_plan(), c.args()));
  const AttentionParams p = prepare_attention(decode_plan(), c.args()).params;
  EXPECT_EQ(p.k_block_stride, 16 * 8 * 128);
  EXPECT_EQ(p.block_table_stride, 4);
  c.fork();
  EXPECT_NO_THROW(prepare_attention(paged_plan(), c.args()));
  PagedCall f;
  f.flashinfer();
  EXPECT_NO_THROW(prepare_attention(decode_plan(), f.args()));
}

TEST(AttentionArgs, RejectsBadShapesStridesAndAlignment) {
  const KernelPlan plan = plan_for(llama());
  AttentionArgs a = good_args();
  a.max_seqlen_q = -1;
  expect_bad(plan, a, "max_seqlen_q must be >= 0");
  a = good_args();
  a.total_q = -1;
  expect_bad(plan, a, "total_q must be >= 0");
  a = good_args();
  a.o = nullptr;
  expect_bad(plan, a, "o is null");
  a = good_args();
  a.o_head_stride = -128;
  expect_bad(plan, a, "o strides must be positive, got -128");
  a = good_args();
  a.q_row_stride = 4100;
  expect_bad(plan, a, "q strides must be multiples of 8 elements (16 bytes), got 4100");
  a = good_args();
  a.o = reinterpret_cast<void*>(0x40004);
  expect_bad(plan, a, "o must be 16-byte aligned");
  a = good_args();
  a.lse = reinterpret_cast<float*>(0x70002);
  expect_bad(plan_for(llama(LseLayout::head_major)), a, "lse must be 4-byte aligned");
  PagedCall c;
  c.a.k_block_stride = 0;
  expect_bad(paged_plan(), c.args(), "k strides must be positive, got 0");
  c = PagedCall();
  c.a.v_head_stride = 20;
  expect_bad(paged_plan(), c.args(), "v strides must be multiples of 8 elements (16 bytes), got 20");
}

TEST(AttentionArgs, RejectsTensorsOfAnotherDtypeOrShape) {
  const KernelPlan plan = plan_for(llama());  // bf16, 32 q heads, 8 kv heads, head dim 128
  AttentionArgs a = good_args();
  a.dtype = DType::bf16;
  a.num_q_heads = 32;
  a.num_kv_heads = 8;
  a.head_dim = a.head_dim_v = 128;
  EXPECT_NO_THROW(prepare_attention(plan, a));
  AttentionArgs b = a;
  b.dtype = DType::fp16;
  expect_bad(plan, b, "q/k/v/o are fp16 but the kernel was compiled for bf16");
  b = a;
  b.num_q_heads = 16;
  expect_bad(plan, b, "num_q_heads is 16 but the kernel was compiled for 32");
  b = a;
  b.num_kv_heads = 32;
  expect_bad(plan, b, "num_kv_heads is 32 but the kernel was compiled for 8");
  b = a;
  b.head_dim = 64;
  expect_bad(plan, b, "head_dim is 64 but the kernel was compiled for 128");
  b = a;
  b.head_dim_v = 96;
  expect_bad(plan, b, "head_dim_v is 96 but the kernel was compiled for 128");
}

TEST(AttentionArgs, RejectsMissingOrInconsistentQueryLengths) {
  AttentionArgs a = good_args();
  a.cu_seqlens_q = nullptr;
  expect_bad(plan_for(llama()), a, "cu_seqlens_q is required (only decode takes one token per request)");
  PagedCall c;
  c.a.cu_seqlens_q = nullptr;
  expect_bad(paged_plan(), c.args(), "cu_seqlens_q is required");
  c.host.cu_seqlens_q = nullptr;
  c.a.max_seqlen_q = 2;
  expect_bad(decode_plan(), c.args(), "without cu_seqlens_q every request has one token: max_seqlen_q <= 1");
  c.a.max_seqlen_q = 1;
  c.a.total_q = 2;
  expect_bad(decode_plan(), c.args(), "total_q 2 must be >= batch 3");

  c = PagedCall();
  c.cu_q = {1, 1, 2, 3};
  expect_bad(decode_plan(), c.args(), "cu_seqlens_q[0] must be 0, got 1");
  c.cu_q = {0, 2, 1, 3};
  c.a.max_seqlen_q = 2;
  expect_bad(decode_plan(), c.args(), "cu_seqlens_q must be non-decreasing (request 1)");
  c.cu_q = {0, 1, 3, 4};
  expect_bad(decode_plan(), c.args(), "cu_seqlens_q ends at 4, past total_q 3");
  c.cu_q = {0, 1, 4, 4};
  c.a.total_q = 4;
  expect_bad(decode_plan(), c.args(), "request 1 has 3 query tokens, over max_seqlen_q 2");

  AttentionHostMetadata h;
  const std::vector<int> cu_k = {0, 10, 5};
  h.cu_seqlens_k = cu_k.data();
  a = good_args();
  a.host = &h;
  expect_bad(plan_for(llama()), a, "cu_seqlens_k must be non-decreasing (request 1)");
}

TEST(AttentionArgs, DecodeWithoutCuSeqlensQCountsOneTokenPerRequest) {
  // 128 q heads on one kv head: 128 packed rows need eight 16-row blocks (decode_bw, the sm_90
  // default) even if the caller left max_seqlen_q at 0.
  Spec s = llama();
  s.num_q_heads = 128;
  s.num_kv_heads = 1;
  PagedCall c;
  c.a.cu_seqlens_q = nullptr;
  c.host.cu_seqlens_q = nullptr;
  c.a.max_seqlen_q = 0;
  bind_kv_cache(c.a, kv_cache_strides(KvCacheLayout::vllm, 100, 16, 1, 128, 128),
                reinterpret_cast<const void*>(0x100000));
  EXPECT_EQ(prepare_attention(plan_for(s, KernelKind::decode), c.args()).grid.x, 8u);
}

TEST(AttentionArgs, RejectsPageTablesOnContiguousKernels) {
  const KernelPlan plan = plan_for(llama());
  AttentionArgs a = good_args();
  a.block_table = reinterpret_cast<const int*>(0x80000);
  expect_bad(plan, a, "a page table was given but this kernel reads contiguous K/V");
  a = good_args();
  a.kv_indices = reinterpret_cast<const int*>(0x80000);
  expect_bad(plan, a, "a page table was given but this kernel reads contiguous K/V");
}

TEST(AttentionArgs, RejectsIncompleteOrMixedPageTables) {
  PagedCall c;
  c.a.page_size = 24;
  expect_bad(paged_plan(), c.args(), "page_size must be a positive multiple of 16, got 24");
  c.a.page_size = 0;
  expect_bad(paged_plan(), c.args(), "page_size must be a positive multiple of 16, got 0");
  c = PagedCall();
  c.a.num_blocks = 0;
  expect_bad(paged_plan(), c.args(), "num_blocks (pages in the cache) must be >= 1, got 0");
  c = PagedCall();
  c.a.block_table = nullptr;
  expect_bad(paged_plan(), c.args(), "a paged call needs block_table (with seqused_k or cu_seqlens_k) or kv_indptr");
  c = PagedCall();
  c.a.seqused_k = nullptr;
  expect_bad(paged_plan(), c.args(), "block_table needs KV lengths: seqused_k or cu_seqlens_k");
  c = PagedCall();
  c.a.max_blocks_per_seq = 0;
  expect_bad(paged_plan(), c.args(), "max_blocks_per_seq (usable columns of block_table) must be >= 1");
  c = PagedCall();
  c.a.block_table_stride = 3;
  expect_bad(paged_plan(), c.args(), "block_table_stride 3 is smaller than max_blocks_per_seq 4");
  c = PagedCall();
  c.a.block_table = reinterpret_cast<const int*>(0x80002);
  expect_bad(paged_plan(), c.args(), "block_table must be 4-byte aligned");

  PagedCall f;
  f.flashinfer();
  f.a.kv_last_page_len = nullptr;
  expect_bad(decode_plan(), f.args(), "the FlashInfer page table needs kv_indptr, kv_indices and kv_last_page_len together");
  f = PagedCall();
  f.flashinfer();
  f.a.block_table = reinterpret_cast<const int*>(0x80000);
  expect_bad(decode_plan(), f.args(), "give either kv_indptr/kv_indices/kv_last_page_len or block_table, not both");
  f = PagedCall();
  f.flashinfer();
  f.a.seqused_k = reinterpret_cast<const int*>(0x90000);
  expect_bad(decode_plan(), f.args(), "not both");
}

TEST(AttentionArgs, RejectsBlockTableContentsPastTheCacheOrCapacity) {
  PagedCall c;
  c.table[4 + 2] = 100;  // request 1, page 2 (of 4 it uses)
  expect_bad(paged_plan(), c.args(), "block_table[1][2] = 100 points past the cache of 100 pages");
  c = PagedCall();
  c.table[0] = -1;
  expect_bad(paged_plan(), c.args(), "block_table[0][0] = -1 points past the cache of 100 pages");
  c = PagedCall();
  c.table[2 * 4 + 1] = 100;  // past request 2's one page: never read, so fine
  EXPECT_NO_THROW(prepare_attention(paged_plan(), c.args()));
  c = PagedCall();
  c.seqused[1] = 65;
  expect_bad(paged_plan(), c.args(), "request 1 has 65 KV tokens, over the block table's capacity 64 (4 pages of 16)");
  c = PagedCall();
  c.seqused[2] = -1;
  expect_bad(paged_plan(), c.args(), "request 2 has a negative KV length -1");
  c = PagedCall();
  c.fork();
  c.cu_k = {0, 40, 105, 106};
  expect_bad(paged_plan(), c.args(), "request 1 has 65 KV tokens, over the block table's capacity 64");
  c = PagedCall();
  c.host.block_table = nullptr;
  expect_bad(paged_plan(), c.args(), "host metadata for a block-table call needs block_table");
  c = PagedCall();
  c.host.seqused_k = nullptr;
  expect_bad(paged_plan(), c.args(), "host metadata needs seqused_k");
  c = PagedCall();
  c.fork();
  c.host.cu_seqlens_k = nullptr;
  expect_bad(paged_plan(), c.args(), "host metadata needs cu_seqlens_k");
}

TEST(AttentionArgs, RejectsBadFlashInferTables) {
  PagedCall f;
  f.flashinfer();
  f.indptr = {2, 5, 9, 11};
  expect_bad(decode_plan(), f.args(), "kv_indptr[3] = 11 points past kv_indices (10 entries)");
  f.indptr = {2, 5, 4, 10};
  expect_bad(decode_plan(), f.args(), "kv_indptr must be non-negative and non-decreasing (request 1)");
  f.indptr = {-1, 5, 9, 10};
  expect_bad(decode_plan(), f.args(), "kv_indptr must be non-negative and non-decreasing (request 0)");
  f = PagedCall();
  f.flashinfer();
  f.last = {8, 0, 1};
  expect_bad(decode_plan(), f.args(), "kv_last_page_len[1] = 0; allowed: 1..16");
  f.last = {8, 17, 1};
  expect_bad(decode_plan(), f.args(), "kv_last_page_len[1] = 17; allowed: 1..16");
  f = PagedCall();
  f.flashinfer();
  f.indices[9] = 100;
  expect_bad(decode_plan(), f.args(), "kv_indices[9] = 100 (request 2) points past the cache of 100 pages");
  f = PagedCall();
  f.flashinfer();
  f.indices[0] = 100;  // before indptr[0]: no request reads it
  EXPECT_NO_THROW(prepare_attention(decode_plan(), f.args()));
  f.host.kv_indices = nullptr;
  expect_bad(decode_plan(), f.args(), "host metadata for the FlashInfer form needs kv_indptr, kv_indices and kv_last_page_len");
}

TEST(AttentionArgs, RejectsBadScalarsAndWindows) {
  const KernelPlan plan = plan_for(llama());
  AttentionArgs a = good_args();
  a.softmax_scale = -0.1f;
  expect_bad(plan, a, "softmax_scale must be finite and > 0 (or 0 for 1/sqrt(head_dim))");
  a.softmax_scale = std::numeric_limits<float>::quiet_NaN();
  expect_bad(plan, a, "softmax_scale must be finite and > 0");
  a.softmax_scale = std::numeric_limits<float>::infinity();
  expect_bad(plan, a, "softmax_scale must be finite and > 0");

  a = good_args();
  a.window_left = -3;
  expect_bad(plan, a, "window sizes must be >= -1 (-1 unbounded; -2 takes the spec's), got (-3, -2)");
  a = good_args();
  a.window_left = 255;
  a.window_right = 0;
  expect_bad(plan, a, "window (255, 0) given but the kernel was compiled causal; a window needs a sliding_window spec");
  a.window_left = -1;
  EXPECT_NO_THROW(prepare_attention(plan, a)) << "(-1, 0) is causal";
  const KernelPlan nomask = plan_for(with_mask({MaskKind::none, -1, -1}));
  a.window_right = 0;
  expect_bad(nomask, a, "window (-1, 0) given but the kernel was compiled without a mask");
  const KernelPlan window = plan_for(with_mask({MaskKind::sliding_window, 127, 0}));
  a.window_left = 63;
  a.window_right = 63;
  const AttentionParams p = prepare_attention(window, a).params;
  EXPECT_EQ(p.window_left, 63);
  EXPECT_EQ(p.window_right, 63);
}

TEST(AttentionArgs, RejectsMissingOrExtraAlibiAndSinks) {
  Spec alibi = llama();
  alibi.alibi = Alibi::linear;
  AttentionArgs a = good_args();
  expect_bad(plan_for(alibi), a, "alibi_slopes [Hq] is required: the spec has alibi");
  a.alibi_slopes = reinterpret_cast<const float*>(0xd0000);
  expect_bad(plan_for(llama()), a, "alibi_slopes given but the spec has no alibi");
  a.alibi_batch_stride = 16;
  expect_bad(plan_for(alibi), a, "alibi_batch_stride must be 0 ([Hq] slopes) or >= Hq ([batch, Hq]), got 16");
  a.alibi_batch_stride = 32;
  EXPECT_NO_THROW(prepare_attention(plan_for(alibi), a));

  Spec sinks = llama();
  sinks.sinks = true;
  a = good_args();
  expect_bad(plan_for(sinks), a, "sinks [Hq] is required: the spec has sinks");
  a.sinks = reinterpret_cast<const float*>(0xe0000);
  expect_bad(plan_for(llama()), a, "sinks given but the spec has no sinks");
}

TEST(AttentionArgs, SeqlenKSumIsAHostSumOrZero) {
  PagedCall c;
  c.a.seqlen_k_sum = -5;  // a caller's mistake, not "unknown": the split choice would read it silently
  expect_bad(decode_plan(), c.args(), "seqlen_k_sum must be >= 0 (the KV lengths summed; 0: unknown), got -5");
  c.a.seqlen_k_sum = 0;
  EXPECT_NO_THROW(prepare_attention(decode_plan(), c.args()));
}

TEST(AttentionArgs, SplitKvNeedsASplitKernelAndAWorkspace) {
  PagedCall c;
  c.a.num_splits = -1;
  expect_bad(decode_plan(), c.args(), "num_splits must be in 1..128");
  c.a.num_splits = 0;  // undecided: prepare_attention takes a decided count
  expect_bad(decode_plan(), c.args(), "got 0");
  c.a.num_splits = 129;
  expect_bad(decode_plan(), c.args(), "got 129");
  c.a.num_splits = 2;
  expect_bad(paged_plan(), c.args(), "num_splits 2 needs a split-KV kernel (decode); this one takes 1");
  const size_t need = attention_workspace_bytes(decode_plan(), 3, 2);
  EXPECT_EQ(need, size_t(2) * 3 * 32 * (128 + 1) * 4);
  expect_bad(decode_plan(), c.args(), "num_splits 2 needs a workspace of " + std::to_string(need) + " bytes, got 0");
  c.a.workspace = reinterpret_cast<void*>(0xf0000);
  c.a.workspace_bytes = need - 1;
  expect_bad(decode_plan(), c.args(), "bytes, got " + std::to_string(need - 1));
  c.a.workspace_bytes = need;
  c.a.workspace = reinterpret_cast<void*>(0xf0008);
  expect_bad(decode_plan(), c.args(), "workspace must be 16-byte aligned");
  c.a.workspace = reinterpret_cast<void*>(0xf0000);
  const AttentionLaunch l = prepare_attention(decode_plan(), c.args());
  EXPECT_TRUE(l.combine);
  EXPECT_EQ(l.params.num_splits, 2);
  EXPECT_EQ(l.grid.z, 6u);
  EXPECT_EQ(l.params.lse_partial, reinterpret_cast<float*>(0xf0000) + 2 * 3 * 32 * 128);

  // The heuristic picks a split for a long context on a big GPU; that needs a workspace too.
  PagedCall h;
  h.a.num_splits = decide_num_splits(decode_plan(), {3, 1, 4096, 3, 132}, 0);
  const int splits = choose_num_splits(decode_plan(), 3, 1, 4096, 132);
  ASSERT_GT(splits, 1);
  EXPECT_EQ(h.a.num_splits, splits);
  expect_bad(decode_plan(), h.args(), "num_splits " + std::to_string(splits) + " needs a workspace");
}

TEST(AttentionArgs, NoCombineWithoutQueryRows) {
  PagedCall c;
  c.a.total_q = 0;
  c.a.host = nullptr;
  c.a.num_splits = 4;
  const AttentionLaunch l = prepare_attention(decode_plan(), c.args());
  EXPECT_FALSE(l.combine);
  EXPECT_EQ(l.params.num_splits, 1);
}

TEST(AttentionArgs, RejectsGridsPastTheLimits) {
  PagedCall c;
  c.a.host = nullptr;
  c.a.batch = 30000;
  c.a.total_q = 30000;
  c.a.num_splits = 3;
  c.a.workspace = reinterpret_cast<void*>(0xf0000);
  c.a.workspace_bytes = size_t(1) << 40;
  expect_bad(decode_plan(), c.args(), "batch * num_splits must be <= 65535, got 90000");

  Spec wide = llama();
  wide.num_q_heads = wide.num_kv_heads = 70000;
  AttentionArgs a = good_args();
  expect_bad(plan_for(wide), a, "the grid's y dimension (heads) must be <= 65535, got 70000");

  Spec group = llama();
  group.num_q_heads = 128;
  group.num_kv_heads = 1;
  c = PagedCall();
  c.a.host = nullptr;
  c.a.max_seqlen_q = INT_MAX;
  c.a.total_q = INT_MAX;
  expect_bad(plan_for(group, KernelKind::decode), c.args(), "row blocks, over the grid limit 2^31 - 1");
}

}  // namespace
}  // namespace attnc

namespace attnc {
namespace {

// mla_decode's own call rules, checked before its tensor map is encoded (so no driver is needed):
// V aliases k, page sizes are multiples of 64, q_pe only for it, q's width follows q_pe.
TEST(AttentionArgs, MlaDecodeChecksItsOwnRules) {
  Spec s;
  s.num_q_heads = 16;
  s.num_kv_heads = 16;
  s.mla = MlaSpec{true, 512, 64, 128, 128};
  s.head_dim = 192;
  s.head_dim_v = 128;
  s.kv_cache.page_size = 64;
  s.lse.layout = LseLayout::head_major;
  const KernelPlan plan = plan_kernel(s, KernelKind::decode, config_for(s, KernelKind::decode, "sm_90a", ""), "sm_90a");
  ASSERT_EQ(plan.family, "mla_decode");
  PagedCall c;
  c.a.lse = reinterpret_cast<float*>(0xa0000);
  bind_kv_cache(c.a, kv_cache_strides(KvCacheLayout::vllm, 100, 64, 1, 576, 512), reinterpret_cast<const void*>(0x100000));
  c.a.page_size = 64;
  expect_bad(plan, c.args(), "mla_decode reads V from the first 512 columns of k: v must be null or k");
  c.a.v = nullptr;
  c.a.page_size = 48;
  expect_bad(plan, c.args(), "page_size must be a multiple of 64, got 48");
  c.a.page_size = 64;
  c.a.q_pe = reinterpret_cast<const void*>(0xb0008);
  expect_bad(plan, c.args(), "q_pe must be 16-byte aligned");
  // Another kernel takes no q_pe.
  AttentionArgs other = good_args();
  other.q_pe = reinterpret_cast<const void*>(0xb0000);
  expect_bad(plan_for(llama()), other, "q_pe given but only mla_decode takes q_pe apart from q");

  // An fp8 latent cache has one scale for K and V: k_scale / k_descale only.
  s.kv_cache.dtype = KvDType::fp8_e4m3;
  const KernelPlan fp8 = plan_kernel(s, KernelKind::decode, config_for(s, KernelKind::decode, "sm_90a", ""), "sm_90a");
  ASSERT_EQ(fp8.family, "mla_decode");
  c.a.q_pe = nullptr;
  c.a.v_scale = reinterpret_cast<const float*>(0xc0000);
  expect_bad(fp8, c.args(), "v_scale/v_descale given but mla_decode reads K and V from one latent cache with one scale");
  c.a.v_scale = nullptr;
  c.a.v_descale = reinterpret_cast<const float*>(0xc0000);
  expect_bad(fp8, c.args(), "give k_scale and/or k_descale [batch, 1]");
}

}  // namespace
}  // namespace attnc
