#include "runtime/dispatch/shape_bucket.h"

#include <gtest/gtest.h>

#include <set>

#include "runtime/driver/device_info.h"
#include "runtime/compiler/nvrtc_compiler.h"
#include "runtime/dispatch/tuned_choice.h"
#include "runtime/dispatch/tuning_key.h"

namespace attnc {
namespace {

TEST(ShapeBucket, RoundsEachSizeUpToAPowerOfTwo) {
  const ShapeBucket b = ShapeBucket::of({KernelKind::decode, 48, 1, 8193});
  EXPECT_EQ(b.batch, 64);
  EXPECT_EQ(b.seqlen_q, 1);
  EXPECT_EQ(b.seqlen_k, 16384);
  EXPECT_EQ(b.label(), "b64.q1.k16384");
  const ShapeBucket exact = ShapeBucket::of({KernelKind::prefill, 4, 4096, 4096});
  EXPECT_EQ(exact.label(), "b4.q4096.k4096");
  EXPECT_EQ(ShapeBucket::of({KernelKind::prefill, 0, -3, 0}).label(), "b1.q1.k1");
}

TEST(ShapeBucket, KeysDifferPerKindAndSize) {
  std::set<std::uint64_t> keys;
  int n = 0;
  for (KernelKind kind : {KernelKind::prefill, KernelKind::prefill_paged, KernelKind::decode})
    for (int b : {1, 2, 64, 1 << 20})
      for (int q : {1, 4096, 1 << 30})
        for (int k : {1, 8192, 1 << 30}) {
          keys.insert(ShapeBucket::of({kind, b, q, k}).key());
          ++n;
        }
  EXPECT_EQ(static_cast<int>(keys.size()), n);
}

TEST(ShapeBucket, LabelRoundTripsAndBadLabelsSayWhatIsExpected) {
  const ShapeBucket b = ShapeBucket::of({KernelKind::prefill_paged, 3, 100, 5000});
  EXPECT_EQ(ShapeBucket::parse(KernelKind::prefill_paged, b.label()), b);
  EXPECT_EQ(b.representative().max_seqlen_k, 8192);
  for (const char* bad : {"", "b3.q1.k8", "b4.q1", "b4.q1.k8x", "q1.b4.k8", "b4.q0.k8", "b4,q1,k8"}) {
    try {
      ShapeBucket::parse(KernelKind::decode, bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("e.g. b64.q1.k8192"), std::string::npos) << e.what();
    }
  }
}

TEST(TunedChoice, CarriesTheCompiledConfigAndThePerCallSplitCount) {
  TunedChoice c;
  c.config.family = "decode_split";
  c.config.block_m = 16;
  c.config.warps = 1;
  c.num_splits = 8;
  const TunedChoice back = TunedChoice::from_json(c.to_json(), Config{});
  EXPECT_EQ(back, c);
  EXPECT_EQ(TunedChoice::from_json("{\"stages\":3}", Config{}).num_splits, 0);
  EXPECT_THROW(TunedChoice::from_json("{\"num_splits\":-1}", Config{}), std::invalid_argument);
  EXPECT_THROW(TunedChoice::from_json("{\"splits\":4}", Config{}), std::invalid_argument);
  EXPECT_EQ(TunedChoice::from_json("{\"splits\":1,\"stages\":3}", Config{}).config.stages, 3);  // legacy, dropped
  EXPECT_THROW(Config::from_json("{\"splits\":1}"), std::invalid_argument);  // not a Config field any more
  EXPECT_THROW(TunedChoice::from_json("{\"tile\":4}", Config{}), std::invalid_argument);
}

TEST(TuningKey, NamesTheDeviceToolchainModeAndBucket) {
  const TuningKey k = tuning_key(DeviceInfo{"NVIDIA H200", "sm_90a", 132, 13000}, "abc", KernelKind::decode,
                                 ShapeBucket::of({KernelKind::decode, 48, 1, 8000}));
  EXPECT_EQ(k, (TuningKey{"abc", "NVIDIA H200", "sm_90a", 132, "13000", nvrtc_version(), "decode", "b64.q1.k8192"}));
}

}  // namespace
}  // namespace attnc
