// generator/plan: the decode_bw family (templates/attnc/families/decode_bw.cuh) — where it is the
// default, its shared memory and config rules, and its emitted source.
#include <gtest/gtest.h>

#include "generator/emit/emit.h"
#include "generator/generate.h"
#include "generator/plan/plan_attention.h"

namespace attnc {
namespace {

Spec llama() {
  Spec s;
  s.num_q_heads = 32;
  s.num_kv_heads = 8;
  s.kernels.decode = true;
  return s;
}

TEST(PlanDecodeBw, IsTheDecodeDefaultOnSm90AndDecodeSplitElsewhere) {
  for (const char* arch : {"sm_90", "sm_90a"}) {
    const Config c = default_config(llama(), KernelKind::decode, arch);
    EXPECT_EQ(c.family, "decode_bw") << arch;
    EXPECT_EQ(c.short_name(), "m16n16w4s3") << arch;
  }
  for (const char* arch : {"sm_80", "sm_86", "sm_89"})
    EXPECT_EQ(default_config(llama(), KernelKind::decode, arch).family, "decode_split") << arch;
  EXPECT_EQ(default_config(llama(), KernelKind::prefill, "sm_90a").family, "prefill_sm90");
  EXPECT_EQ(default_config(llama(), KernelKind::prefill_paged, "sm_90a").family, "prefill_sm90");
}

TEST(PlanDecodeBw, SharedMemoryIsQThenEachWarpsStagesOrTheMergeAndStats) {
  const Spec s = llama();
  const KernelPlan p = plan_kernel(s, KernelKind::decode, default_config(s, KernelKind::decode, "sm_90a"), "sm_90a");
  // Q 16 x 128, 4 warps x 3 stages x 16 keys x (128 + 128), all 2 bytes; then 4 x 16 x 2 floats.
  EXPECT_EQ(p.smem_bytes, 2 * (16 * 128 + 4 * 3 * 16 * 256) + 4 * 2 * 4 * 16);
  EXPECT_EQ(p.threads, 128);
  EXPECT_TRUE(p.pack_gqa && p.paged && p.split_kv);
  // The warps' merge (16 rows of Dv + 8 floats each) overlays the pipeline, which is always larger.
  Config one = p.config;
  one.warps = 1;
  one.stages = 2;
  EXPECT_EQ(plan_kernel(s, KernelKind::decode, one, "sm_90a").smem_bytes, 2 * (16 * 128 + 2 * 16 * 256) + 4 * 2 * 16);
}

TEST(PlanDecodeBw, RefusesConfigsItCannotRun) {
  const Spec s = llama();
  Config c = default_config(s, KernelKind::decode, "sm_90a");
  auto refusal = [&](Config bad) {
    try {
      plan_kernel(s, KernelKind::decode, bad, "sm_90a");
    } catch (const BadConfig& e) {
      return std::string(e.what());
    }
    return std::string("planned");
  };
  Config m64 = c;
  m64.block_m = 64;
  EXPECT_NE(refusal(m64).find("decode_bw blocks hold 16 rows"), std::string::npos) << refusal(m64);
  Config w16 = c;
  w16.warps = 16;
  EXPECT_NE(refusal(w16).find("warps 16; allowed: 1..8"), std::string::npos);
  Config n24 = c;
  n24.block_n = 24;
  EXPECT_NE(refusal(n24).find("block_n 24"), std::string::npos);
  Config big = c;
  big.warps = 8;
  big.stages = 8;
  big.block_n = 64;
  EXPECT_NE(refusal(big).find("bytes of shared memory"), std::string::npos);
  // decode_bw makes decode kernels only.
  Config prefill = c;
  EXPECT_THROW(plan_kernel(s, KernelKind::prefill, prefill, "sm_90a"), BadConfig);
}

TEST(PlanDecodeBw, DefaultShrinksStagesThenWarpsToFit) {
  Spec d192 = llama();
  d192.head_dim = d192.head_dim_v = 192;
  const Config c = default_family_config(d192, KernelKind::decode, "sm_90a", "decode_bw");
  EXPECT_EQ(c.short_name(), "m16n16w4s3");  // 150 KB of the 227 KB a block may take
  EXPECT_EQ(plan_kernel(d192, KernelKind::decode, c, "sm_90a").smem_bytes, 2 * (16 * 192 + 4 * 3 * 16 * 384) + 512);
  // sm_86 allows 99 KB a block: d128 drops to 2 stages, d192 to 2 stages of 2 warps.
  EXPECT_EQ(default_family_config(llama(), KernelKind::decode, "sm_86", "decode_bw").short_name(), "m16n16w4s2");
  EXPECT_EQ(default_family_config(d192, KernelKind::decode, "sm_86", "decode_bw").short_name(), "m16n16w2s2");
}

// Dv 256 (gemma-2) runs on decode_bw too: 4 warps of 16-key tiles, 3 stages fit one block an SM
// (2.6x decode_split's speed at d256 on the H200); int8 stays refused past 192 with its reason.
TEST(PlanDecodeBw, PlansDv256AndRefusesInt8Past192) {
  Spec d256 = llama();
  d256.head_dim = d256.head_dim_v = 256;
  const Config c = default_config(d256, KernelKind::decode, "sm_90a");
  EXPECT_EQ(c.family, "decode_bw");
  EXPECT_EQ(c.short_name(), "m16n16w4s3");
  EXPECT_EQ(plan_kernel(d256, KernelKind::decode, c, "sm_90a").smem_bytes, 2 * (16 * 256 + 4 * 3 * 16 * 512) + 512);
  Spec i8 = d256;
  i8.head_dim = 192;
  i8.quant = QuantMode::int8_qk;
  i8.kv_cache.dtype = KvDType::int8;
  try {
    plan_kernel(i8, KernelKind::decode, default_family_config(i8, KernelKind::decode, "sm_90a", "decode_bw"), "sm_90a");
    ADD_FAILURE() << "planned";
  } catch (const NotSupportedYet& e) {
    EXPECT_NE(std::string(e.what()).find("head dims 192/256"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("decode_split serves the others"), std::string::npos) << e.what();
  }
}

TEST(PlanDecodeBw, AConfigNamingAnotherFamilyStartsFromItsDefaults) {
  const Spec s = llama();
  const SpecKernel split = generate_kernel(s, KernelKind::decode, "sm_90a", R"({"family":"decode_split"})");
  ASSERT_TRUE(split.plan) << split.skipped;
  EXPECT_EQ(split.plan->config.short_name(), "m64n64w4s2");
  const SpecKernel bw = generate_kernel(s, KernelKind::decode, "sm_80", R"({"family":"decode_bw","stages":2})");
  ASSERT_TRUE(bw.plan) << bw.skipped;
  EXPECT_EQ(bw.plan->config.short_name(), "m16n16w4s2");
}

TEST(PlanDecodeBw, EmitsItsTemplateWithTheCombineEntry) {
  const Spec s = llama();
  const KernelSource k = emit_kernel(plan_kernel(s, KernelKind::decode, default_config(s, KernelKind::decode, "sm_90a"), "sm_90a"));
  EXPECT_EQ(k.entry, "attnc_decode_bw_bf16_d128_g4_causal_m16n16w4s3");
  EXPECT_NE(k.source.find("#include \"attnc/families/decode_bw.cuh\""), std::string::npos);
  EXPECT_NE(k.source.find("attnc::DecodeBw<Traits>::run(params, smem);"), std::string::npos);
  EXPECT_NE(k.source.find("static_assert(attnc::DecodeBw<Traits>::kSmemBytes == 102912"), std::string::npos);
  EXPECT_NE(k.source.find(k.entry + "_combine("), std::string::npos);
}

}  // namespace
}  // namespace attnc
