// The software fp8 encoder the cache_write GPU test compares against bit for bit: known encodings
// (OCP FP8: e4m3fn bias 7, max 448, no infinities; e5m2 bias 15, max 57344), round to nearest
// even at ties, saturation instead of overflow, subnormals, signed zero, and a round trip over
// every code, and agreement with NVIDIA's own host conversion (cuda_fp8.h, the software twin of
// the cvt.rn.satfinite instruction the kernel uses) on every bf16 value and a sweep of floats
// (all 2^32 floats agreed when this was written; the sweep keeps the test fast). Also the float64
// merge reference on hand-computed rows.
#include <cuda_fp8.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "check/ops_reference.h"

namespace attnc {
namespace {

const float kInf = std::numeric_limits<float>::infinity();

TEST(Fp8Reference, E4m3KnownEncodings) {
  EXPECT_EQ(fp8_e4m3_from_float(1.0f), 0x38);
  EXPECT_EQ(fp8_e4m3_from_float(0.5f), 0x30);
  EXPECT_EQ(fp8_e4m3_from_float(-2.0f), 0xc0);
  EXPECT_EQ(fp8_e4m3_from_float(1.125f), 0x39);
  EXPECT_EQ(fp8_e4m3_from_float(0.0f), 0x00);
  EXPECT_EQ(fp8_e4m3_from_float(-0.0f), 0x80);
  EXPECT_EQ(fp8_e4m3_from_float(448.0f), 0x7e);        // largest finite
  EXPECT_EQ(fp8_e4m3_from_float(-448.0f), 0xfe);
  EXPECT_EQ(fp8_e4m3_from_float(std::ldexp(1.f, -6)), 0x08);  // smallest normal
  EXPECT_EQ(fp8_e4m3_from_float(std::ldexp(1.f, -9)), 0x01);  // smallest subnormal
  EXPECT_EQ(fp8_e4m3_from_float(std::ldexp(7.f, -9)), 0x07);  // largest subnormal
}

TEST(Fp8Reference, E4m3RoundsToNearestEvenAndSaturates) {
  EXPECT_EQ(fp8_e4m3_from_float(1.0625f), 0x38);  // halfway 1.0 | 1.125: even mantissa 0
  EXPECT_EQ(fp8_e4m3_from_float(1.1875f), 0x3a);  // halfway 1.125 | 1.25: even mantissa 2
  EXPECT_EQ(fp8_e4m3_from_float(1.07f), 0x39);    // above halfway
  EXPECT_EQ(fp8_e4m3_from_float(std::ldexp(1.f, -10)), 0x00);   // half the smallest subnormal: to 0
  EXPECT_EQ(fp8_e4m3_from_float(-std::ldexp(1.f, -10)), 0x80);
  EXPECT_EQ(fp8_e4m3_from_float(std::ldexp(3.f, -10)), 0x02);   // 1.5 subnormal steps: to 2
  EXPECT_EQ(fp8_e4m3_from_float(0.0155f), 0x08);  // rounds up into the normals
  EXPECT_EQ(fp8_e4m3_from_float(464.0f), 0x7e);   // halfway 448 | 480 (NaN's slot): saturates
  EXPECT_EQ(fp8_e4m3_from_float(1e6f), 0x7e);
  EXPECT_EQ(fp8_e4m3_from_float(kInf), 0x7e);
  EXPECT_EQ(fp8_e4m3_from_float(-kInf), 0xfe);
  EXPECT_EQ(fp8_e4m3_from_float(std::nanf("")), 0x7f);
}

TEST(Fp8Reference, E5m2KnownEncodings) {
  EXPECT_EQ(fp8_e5m2_from_float(1.0f), 0x3c);
  EXPECT_EQ(fp8_e5m2_from_float(-1.5f), 0xbe);
  EXPECT_EQ(fp8_e5m2_from_float(57344.0f), 0x7b);  // largest finite
  EXPECT_EQ(fp8_e5m2_from_float(1e9f), 0x7b);
  EXPECT_EQ(fp8_e5m2_from_float(kInf), 0x7b);      // satfinite: no infinity stored
  EXPECT_EQ(fp8_e5m2_from_float(-kInf), 0xfb);
  EXPECT_EQ(fp8_e5m2_from_float(std::ldexp(1.f, -14)), 0x04);  // smallest normal
  EXPECT_EQ(fp8_e5m2_from_float(std::ldexp(1.f, -16)), 0x01);  // smallest subnormal
  EXPECT_EQ(fp8_e5m2_from_float(1.125f), 0x3c);   // halfway 1.0 | 1.25: even
  EXPECT_EQ(fp8_e5m2_from_float(1.375f), 0x3e);   // halfway 1.25 | 1.5: even
  EXPECT_EQ(fp8_e5m2_from_float(61440.0f), 0x7b); // halfway 57344 | inf: saturates
}

TEST(Fp8Reference, EveryCodeRoundTrips) {
  for (int b = 0; b < 256; ++b) {
    const double e4 = fp8_e4m3_to_double(std::uint8_t(b));
    if (!std::isnan(e4)) {
      EXPECT_EQ(fp8_e4m3_from_float(float(e4)), b) << "e4m3 code " << b << " = " << e4;
    }
    const double e5 = fp8_e5m2_to_double(std::uint8_t(b));
    if (std::isfinite(e5)) {
      EXPECT_EQ(fp8_e5m2_from_float(float(e5)), b) << "e5m2 code " << b << " = " << e5;
    }
  }
  EXPECT_EQ(fp8_e4m3_to_double(0x7e), 448.0);
  EXPECT_EQ(fp8_e5m2_to_double(0x7b), 57344.0);
  EXPECT_TRUE(std::isinf(fp8_e5m2_to_double(0x7c)));
}

TEST(Fp8Reference, AgreesWithCudaFp8Header) {
  long long checked = 0;
  auto check = [&](std::uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, 4);
    if (std::isnan(f)) return;
    ++checked;
    ASSERT_EQ(fp8_e4m3_from_float(f), __nv_cvt_float_to_fp8(f, __NV_SATFINITE, __NV_E4M3)) << std::hexfloat << f;
    ASSERT_EQ(fp8_e5m2_from_float(f), __nv_cvt_float_to_fp8(f, __NV_SATFINITE, __NV_E5M2)) << std::hexfloat << f;
  };
  for (std::uint32_t b = 0; b < 0x10000; ++b) check(b << 16);             // every bf16 value
  for (std::uint64_t b = 0; b < (1ull << 32); b += 251) check(std::uint32_t(b));  // 17M floats
  EXPECT_GT(checked, 17000000);
}

TEST(MergeReference, HandComputedRows) {
  // Row 0: equal LSEs -> the mean. Row 1: prefix empty (+inf counts as -inf) -> suffix.
  // Row 2: both empty -> 0, -inf. Row 3: base 2, lse 1 and 0 -> weights 2/3, 1/3.
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> out, out_lse;
  reference_merge(3, 1, 2, LseBase::e, {1, 2, 3, 4, 5, 6}, {0.5, inf, -inf}, {3, 4, 7, 8, 9, 9}, {0.5, 2.0, -inf},
                  out, out_lse);
  EXPECT_DOUBLE_EQ(out[0], 2);
  EXPECT_DOUBLE_EQ(out[1], 3);
  EXPECT_DOUBLE_EQ(out_lse[0], 0.5 + std::log(2.0));
  EXPECT_DOUBLE_EQ(out[2], 7);
  EXPECT_DOUBLE_EQ(out_lse[1], 2.0);
  EXPECT_EQ(out[4], 0);
  EXPECT_EQ(out_lse[2], -inf);
  reference_merge(1, 1, 1, LseBase::two, {3}, {1}, {6}, {0}, out, out_lse);
  EXPECT_DOUBLE_EQ(out[0], 3 * 2.0 / 3 + 6 * 1.0 / 3);
  EXPECT_DOUBLE_EQ(out_lse[0], std::log2(3.0));
}

}  // namespace
}  // namespace attnc
