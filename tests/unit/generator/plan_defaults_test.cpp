// generator/plan: the heuristic default (default_config) for prefill — which family and tiles run
// before any tuning.
#include <gtest/gtest.h>

#include "generator/plan/plan_attention.h"

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

TEST(PlanDefaults, TheSpecsFamilyListIsHonoured) {
  Spec s = windowed(127, 0);
  s.tuning.families = {"prefill_sm90"};
  EXPECT_EQ(default_config(s, KernelKind::prefill, "sm_90a").family, "prefill_sm90");
}

}  // namespace
}  // namespace attnc
