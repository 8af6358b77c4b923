// prepare_attention checks every argument of an attention call before any launch and names what
// is wrong; good arguments give the strides and scalars the kernel expects.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/attention_args.h"

namespace attnc {
namespace {

KernelPlan plan_for(const Spec& s) {
  return plan_kernel(s, KernelKind::prefill, default_config(s, KernelKind::prefill, "sm_90a"), "sm_90a");
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

}  // namespace
}  // namespace attnc
