// make_prefill_params checks every argument of a prefill call before any launch and names what
// is wrong; good arguments give the strides and scalars the kernel expects.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/prefill_args.h"

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
PrefillArgs good_args() {
  PrefillArgs a;
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

void expect_bad(const KernelPlan& plan, const PrefillArgs& a, const std::string& what) {
  try {
    make_prefill_params(plan, a);
    ADD_FAILURE() << "accepted; expected an error containing: " << what;
  } catch (const BadCall& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(PrefillArgs, GoodCallGivesContiguousStridesAndBase2Scale) {
  const KernelPlan plan = plan_for(llama());
  const PrefillParams p = make_prefill_params(plan, good_args());
  EXPECT_EQ(p.q_row_stride, 32 * 128);
  EXPECT_EQ(p.k_row_stride, 8 * 128);
  EXPECT_EQ(p.o_head_stride, 128);
  EXPECT_FLOAT_EQ(p.scale_log2, 1.4426950408889634f / std::sqrt(128.f));
  const GridDims g = prefill_grid(plan, good_args());
  EXPECT_EQ(g.x, 3u);  // ceil(300 / 128)
  EXPECT_EQ(g.y, 32u);
  EXPECT_EQ(g.z, 2u);
}

TEST(PrefillArgs, LseStridesFollowTheLayout) {
  PrefillArgs a = good_args();
  a.lse = reinterpret_cast<float*>(0x70000);
  const PrefillParams hm = make_prefill_params(plan_for(llama(LseLayout::head_major)), a);
  EXPECT_EQ(hm.lse_row_stride, 1);
  EXPECT_EQ(hm.lse_head_stride, 400);
  const PrefillParams tm = make_prefill_params(plan_for(llama(LseLayout::token_major)), a);
  EXPECT_EQ(tm.lse_row_stride, 32);
  EXPECT_EQ(tm.lse_head_stride, 1);
}

TEST(PrefillArgs, BadCallsNameTheProblem) {
  const KernelPlan plan = plan_for(llama());
  PrefillArgs a = good_args();
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
  expect_bad(plan, a, "v strides must be multiples of 8 elements (16 bytes); got row 1028");
  a = good_args();
  a.cu_seqlens_k = nullptr;
  expect_bad(plan, a, "cu_seqlens_q and cu_seqlens_k are required");
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
