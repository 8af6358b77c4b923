// The s32 accumulator preset of prefill_sm90's int8 scores under ATTNC_INT8_ACC_PRESET
// (templates/attnc/features/s32_preset.cuh, compiled here for the host): exhaustive over every sum
// an int8 product of D <= 256 can give, and the FFMA with the per-key bias against float64 within
// the bound the header states.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

namespace {
float __int_as_float(int x) {
  float f;
  std::memcpy(&f, &x, sizeof f);
  return f;
}
}  // namespace

#define __device__
#define __forceinline__ inline
#include "attnc/features/s32_preset.cuh"
#undef __forceinline__
#undef __device__

namespace attnc {
namespace {

TEST(S32Preset, PresetIsTheBitsAndCoversTheLargestInt8Sum) {
  EXPECT_EQ(__int_as_float(kS32PresetBits), s32_preset());
  EXPECT_EQ(kS32PresetMaxDepth * 128 * 128, kS32PresetMaxAbs);  // D = 256 of (-128) * (-128)
  EXPECT_GT(-kS32PresetMaxDepth * 128 * 127, -kS32PresetMaxAbs);  // the most negative sum
}

TEST(S32Preset, ExactForEverySumInRange) {
  int bad = 0;
  for (int x = -kS32PresetMaxAbs; x <= kS32PresetMaxAbs; ++x) {
    const float f = s32_preset_plus(x);
    if (double(f) != double(s32_preset()) + x || f - s32_preset() != float(x)) ++bad;
  }
  EXPECT_EQ(bad, 0);
}

TEST(S32Preset, OutsideTheRangeItIsNotExact) {  // the bound is tight on both sides: the test above can fail
  EXPECT_NE(double(s32_preset_plus(kS32PresetMaxAbs + 1)), double(s32_preset()) + kS32PresetMaxAbs + 1);
  EXPECT_NE(double(s32_preset_plus(-kS32PresetMaxAbs - 1)), double(s32_preset()) - kS32PresetMaxAbs - 1);
}

// fma(preset + x, k, -preset * k) = x * k up to the bias's rounding (<= 0.75 k) and the result's.
TEST(S32Preset, ScaledByTheKeysFma) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> sum(-kS32PresetMaxAbs, kS32PresetMaxAbs);
  std::uniform_real_distribution<float> mant(1.f, 2.f);
  std::uniform_int_distribution<int> exp2(-40, 10);
  double worst = 0;
  for (int i = 0; i < 2000000; ++i) {
    const int x = i % 4 == 0 ? sum(rng) % 4096 : sum(rng);  // small sums too: cancellation is worst there
    const float k = std::ldexp(mant(rng), exp2(rng));
    const double got = s32_preset_scaled(s32_preset_plus(x), k, s32_preset_bias(k)), want = double(x) * k;
    const double err = std::fabs(got - want) / k - std::ldexp(std::fabs(want), -24) / k;  // less the result's rounding
    worst = std::max(worst, err);
  }
  EXPECT_LE(worst, 0.75);
  EXPECT_GT(worst, 0.1);  // the bias does round: the bound is not vacuous
}

}  // namespace
}  // namespace attnc
