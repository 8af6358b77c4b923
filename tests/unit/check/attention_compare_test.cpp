// Output comparison: tolerance, NaN (never written) counted bad, changed padding counted stray.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "check/attention_compare.h"
#include "check/half.h"

namespace attnc {
namespace {

TEST(AttentionCompare, CountsBadAndStrayElements) {
  // 2 tokens x 1 head x 8 values, rows padded to 16, one guard row.
  const std::vector<double> ref(16, 1.0);
  std::vector<std::uint16_t> got(3 * 16, kHalfPoison);
  for (int t = 0; t < 2; ++t)
    for (int d = 0; d < 8; ++d) got[t * 16 + d] = float_to_bf16(1.0f);
  ErrorTally clean;
  compare_output(DType::bf16, got, 16, 2, 1, 8, ref, 1.5e-2, 1e-2, clean);
  EXPECT_EQ(clean.bad, 0);
  EXPECT_EQ(clean.stray, 0);

  got[3] = float_to_bf16(1.5f);  // out of tolerance
  got[16 + 7] = kHalfPoison;     // never written
  got[10] = 0;                   // padding overwritten
  got[2 * 16 + 1] = 0;           // guard row overwritten
  ErrorTally e;
  compare_output(DType::bf16, got, 16, 2, 1, 8, ref, 1.5e-2, 1e-2, e);
  EXPECT_EQ(e.bad, 2);
  EXPECT_EQ(e.stray, 2);
  EXPECT_NEAR(e.max_abs, 0.5, 1e-9);
}

TEST(AttentionCompare, LseLayoutsBasesAndEmptyRows) {
  const double ninf = -std::numeric_limits<double>::infinity();
  const std::vector<double> ref = {1.0, 2.0, ninf, 4.0};  // [total_q 2, Hq 2], base e
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Head-major, base 2: [h][t] = ref[t][h] / ln 2, then one poisoned guard entry.
  std::vector<float> got = {float(1.0 / std::log(2.0)), -INFINITY, float(2.0 / std::log(2.0)),
                            float(4.0 / std::log(2.0)), nan};
  ErrorTally e;
  compare_lse(got, true, 1.0 / std::log(2.0), 2, 2, ref, e);
  EXPECT_EQ(e.bad, 0);
  EXPECT_EQ(e.stray, 1) << "a quiet NaN is not the 0xffffffff poison";
}

}  // namespace
}  // namespace attnc
