// generator/plan: prefill_sm90's v_prewiden (Config::v_prewiden: int8_qkv's V, contiguous or paged,
// widened once per call into the workspace by `<entry>_widen_v`) — its name, JSON, traits and second entry, shared
// memory without the raw V ring, the workspace it needs, the configs VWiden asks for, and where it is
// refused.
#include <gtest/gtest.h>

#include "generator/emit/emit.h"
#include "generator/plan/plan_attention.h"
#include "generator/plan/plan_prefill_sm90.h"
#include "tests/unit/generator/plan_refusal_util.h"

namespace attnc {
namespace {

Spec int8_llama(QuantMode quant) {
  Spec s;
  s.dtype = DType::fp16;
  s.head_dim = s.head_dim_v = 128;
  s.num_q_heads = 32;
  s.num_kv_heads = 8;
  s.mask = {MaskKind::causal, -1, -1};
  s.quant = quant;
  s.kv_cache.dtype = KvDType::int8;
  s.kernels.prefill = true;
  return s;
}

TEST(PlanVPrewiden, ConfigsByVWiden) {
  const Spec s = int8_llama(QuantMode::int8_qkv);
  const Config producer = default_prefill_sm90_config(s, KernelKind::prefill, VWiden::producer);
  const Config once = default_prefill_sm90_config(s, KernelKind::prefill, VWiden::once_per_call);
  EXPECT_FALSE(producer.v_prewiden);
  EXPECT_EQ(producer.short_name(), "m192n64w16s2");  // each widened V tile serves 192 rows
  EXPECT_TRUE(once.v_prewiden);
  EXPECT_EQ(once.short_name(), "m128n128w12s2vw");  // int8_qk's tiles
  EXPECT_EQ(default_prefill_sm90_config(s, KernelKind::prefill), kVPrewidenIsDefault ? once : producer);
  // Paged: int8_qk's paged tiles, the default by kPagedVPrewidenIsDefault; never for int8_qk.
  const Config paged_once = default_prefill_sm90_config(s, KernelKind::prefill_paged, VWiden::once_per_call);
  const Config paged_producer = default_prefill_sm90_config(s, KernelKind::prefill_paged, VWiden::producer);
  EXPECT_EQ(paged_once.short_name(), "m128n128w12s2vw");
  EXPECT_EQ(paged_producer.short_name(), "m128n128w12s2");
  EXPECT_EQ(default_prefill_sm90_config(s, KernelKind::prefill_paged),
            kPagedVPrewidenIsDefault ? paged_once : paged_producer);
  EXPECT_FALSE(default_prefill_sm90_config(int8_llama(QuantMode::int8_qk), KernelKind::prefill, VWiden::once_per_call)
                   .v_prewiden);
}

TEST(PlanVPrewiden, NameJsonTraitsEntryAndSharedMemory) {
  const Spec s = int8_llama(QuantMode::int8_qkv);
  const Config c = default_prefill_sm90_config(s, KernelKind::prefill, VWiden::once_per_call);
  EXPECT_NE(c.to_json().find("\"v_prewiden\":true"), std::string::npos);
  EXPECT_EQ(Config::from_json(c.to_json()), c);
  Config off = c;
  off.v_prewiden = false;
  EXPECT_EQ(off.to_json().find("v_prewiden"), std::string::npos);
  const KernelPlan plan = plan_kernel(s, KernelKind::prefill, c, "sm_90a");
  // int8_qk's shared memory at the same tiles: no raw V ring and no raw barriers.
  const Spec qk = int8_llama(QuantMode::int8_qk);
  EXPECT_EQ(plan.smem_bytes, plan_kernel(qk, KernelKind::prefill, off, "sm_90a").smem_bytes);
  EXPECT_EQ(plan.smem_bytes + 2 * 128 * 128 + 8 * 4, plan_kernel(s, KernelKind::prefill, off, "sm_90a").smem_bytes);
  const KernelSource src = emit_kernel(plan);
  EXPECT_NE(src.entry.find("_i8qkv_m128n128w12s2vw"), std::string::npos) << src.entry;
  EXPECT_NE(src.source.find("kVPrewiden = true"), std::string::npos);
  EXPECT_NE(src.source.find(src.entry + "_widen_v(const attnc::AttentionParams params)"), std::string::npos);
  const KernelSource plain = emit_kernel(plan_kernel(s, KernelKind::prefill, off, "sm_90a"));
  EXPECT_NE(plain.source.find("kVPrewiden = false"), std::string::npos);
  EXPECT_EQ(plain.source.find("_widen_v"), std::string::npos);
}

TEST(PlanVPrewiden, WorkspaceIsTheWidenedV) {
  Spec s = int8_llama(QuantMode::int8_qkv);
  s.head_dim_v = 64;
  s.num_kv_heads = 4;
  const KernelPlan plan =
      plan_kernel(s, KernelKind::prefill, default_prefill_sm90_config(s, KernelKind::prefill, VWiden::once_per_call),
                  "sm_90a");
  EXPECT_EQ(v_prewiden_workspace_bytes(plan, 1000), size_t(1000) * 4 * 64 * 2);
  EXPECT_EQ(v_prewiden_workspace_bytes(plan, 0), 0u);
  const KernelPlan producer =
      plan_kernel(s, KernelKind::prefill, default_prefill_sm90_config(s, KernelKind::prefill, VWiden::producer),
                  "sm_90a");
  EXPECT_EQ(v_prewiden_workspace_bytes(producer, 1000), 0u);
  EXPECT_EQ(v_prewiden_rows(plan, 3, 1000, 1234), 1234);  // contiguous: total_k
  EXPECT_EQ(v_prewiden_rows(plan, 3, 0, -1), -1);
}

// Paged: every request gets max_seqlen_k rows rounded up to whole key tiles (the pass zeroes a
// request's rows from its end to its last tile's end); unknown max_seqlen_k (0) cannot be served.
TEST(PlanVPrewiden, PagedWorkspaceIsARequestOfWholeTilesEach) {
  Spec s = int8_llama(QuantMode::int8_qkv);
  s.head_dim_v = 64;
  s.num_kv_heads = 4;
  const Config c = default_prefill_sm90_config(s, KernelKind::prefill_paged, VWiden::once_per_call);
  const KernelPlan plan = plan_kernel(s, KernelKind::prefill_paged, c, "sm_90a");
  ASSERT_EQ(c.block_n, 128);
  EXPECT_EQ(v_prewiden_request_rows(plan, 1000), 1024);
  EXPECT_EQ(v_prewiden_request_rows(plan, 1024), 1024);
  EXPECT_EQ(v_prewiden_rows(plan, 3, 1000, 1234), 3 * 1024);  // total_k is not what a paged call bounds
  EXPECT_EQ(v_prewiden_rows(plan, 3, 0, 1234), -1);
  EXPECT_EQ(v_prewiden_workspace_bytes(plan, v_prewiden_rows(plan, 3, 1000, -1)), size_t(3) * 1024 * 4 * 64 * 2);
  // d256: 48-key paged tiles.
  s.head_dim = s.head_dim_v = 256;
  const KernelPlan d256 = plan_kernel(
      s, KernelKind::prefill_paged, default_prefill_sm90_config(s, KernelKind::prefill_paged, VWiden::once_per_call),
      "sm_90a");
  EXPECT_EQ(d256.config.block_n, 48);
  EXPECT_EQ(v_prewiden_request_rows(d256, 100), 144);
}

using test::expect_refused;

TEST(PlanVPrewiden, RefusedWhereItCannotRun) {
  expect_refused(int8_llama(QuantMode::int8_qk), KernelKind::prefill, R"({"v_prewiden": true})",
                 "v_prewiden widens int8 V; quant int8_qk has no int8 V (v_prewiden: false)");
  expect_refused(int8_llama(QuantMode::int8_qk), KernelKind::prefill_paged, R"({"v_prewiden": true})",
                 "v_prewiden widens int8 V; quant int8_qk has no int8 V");
  expect_refused(int8_llama(QuantMode::int8_qkv), KernelKind::prefill,
                 R"({"family": "prefill_sm80", "v_prewiden": true})", "v_prewiden is prefill_sm90's");
}

}  // namespace
}  // namespace attnc
