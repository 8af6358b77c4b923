// Tuning records: identity, replace vs keep-better, filters, validation.
#include <gtest/gtest.h>

#include "cache_test_util.h"

namespace attnc {
namespace {

using test::make_tuning;
using test::TempDir;
using test::tuning_key;

TEST(Tuning, PutFindAndReplace) {
  TempDir d;
  Store s = Store::open(d.file("attnc.db"));
  TuningKey k = tuning_key("spec-a");
  EXPECT_FALSE(s.find_tuning(k));
  EXPECT_TRUE(s.put_tuning(make_tuning(k, 20.0, 1000, R"({"block_m":64})")));
  auto got = s.find_tuning(k);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->key, k);
  EXPECT_EQ(got->config_json, R"({"block_m":64})");
  EXPECT_DOUBLE_EQ(got->time_us, 20.0);
  EXPECT_EQ(got->measured_how, R"({"repeats":100,"warmup":10})");
  // Replace (the default): a fresh run on this machine wins even when slower.
  EXPECT_TRUE(s.put_tuning(make_tuning(k, 25.0, 2000, R"({"block_m":128})")));
  EXPECT_EQ(s.find_tuning(k)->config_json, R"({"block_m":128})");
  EXPECT_EQ(s.stats().tuning_records, 1);
}

TEST(Tuning, EveryKeyFieldSeparatesRecords) {
  TempDir d;
  Store s = Store::open(d.file("attnc.db"));
  TuningKey base = tuning_key("spec-a");
  std::vector<TuningKey> keys(9, base);
  keys[1].spec_id = "spec-b";
  keys[2].device = "NVIDIA H100";
  keys[3].arch = "sm_80";
  keys[4].sm_count = 114;
  keys[5].driver_version = "12080";
  keys[6].nvrtc_version = "12.8";
  keys[7].mode = "decode";
  keys[8].bucket = "seq<=2048";
  for (const auto& k : keys) EXPECT_TRUE(s.put_tuning(make_tuning(k, 10, 1)));
  EXPECT_EQ(s.list_tuning().size(), keys.size());
}

TEST(Tuning, KeepBetterRule) {
  TempDir d;
  Store s = Store::open(d.file("attnc.db"));
  TuningKey k = tuning_key("spec-a");
  auto keep = TuningConflict::KeepBetter;
  ASSERT_TRUE(s.put_tuning(make_tuning(k, 20.0, 1000, R"({"v":"first"})"), keep));
  EXPECT_FALSE(s.put_tuning(make_tuning(k, 30.0, 5000, R"({"v":"slower"})"), keep)) << "slower loses, even newer";
  EXPECT_TRUE(s.put_tuning(make_tuning(k, 15.0, 500, R"({"v":"faster"})"), keep)) << "faster wins, even older";
  EXPECT_EQ(s.find_tuning(k)->config_json, R"({"v":"faster"})");
  EXPECT_TRUE(s.put_tuning(make_tuning(k, 15.0, 600, R"({"v":"tie-newer"})"), keep)) << "a tie goes to the newer";
  EXPECT_FALSE(s.put_tuning(make_tuning(k, 15.0, 400, R"({"v":"tie-older"})"), keep));
  EXPECT_FALSE(s.put_tuning(make_tuning(k, 0.0, 9999, R"({"v":"unknown"})"), keep)) << "no time never beats a time";
  EXPECT_EQ(s.find_tuning(k)->config_json, R"({"v":"tie-newer"})");
}

TEST(Tuning, UnknownTimeLosesToAnyKnownTime) {
  TempDir d;
  Store s = Store::open(d.file("attnc.db"));
  TuningKey k = tuning_key("spec-a");
  s.put_tuning(make_tuning(k, -1.0, 9000, R"({"v":"unmeasured"})"));
  EXPECT_TRUE(s.put_tuning(make_tuning(k, 1e6, 1, R"({"v":"slow but measured"})"), TuningConflict::KeepBetter));
  EXPECT_EQ(s.find_tuning(k)->config_json, R"({"v":"slow but measured"})");
}

TEST(Tuning, FilterByAnyField) {
  TempDir d;
  Store s = Store::open(d.file("attnc.db"));
  for (const char* spec : {"a", "b"})
    for (const char* bucket : {"seq<=512", "seq<=1024", "seq<=2048"}) s.put_tuning(make_tuning(tuning_key(spec, bucket), 5, 1));
  TuningKey decode = tuning_key("a", "seq<=512");
  decode.mode = "decode";
  s.put_tuning(make_tuning(decode, 5, 1));
  EXPECT_EQ(s.list_tuning().size(), 7u);
  EXPECT_EQ(s.list_tuning({.spec_id = "a"}).size(), 4u);
  EXPECT_EQ(s.list_tuning({.spec_id = "a", .mode = "prefill"}).size(), 3u);
  EXPECT_EQ(s.list_tuning({.bucket = "seq<=512"}).size(), 3u);
  EXPECT_EQ(s.list_tuning({.sm_count = 132}).size(), 7u);
  EXPECT_EQ(s.list_tuning({.sm_count = 114}).size(), 0u);
}

TEST(Tuning, RejectsBadRecords) {
  TempDir d;
  Store s = Store::open(d.file("attnc.db"));
  TuningRecord r = make_tuning(tuning_key("a"), 5, 1);
  r.candidates_json = "[{\"time_us\": 1.0,";
  try {
    s.put_tuning(r);
    FAIL();
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), StoreErrc::Invalid);
    EXPECT_NE(std::string(e.what()).find("candidates_json is not valid JSON"), std::string::npos) << e.what();
  }
  r = make_tuning(tuning_key("a"), 5, 1);
  r.key.bucket.clear();
  EXPECT_THROW(s.put_tuning(r), StoreError);
  EXPECT_TRUE(s.list_tuning().empty());
}

}  // namespace
}  // namespace attnc
