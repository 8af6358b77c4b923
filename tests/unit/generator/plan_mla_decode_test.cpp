// generator/plan: the mla_decode family (templates/attnc/families/mla_decode.cuh) — the decode of
// an MLA spec, its constants, shared memory, what it refuses, and its emitted source.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "generator/emit/emit.h"
#include "generator/plan/plan_attention.h"
#include "generator/plan/plan_mla_decode.h"
#include "generator/spec/spec_parse.h"

namespace attnc {
namespace {

Spec deepseek() {
  std::ifstream f(std::string(ATTNC_SOURCE_DIR) + "/specs/deepseek-v3.yaml");
  std::stringstream text;
  text << f.rdbuf();
  return parse_spec(text.str(), "deepseek-v3.yaml");
}

std::string refusal(const Spec& s, const Config& c, const std::string& arch = "sm_90a") {
  try {
    plan_kernel(s, KernelKind::decode, c, arch);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "planned";
}

TEST(PlanMlaDecode, IsTheDecodeOfAnMlaSpec) {
  const Spec s = deepseek();
  const Config c = default_config(s, KernelKind::decode, "sm_90a");
  EXPECT_EQ(c.family, "mla_decode");
  EXPECT_EQ(c.short_name(), "m64n64w12s2");
  const KernelPlan p = plan_kernel(s, KernelKind::decode, c, "sm_90a");
  EXPECT_EQ(p.head_dim, 576);
  EXPECT_EQ(p.head_dim_v, 512);
  EXPECT_EQ(p.group, 128);
  EXPECT_EQ(p.kv_heads(), 1);
  EXPECT_TRUE(p.paged && p.pack_gqa && p.split_kv);
  EXPECT_EQ(p.threads, 384);
  // 1 KiB alignment slack, Q 64 x 576, two 64 x 576 tiles, P 64 x 64 (all 2 bytes), then two
  // consumers' row maxima and sums, per stage nine full barriers (one per 64 columns) and an empty
  // one, four slab exponents.
  EXPECT_EQ(p.smem_bytes, 1024 + 2 * (64 * 576 + 2 * 64 * 576 + 64 * 64) + 4 * 4 * 64 + 8 * 10 * 2 + 16);
  EXPECT_EQ(p.variant_name(), "mla_decode_bf16_d576v512_g128_causal_lse_m64n64w12s2");
  // Prefill of the same spec stays MHA at 192 / 128.
  EXPECT_NE(default_config(s, KernelKind::prefill, "sm_90a").family, "mla_decode");
}

// An fp8 latent cache: the byte ring (two 36 KiB stages) beside one 16-bit tile, the same config.
TEST(PlanMlaDecode, PlansAnFp8LatentCache) {
  for (KvDType d : {KvDType::fp8_e4m3, KvDType::fp8_e5m2}) {
    Spec s = deepseek();
    s.kv_cache.dtype = d;
    const Config c = default_config(s, KernelKind::decode, "sm_90a");
    EXPECT_EQ(c.family, "mla_decode");
    const KernelPlan p = plan_kernel(s, KernelKind::decode, c, "sm_90a");
    EXPECT_EQ(p.kv_cache, d);
    EXPECT_EQ(p.smem_bytes, 1024 + 2 * (64 * 576 + 64 * 576 + 64 * 64) + 2 * 64 * 576 + 4 * 4 * 64 + 8 * 10 * 2 + 16);
    const KernelSource k = emit_kernel(p);
    EXPECT_NE(k.source.find(d == KvDType::fp8_e4m3 ? "kKvCache = attnc::kCacheFp8E4m3" : "kKvCache = attnc::kCacheFp8E5m2"),
              std::string::npos);
    Config stages3 = c;
    stages3.stages = 3;
    EXPECT_NE(refusal(s, stages3).find("bytes of shared memory"), std::string::npos) << refusal(s, stages3);
  }
}

// At most 16 query heads over an fp8 cache: the narrow layout (mla_decode_narrow.cuh), 16 rows as
// the wgmma's N; more heads, or a 16-bit cache, keep 64 rows.
TEST(PlanMlaDecode, NarrowLayoutForFewHeadsOverAnFp8Cache) {
  Spec s = deepseek();
  s.kv_cache.dtype = KvDType::fp8_e4m3;
  for (int heads : {8, 16, 32, 128}) {
    s.num_q_heads = s.num_kv_heads = heads;
    const Config c = default_config(s, KernelKind::decode, "sm_90a");
    EXPECT_EQ(c.block_m, heads <= 16 ? 16 : 64) << heads;
  }
  s.num_q_heads = s.num_kv_heads = 16;
  const KernelPlan p = plan_kernel(s, KernelKind::decode, default_config(s, KernelKind::decode, "sm_90a"), "sm_90a");
  EXPECT_EQ(p.config.short_name(), "m16n64w12s2");
  // Slack, permuted Q 16 x 576 (2 bytes), two fp16 V tiles 64 x 512 and P^T tiles 16 x 64, two
  // 36 KiB byte stages; two consumers' per-warp maxima and final states, barriers, eight |q| maxima.
  EXPECT_EQ(p.smem_bytes, 1024 + 2 * (16 * 576 + 2 * 64 * 512 + 2 * 16 * 64) + 2 * 64 * 576 + 4 * (128 + 64) + 8 * 4 + 32);
  const KernelSource k = emit_kernel(p);
  EXPECT_NE(k.source.find("#include \"attnc/families/mla_decode_narrow.cuh\""), std::string::npos);
  EXPECT_NE(k.source.find("attnc::MlaDecodeNarrow<Traits>::run(params, maps, smem)"), std::string::npos);
  // warps 8: one consumer warpgroup, whose one V tile leaves room for three byte stages (not four).
  Config one = p.config;
  one.warps = 8;
  one.stages = 3;
  const KernelPlan p1 = plan_kernel(s, KernelKind::decode, one, "sm_90a");
  EXPECT_EQ(p1.threads, 256);
  EXPECT_EQ(p1.smem_bytes, 1024 + 2 * (16 * 576 + 64 * 512 + 16 * 64) + 3 * 64 * 576 + 4 * (64 + 32) + 8 * 6 + 16);
  EXPECT_NE(emit_kernel(p1).source.find("kConsumerGroups = 1;"), std::string::npos);
  one.stages = 4;
  EXPECT_NE(refusal(s, one).find("bytes of shared memory"), std::string::npos) << refusal(s, one);
  Config wide8 = p.config;
  wide8.block_m = 64;
  wide8.warps = 8;
  EXPECT_NE(refusal(s, wide8).find("block_m 16 also warps 8"), std::string::npos) << refusal(s, wide8);
  Spec bf16 = s;
  bf16.kv_cache.dtype = KvDType::same;
  EXPECT_EQ(default_config(bf16, KernelKind::decode, "sm_90a").block_m, 64);
}

TEST(PlanMlaDecode, RefusesWhatItCannotMake) {
  Spec s = deepseek();
  const Config c = default_mla_decode_config();
  EXPECT_NE(refusal(s, c, "sm_80").find("mla_decode needs sm_90a"), std::string::npos);
  Spec int8 = s;
  int8.kv_cache.dtype = KvDType::int8;
  EXPECT_NE(refusal(int8, c).find("mla_decode reading a int8 latent cache"), std::string::npos) << refusal(int8, c);
  Spec page16 = s;
  page16.kv_cache.page_size = 16;
  EXPECT_NE(refusal(page16, c).find("page sizes must be multiples of 64"), std::string::npos);
  Spec rank = s;
  rank.mla.kv_lora_rank = 256;
  EXPECT_NE(refusal(rank, c).find("kv_lora_rank 256"), std::string::npos);
  Config stages3 = c;
  stages3.stages = 3;
  EXPECT_NE(refusal(s, stages3).find("bytes of shared memory"), std::string::npos) << refusal(s, stages3);
  Config wide = c;
  wide.block_m = 128;
  EXPECT_NE(refusal(s, wide).find("block_m 64 or 16, block_n 64, warps 12"), std::string::npos) << refusal(s, wide);
  Config narrow = c;
  narrow.block_m = 16;  // registers convert fp8 keys: a 16-bit cache has none to convert
  EXPECT_NE(refusal(s, narrow).find("reads fp8 caches only"), std::string::npos) << refusal(s, narrow);
  // Other decode families do not read a latent cache; mla_decode makes nothing else.
  EXPECT_NE(refusal(s, default_family_config(s, KernelKind::decode, "sm_90a", "decode_split"))
                .find("mla_decode makes it"),
            std::string::npos);
  Spec llama;
  llama.num_q_heads = 32;
  llama.num_kv_heads = 8;
  llama.kernels.decode = true;
  EXPECT_NE(refusal(llama, c).find("the spec has no mla section"), std::string::npos);
}

TEST(PlanMlaDecode, EmitsTheKernelAndItsCombine) {
  const Spec s = deepseek();
  const KernelSource k = emit_kernel(plan_kernel(s, KernelKind::decode, default_mla_decode_config(), "sm_90a"));
  EXPECT_NE(k.source.find("attnc::MlaDecode<Traits>::run(params, maps, smem)"), std::string::npos);
  EXPECT_NE(k.source.find(k.entry + "_combine"), std::string::npos);
  EXPECT_NE(k.source.find("kGroup = 128"), std::string::npos);
}

}  // namespace
}  // namespace attnc
