// generator/split_kv: the one split-KV rule every component calls (dispatcher, tuner, checks).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>

#include "attnc/params/split_combine_shape.h"
#include "generator/split_kv.h"

namespace attnc {
namespace {

KernelPlan plan_for(KernelKind kind) {
  Spec s;
  s.num_q_heads = 32;
  s.num_kv_heads = 8;
  return plan_kernel(s, kind, default_config(s, kind, "sm_90a"), "sm_90a");
}

// 3 requests of one token over 4096 keys on 132 SMs: the heuristic splits.
const SplitShape kLong{3, 1, 4096, 3, 132};

TEST(SplitKv, HeuristicOnlyForSplitKernelsWithSizesKnown) {
  const KernelPlan decode = plan_for(KernelKind::decode), prefill = plan_for(KernelKind::prefill);
  const int h = choose_num_splits(decode, 3, 1, 4096, 132);
  EXPECT_GT(h, 1);
  EXPECT_LE(h, kMaxSplits);
  EXPECT_EQ(decide_num_splits(decode, kLong, 0), h);
  EXPECT_EQ(decide_num_splits(prefill, kLong, 0), 1);
  EXPECT_EQ(decide_num_splits(decode, {3, 1, 0, 3, 132}, 0), 1);     // KV length unknown
  EXPECT_EQ(decide_num_splits(decode, {3, 1, 4096, 3, 0}, 0), 1);    // SM count unknown
  EXPECT_EQ(decide_num_splits(decode, {512, 1, 4096, 512, 132}, 0), 1);  // the tiles fill the GPU already
}

TEST(SplitKv, ForcedIsTakenAsAskedForPrepareToCheck) {
  const KernelPlan decode = plan_for(KernelKind::decode), prefill = plan_for(KernelKind::prefill);
  EXPECT_EQ(decide_num_splits(decode, kLong, 5, 3, 0), 5);  // no workspace: not lowered
  EXPECT_EQ(decide_num_splits(prefill, kLong, 2), 2);      // prepare_attention refuses it, naming the kernel
  EXPECT_EQ(decide_num_splits(decode, kLong, -1), -1);
}

TEST(SplitKv, MaxUsefulSplitsIsOnePerKvTile) {
  const KernelPlan decode = plan_for(KernelKind::decode), prefill = plan_for(KernelKind::prefill);
  const int bn = decode.config.block_n;
  EXPECT_EQ(max_useful_splits(decode, 1), 1);
  EXPECT_EQ(max_useful_splits(decode, bn), 1);
  EXPECT_EQ(max_useful_splits(decode, bn + 1), 2);
  EXPECT_EQ(max_useful_splits(decode, 8192), std::min(kMaxSplits, 8192 / bn));
  EXPECT_EQ(max_useful_splits(decode, 1 << 24), kMaxSplits);
  EXPECT_EQ(max_useful_splits(decode, 0), 1);    // KV length unknown
  EXPECT_EQ(max_useful_splits(prefill, 8192), 1);  // no split-KV
}

TEST(SplitKv, ForcedLosesOnlyEmptyPartsAndOnlyWhenTheWorkspaceIsShort) {
  const KernelPlan decode = plan_for(KernelKind::decode);
  const int bn = decode.config.block_n;
  const SplitShape three_tiles{3, 1, 3 * bn, 3, 132};
  const size_t per_split = attention_workspace_bytes(decode, 3, 2) / 2;
  EXPECT_EQ(decide_num_splits(decode, three_tiles, 8), 8);                  // room: as asked
  EXPECT_EQ(decide_num_splits(decode, three_tiles, 8, 0, 8 * per_split), 8);
  EXPECT_EQ(decide_num_splits(decode, three_tiles, 8, 0, 3 * per_split), 3);  // 5 empty parts dropped
  EXPECT_EQ(decide_num_splits(decode, three_tiles, 8, 0, 0), 3);            // prepare_attention names the size
  EXPECT_EQ(decide_num_splits(decode, three_tiles, 2, 0, 0), 2);            // no empty part to drop
}

TEST(SplitKv, PreferredAndHeuristicAreLoweredToTheWorkspace) {
  const KernelPlan decode = plan_for(KernelKind::decode);
  const size_t per_split = attention_workspace_bytes(decode, kLong.total_q, 2) / 2;
  EXPECT_EQ(per_split, size_t(3) * 32 * (128 + 1) * 4);
  EXPECT_EQ(decide_num_splits(decode, kLong, 0, 6), 6);
  EXPECT_EQ(decide_num_splits(decode, kLong, 0, 6, 4 * per_split), 4);
  EXPECT_EQ(decide_num_splits(decode, kLong, 0, 6, 4 * per_split - 1), 3);
  EXPECT_EQ(decide_num_splits(decode, kLong, 0, 6, 0), 1);
  EXPECT_EQ(decide_num_splits(decode, kLong, 0, 0, per_split), 1);
}

TEST(SplitKv, PartialsFollowEachOtherInTheWorkspace) {
  const KernelPlan decode = plan_for(KernelKind::decode);
  alignas(16) static float ws[4];
  const SplitPartials p = split_partials(decode, ws, 3, 2);
  EXPECT_EQ(p.o, ws);
  EXPECT_EQ(p.lse - p.o, std::ptrdiff_t(2) * 3 * 32 * 128);
  EXPECT_EQ(attention_workspace_bytes(decode, 3, 2), size_t(2) * 3 * 32 * (128 + 1) * sizeof(float));
  EXPECT_EQ(attention_workspace_bytes(decode, 3, 1), 0u);
}

}  // namespace
}  // namespace attnc
