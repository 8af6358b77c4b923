// The kernels' exact s32 -> f32 conversion (templates/attnc/features/s32_to_f32.cuh, compiled here
// for the host): exhaustive over every sum an int8 product of D <= 256 can give, and the folded
// form prefill_sm90's int8 scores use (fma with the per-key bias) against float64 within the
// bound its comment states.
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
#include "attnc/features/s32_to_f32.cuh"
#undef __forceinline__
#undef __device__

namespace attnc {
namespace {

TEST(S32ToF32, OffsetIsTheBitsAndCoversTheLargestInt8Sum) {
  EXPECT_EQ(__int_as_float(kS32OffsetBits), kS32Offset);
  EXPECT_EQ(256 * 128 * 128, kS32OffsetMaxAbs);  // D = 256 keys of (-128) * (-128)
}

TEST(S32ToF32, ExactForEverySumInRange) {
  int bad = 0;
  for (int x = -kS32OffsetMaxAbs; x <= kS32OffsetMaxAbs; ++x) {
    const float f = s32_plus_offset(x);
    if (double(f) != double(kS32Offset) + x || f - kS32Offset != float(x)) ++bad;
  }
  EXPECT_EQ(bad, 0);
}

TEST(S32ToF32, OutsideTheRangeItIsNotExact) {  // the bound is tight: the test above can fail
  EXPECT_NE(double(s32_plus_offset(kS32OffsetMaxAbs + 1)), double(kS32Offset) + kS32OffsetMaxAbs + 1);
}

// fma(offset + x, k, -offset * k) = x * k up to the bias's rounding (<= 0.75 k) and the result's.
TEST(S32ToF32, FoldedIntoTheScaleFma) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> sum(-kS32OffsetMaxAbs, kS32OffsetMaxAbs);
  std::uniform_real_distribution<float> mant(1.f, 2.f);
  std::uniform_int_distribution<int> exp2(-40, 10);
  double worst = 0;
  for (int i = 0; i < 2000000; ++i) {
    const int x = i % 4 == 0 ? sum(rng) % 4096 : sum(rng);  // small sums too: cancellation is worst there
    const float k = std::ldexp(mant(rng), exp2(rng));
    const float bias = -kS32Offset * k;
    const double got = std::fma(s32_plus_offset(x), k, bias), want = double(x) * k;
    const double err = std::fabs(got - want) / k - std::ldexp(std::fabs(want), -24) / k;  // less the result's rounding
    worst = std::max(worst, err);
  }
  EXPECT_LE(worst, 0.75);
  EXPECT_GT(worst, 0.1);  // the bias does round: the bound is not vacuous
}

}  // namespace
}  // namespace attnc
