// --budget and the other duration flags.
#include "tuner/budget.h"

#include <gtest/gtest.h>

namespace attnc {
namespace {

using std::chrono::milliseconds;

TEST(Budget, ParsesUnitsAndSums) {
  EXPECT_EQ(parse_duration("90s"), milliseconds(90000));
  EXPECT_EQ(parse_duration("10m"), milliseconds(600000));
  EXPECT_EQ(parse_duration("1h"), milliseconds(3600000));
  EXPECT_EQ(parse_duration("1h30m"), milliseconds(5400000));
  EXPECT_EQ(parse_duration("2.5m"), milliseconds(150000));
  EXPECT_EQ(parse_duration("1m30s"), milliseconds(90000));
}

TEST(Budget, RejectsWithFlagValueAndForm) {
  for (const char* bad : {"", "10", "10x", "m", "-5m", "0s", "1.2.3m", "10 m", "9999h"}) {
    try {
      parse_duration(bad, "--budget");
      FAIL() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("--budget: '" + std::string(bad) + "'"), std::string::npos) << what;
      EXPECT_NE(what.find("90s, 10m, 1h"), std::string::npos) << what;
    }
  }
}

TEST(Budget, Formats) {
  EXPECT_EQ(format_duration(milliseconds(750)), "750ms");
  EXPECT_EQ(format_duration(milliseconds(90000)), "1m30s");
  EXPECT_EQ(format_duration(milliseconds(42000)), "42s");
  EXPECT_EQ(format_duration(milliseconds(3900000)), "1h05m");
}

}  // namespace
}  // namespace attnc
