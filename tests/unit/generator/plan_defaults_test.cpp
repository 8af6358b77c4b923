// generator/plan: the heuristic default (default_config) for prefill — which family and tiles run
// before any tuning.
#include <gtest/gtest.h>

#include "generator/plan/plan_attention.h"
#include "generator/plan/plan_prefill_sm90.h"

namespace attnc {
namespace {

Spec windowed(int left, int right) {
  Spec s;
  s.head_dim = s.head_dim_v = 64;
  s.num_q_heads = 64;
  s.num_kv_heads = 8;
  s.mask = {MaskKind::sliding_window, left, right};
  s.kernels.prefill = true;
  return s;
}

TEST(PlanDefaults, NarrowWindowsTakeSmallPrefillSm80Tiles) {
  for (KernelKind kind : {KernelKind::prefill, KernelKind::prefill_paged})
    for (const char* arch : {"sm_80", "sm_90a"}) {
      const Config c = default_config(windowed(127, 0), kind, arch);  // gpt-oss: 128 keys
      EXPECT_EQ(c.family, "prefill_sm80") << arch;
      EXPECT_EQ(c.short_name(), "m32n32w2s2") << arch;
      EXPECT_NO_THROW(plan_kernel(windowed(127, 0), kind, c, arch)) << arch;
    }
  EXPECT_EQ(default_config(windowed(128, 127), KernelKind::prefill, "sm_90a").short_name(), "m32n32w2s2");
}

TEST(PlanDefaults, WideWindowsAndUnboundedSidesKeepTheFamilyDefault) {
  EXPECT_EQ(default_config(windowed(4095, 0), KernelKind::prefill, "sm_90a").family, "prefill_sm90");
  EXPECT_EQ(default_config(windowed(128, 128), KernelKind::prefill, "sm_90a").family, "prefill_sm90");
  EXPECT_EQ(default_config(windowed(127, -1), KernelKind::prefill, "sm_90a").family, "prefill_sm90");
}

// Paged prefill over a 16-bit cache is prefill_sm90's on sm_90a (TMA per page): the contiguous
// kernel's tiles, one barrier more, its own name; an fp8 cache stays on prefill_sm80, with the reason.
TEST(PlanDefaults, PagedPrefillIsPrefillSm90OnSm90a) {
  Spec s = windowed(-1, 0);  // causal
  s.head_dim = s.head_dim_v = 128;
  const Config c = default_config(s, KernelKind::prefill_paged, "sm_90a");
  // The contiguous kernel's tiles; at page 16 the K/V tiles are gathered by cp.async.
  EXPECT_TRUE(c.paged_gather);
  Config tiles = c;
  tiles.paged_gather = false;
  EXPECT_EQ(tiles, default_config(s, KernelKind::prefill, "sm_90a"));
  ASSERT_EQ(c.family, "prefill_sm90");
  const KernelPlan paged = plan_kernel(s, KernelKind::prefill_paged, c, "sm_90a");
  const KernelPlan contiguous = plan_kernel(s, KernelKind::prefill, tiles, "sm_90a");
  EXPECT_TRUE(paged.paged);
  EXPECT_EQ(paged.smem_bytes, contiguous.smem_bytes + 8);
  EXPECT_EQ(paged.threads, 384);
  EXPECT_NE(paged.variant_name().find("_paged_"), std::string::npos) << paged.variant_name();
  EXPECT_EQ(contiguous.variant_name().find("_paged"), std::string::npos) << contiguous.variant_name();
  EXPECT_EQ(default_config(s, KernelKind::prefill_paged, "sm_80").family, "prefill_sm80");

  s.kv_cache.dtype = KvDType::fp8_e4m3;
  EXPECT_EQ(default_config(s, KernelKind::prefill_paged, "sm_90a").family, "prefill_sm80");
  EXPECT_EQ(prefill_sm90_refusal(s, KernelKind::prefill_paged, "sm_90a"),
            "prefill_sm90 reads 16-bit paged caches; a fp8_e4m3 cache stays on prefill_sm80");
  EXPECT_EQ(prefill_sm90_refusal(s, KernelKind::prefill, "sm_90a"), "");  // contiguous K/V: the model's dtype
}

TEST(PlanDefaults, TheSpecsFamilyListIsHonoured) {
  Spec s = windowed(127, 0);
  s.tuning.families = {"prefill_sm90"};
  EXPECT_EQ(default_config(s, KernelKind::prefill, "sm_90a").family, "prefill_sm90");
}

}  // namespace
}  // namespace attnc
