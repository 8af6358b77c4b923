// runtime/launch: a persistent prefill_sm90 launch runs min(items, SMs) blocks in one line; the
// kernel reads any grid as one line, so an unknown SM count keeps one block per item.
#include <gtest/gtest.h>

#include "runtime/launch/attention_args.h"

namespace attnc {
namespace {

TEST(PersistentGrid, AsManyBlocksAsSmsInOneLine) {
  const GridDims items{43, 32, 1};  // Phi-3-small at S 8192: 43 q tiles x 32 heads
  const GridDims g = persistent_grid(items, 132);
  EXPECT_EQ(g.x, 132u);
  EXPECT_EQ(g.y, 1u);
  EXPECT_EQ(g.z, 1u);
}

TEST(PersistentGrid, FewerItemsThanSmsOrNoSmCountKeepTheItemsGrid) {
  const GridDims few{5, 8, 3};  // 120 items
  for (int sms : {132, 0}) {
    const GridDims g = persistent_grid(few, sms);
    EXPECT_EQ(g.x, 5u);
    EXPECT_EQ(g.y, 8u);
    EXPECT_EQ(g.z, 3u);
  }
  EXPECT_EQ(persistent_grid({43, 32, 1}, 0).x, 43u);
}

}  // namespace
}  // namespace attnc
