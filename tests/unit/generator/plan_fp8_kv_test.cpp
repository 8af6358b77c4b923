// generator/plan: fp8 KV caches (features/kv_fp8.cuh) — which kernels read them, where they are
// refused and why, the shared memory of the staged fp8 tiles, and the emitted traits.
#include <gtest/gtest.h>

#include "generator/emit/emit.h"
#include "generator/plan/plan_attention.h"

namespace attnc {
namespace {

Spec fp8_llama(KvDType d = KvDType::fp8_e4m3) {
  Spec s;
  s.num_q_heads = 32;
  s.num_kv_heads = 8;
  s.kv_cache.dtype = d;
  s.kernels.decode = true;
  return s;
}

KernelPlan plan_default(const Spec& s, KernelKind kind, const std::string& arch) {
  return plan_kernel(s, kind, default_config(s, kind, arch), arch);
}

std::string refusal(const Spec& s, KernelKind kind, const std::string& arch) {
  try {
    plan_default(s, kind, arch);
  } catch (const NotSupportedYet& e) {
    return e.what();
  }
  return "planned";
}

TEST(PlanFp8Kv, PagedKernelsReadFp8FromSm89AndContiguousPrefillReads16Bit) {
  const Spec s = fp8_llama();
  EXPECT_EQ(plan_default(s, KernelKind::decode, "sm_90a").kv_cache, KvDType::fp8_e4m3);
  EXPECT_EQ(plan_default(s, KernelKind::decode, "sm_90a").family, "decode_bw");
  EXPECT_EQ(plan_default(s, KernelKind::decode, "sm_89").family, "decode_split");
  EXPECT_EQ(plan_default(s, KernelKind::prefill_paged, "sm_90a").family, "prefill_sm80");
  EXPECT_EQ(plan_default(s, KernelKind::prefill_paged, "sm_90a").kv_cache, KvDType::fp8_e4m3);
  EXPECT_EQ(plan_default(fp8_llama(KvDType::fp8_e5m2), KernelKind::decode, "sm_90a").kv_cache, KvDType::fp8_e5m2);
  EXPECT_EQ(plan_default(s, KernelKind::prefill, "sm_90a").kv_cache, KvDType::same);  // new K/V, model dtype
  EXPECT_EQ(refusal(s, KernelKind::decode, "sm_86"),
            "not supported yet: reading a fp8_e4m3 KV cache on sm_86 (the fp8 conversion instruction needs sm_89 or "
            "later)");
  Spec d72 = s;
  d72.head_dim = d72.head_dim_v = 72;
  EXPECT_EQ(refusal(d72, KernelKind::prefill_paged, "sm_90a"),
            "not supported yet: reading a fp8_e4m3 KV cache with head dim 72 (fp8 rows load in 16-byte chunks: "
            "multiples of 16)");
  Spec int8 = s;
  int8.kv_cache.dtype = KvDType::int8;
  EXPECT_NE(refusal(int8, KernelKind::decode, "sm_90a").find("int8 KV cache"), std::string::npos);
}

TEST(PlanFp8Kv, StagesHoldFp8BytesBesideOne16BitTile) {
  const Spec s = fp8_llama();
  // decode_bw m16n16w4s3 at d128 converts in registers: Q 16 x 128 (2 B); per warp 3 fp8 stages of
  // 16 x (128 + 128) bytes; then 4 warps x 16 rows x (max, sum).
  const KernelPlan bw = plan_default(s, KernelKind::decode, "sm_90a");
  EXPECT_EQ(bw.smem_bytes, 2 * 16 * 128 + 4 * (3 * 16 * 256) + 4 * 2 * 4 * 16);
  // At d96 (not a multiple of 64) each warp converts into one 16-bit K and V tile (rows padded to 128).
  Spec d96 = s;
  d96.head_dim = d96.head_dim_v = 96;
  EXPECT_EQ(plan_default(d96, KernelKind::decode, "sm_90a").smem_bytes,
            2 * 16 * 128 + 4 * (2 * 16 * 256 + 3 * 16 * 192) + 4 * 2 * 4 * 16);
  // Two stages at d64 are smaller than the warps' merge (4 x 16 x (64 + 8) floats), which sizes the area.
  Spec d64 = s;
  d64.head_dim = d64.head_dim_v = 64;
  Config c2 = default_config(d64, KernelKind::decode, "sm_90a");
  c2.stages = 2;
  EXPECT_EQ(plan_kernel(d64, KernelKind::decode, c2, "sm_90a").smem_bytes, 4 * 4 * 16 * 72 + 4 * 2 * 4 * 16);
  // decode_split m64n64w4s2: Q 64 x 128, one 16-bit K and V tile, 2 fp8 stages.
  const KernelPlan split = plan_default(s, KernelKind::decode, "sm_89");
  EXPECT_EQ(split.smem_bytes, 2 * 64 * 128 + 2 * 64 * 256 + 2 * 64 * 256);
}

TEST(PlanFp8Kv, EmitsTheCacheEncodingAndNamesIt) {
  const KernelSource e4 = emit_kernel(plan_default(fp8_llama(), KernelKind::decode, "sm_90a"));
  EXPECT_EQ(e4.entry, "attnc_decode_bw_bf16_d128_g4_causal_fp8e4m3_m16n16w4s3");
  EXPECT_NE(e4.source.find("static constexpr int kKvCache = attnc::kCacheFp8E4m3;"), std::string::npos);
  const KernelSource e5 = emit_kernel(plan_default(fp8_llama(KvDType::fp8_e5m2), KernelKind::prefill_paged, "sm_90a"));
  EXPECT_NE(e5.entry.find("_paged_fp8e5m2_"), std::string::npos) << e5.entry;
  EXPECT_NE(e5.source.find("kKvCache = attnc::kCacheFp8E5m2;"), std::string::npos);
  Spec same = fp8_llama();
  same.kv_cache.dtype = KvDType::same;
  EXPECT_NE(emit_kernel(plan_default(same, KernelKind::decode, "sm_90a")).source.find("kKvCache = attnc::kCacheSame;"),
            std::string::npos);
}

}  // namespace
}  // namespace attnc
