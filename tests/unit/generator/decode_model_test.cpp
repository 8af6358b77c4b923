// generator/decode_model: the time model the decode_bw split heuristic takes its count from.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "generator/decode_model.h"
#include "generator/split_kv.h"

namespace attnc {
namespace {

// Llama-3-8B's attention: Hq 32, Hkv 8, d128, bf16.
KernelPlan llama_decode(const std::string& arch = "sm_90a") {
  Spec s;
  s.num_q_heads = 32;
  s.num_kv_heads = 8;
  return plan_kernel(s, KernelKind::decode, default_config(s, KernelKind::decode, arch), arch);
}

SplitShape shape(int batch, int kv_len) { return {batch, 1, kv_len, batch, 132}; }

TEST(DecodeModel, TwoDefaultBlocksFitAnSm90) {
  const KernelPlan p = llama_decode();
  ASSERT_EQ(p.family, "decode_bw");
  EXPECT_EQ(resident_blocks_per_sm(p), 2);  // 100 KB of shared memory each, 228 KB per SM
  EXPECT_NEAR(decode_bw_registers(p), 212, 8);  // ptxas, 2026-11-23
}

// Two stages take 68 KB, so three blocks would fit the shared memory, but 128 threads of ~216
// registers fit twice in 64K: counting shared memory alone, the split count for B=16 L=32768 was
// 3 (384 blocks on 264 places: 530 us on the H200, against 486 us with 2 splits).
TEST(DecodeModel, RegistersBoundTheBlocksAnSmHolds) {
  KernelPlan p = llama_decode();
  p.config.stages = 2;
  p = plan_kernel(p.spec, KernelKind::decode, p.config, "sm_90a");
  EXPECT_EQ(resident_blocks_per_sm(p), 2);
  EXPECT_EQ(best_decode_splits(p, shape(16, 32768)), 2);
  Spec d64 = p.spec;
  d64.head_dim = d64.head_dim_v = 64;  // ~144 registers: three blocks of 2 stages fit
  const KernelPlan small = plan_kernel(d64, KernelKind::decode, p.config, "sm_90a");
  EXPECT_EQ(resident_blocks_per_sm(small), 3);
}

// The dispatcher remembers a count by the key length's block_n tiles (KernelSlot::heuristic_splits):
// every length inside one tile must choose alike, on decode_bw's model and on the generic heuristic.
TEST(DecodeModel, TheChoiceSeesTheKeyLengthOnlyAsTiles) {
  KernelPlan split = llama_decode();
  split.family = "decode_split";  // the generic heuristic (split_kv.cpp)
  for (const KernelPlan& p : {llama_decode(), split}) {
    const int bn = p.config.block_n;
    for (int batch : {1, 3, 16})
      for (int tiles : {1, 2, 7, 64, 513, 8192}) {
        const int first = choose_num_splits(p, shape(batch, (tiles - 1) * bn + 1));
        for (int l = (tiles - 1) * bn + 2; l <= tiles * bn; ++l)
          ASSERT_EQ(choose_num_splits(p, shape(batch, l)), first) << p.family << " B" << batch << " L" << l;
      }
  }
}

TEST(DecodeModel, NeverBeatsTheCopyBandwidth) {
  const KernelPlan p = llama_decode();
  const DecodeModel m;
  for (auto [b, l] : {std::pair{64, 8192}, {16, 32768}, {128, 2048}, {8, 131072}, {1, 131072}})
    for (int s : {1, 2, 3, 8, 32}) {
      const double bytes = double(b) * l * 8 * 2 * (128 + 128);
      EXPECT_GE(predict_decode_seconds(p, shape(b, l), s, m), bytes / m.bandwidth * 0.999) << b << " " << l << " " << s;
    }
}

// The anchor shapes on 132 SMs: enough blocks already (no split), 128 blocks (2 splits fill the
// 264 slots), and long contexts with few requests (split until the blocks fill whole rounds: B=1
// L=131072 takes 16, 128 blocks, one a SM; 27 before, 7 % slower on the H200).
TEST(DecodeModel, SplitsOnlyWhereTheBlocksCannotSaturateTheMemory) {
  const KernelPlan p = llama_decode();
  EXPECT_EQ(best_decode_splits(p, shape(64, 8192)), 1);
  EXPECT_EQ(best_decode_splits(p, shape(128, 2048)), 1);
  EXPECT_EQ(best_decode_splits(p, shape(16, 32768)), 2);
  EXPECT_GE(best_decode_splits(p, shape(8, 131072)), 3);
  EXPECT_EQ(best_decode_splits(p, shape(1, 131072)), 16);
  EXPECT_EQ(best_decode_splits(p, shape(1, 0)), 1);  // KV length unknown
  EXPECT_EQ(best_decode_splits(p, {4, 1, 4096, 4, 0}), 1);  // SM count unknown
}

// One 128k request beside 63 of 2048 keys: counted as 64 full-length requests the model sees no
// reason to split, and the long request's 8 blocks read 67 MB each while the rest of the GPU
// idles. With the lengths' sum (260096 keys: about two full-length requests) it splits as for
// B=2 L=131072, and decode_bw's parts of one size leave each short request in one part.
TEST(DecodeModel, ARaggedBatchSplitsAsTheFullLengthRequestsItsKeysFill) {
  const KernelPlan p = llama_decode();
  SplitShape ragged = shape(64, 131072);
  EXPECT_LE(best_decode_splits(p, ragged), 2);
  ragged.seqlen_k_sum = 131072 + 63 * 2048;
  EXPECT_EQ(best_decode_splits(p, ragged), best_decode_splits(p, shape(2, 131072)));
  EXPECT_GE(best_decode_splits(p, ragged), 8);
  EXPECT_EQ(choose_num_splits(p, ragged), best_decode_splits(p, ragged));
  SplitShape uniform = shape(64, 8192);  // a sum that says the batch is full changes nothing
  uniform.seqlen_k_sum = 64LL * 8192;
  EXPECT_EQ(best_decode_splits(p, uniform), best_decode_splits(p, shape(64, 8192)));
}

// The H200 sweep (tools/decode_split_sweep.py, 2026-11-23; docs/kernels-decode.md "Split counts
// measured over B x L"): decode_bw's default config by split count, medians with L2 flushed. Each
// row names the measured optimum and its time, and the counts measured within 2 % of it: the
// model's choice must be one of them (a count that was not measured fails too).
struct MeasuredOptimum {
  int head_dim, q_heads, batch, kv_len, best_splits;
  double best_us;
  std::vector<int> within_2_percent;
};

TEST(DecodeModel, ChoosesWithin2PercentOfTheMeasuredBestOnTheH200Sweep) {
  const std::vector<MeasuredOptimum> table = {
      {128, 32, 1, 8192, 12, 24.6, {8, 12, 16}},
      {128, 32, 2, 8192, 8, 33.7, {8}},
      {128, 32, 4, 8192, 4, 51.6, {4, 8}},
      {128, 32, 8, 8192, 4, 82.5, {2, 4}},
      {128, 32, 16, 8192, 1, 140.9, {1, 2}},
      {128, 32, 1, 32768, 16, 53.8, {12, 14, 16}},
      {128, 32, 2, 32768, 8, 83.6, {7, 8, 16}},
      {128, 32, 4, 32768, 8, 145.1, {4, 8}},
      {128, 32, 8, 32768, 4, 265.6, {2, 4, 8, 12}},
      {128, 32, 16, 32768, 2, 507.1, {1, 2, 4, 6, 8}},
      {128, 32, 1, 131072, 14, 148.8, {14, 16, 32, 33}},
      {128, 32, 2, 131072, 16, 268.8, {7, 8, 16}},
      {128, 32, 4, 131072, 8, 509.7, {4, 8, 16, 24, 33}},
      {128, 32, 8, 131072, 8, 988.5, {4, 8, 12, 16}},
      {128, 32, 16, 131072, 6, 1951.2, {2, 4, 6, 8}},
      {128, 64, 16, 8192, 1, 140.6, {1, 2}},
      {128, 64, 4, 32768, 4, 144.5, {4, 8}},
      {128, 64, 1, 131072, 16, 146.9, {14, 16, 33}},
      {64, 32, 8, 8192, 4, 51.0, {4, 6, 8}},
      {64, 32, 4, 32768, 8, 83.1, {8}},
      {64, 32, 16, 32768, 2, 264.7, {2, 3}},
      {64, 32, 1, 131072, 33, 86.8, {28, 32, 33}},
  };
  for (const MeasuredOptimum& row : table) {
    Spec s;
    s.num_q_heads = row.q_heads;
    s.num_kv_heads = 8;
    s.head_dim = s.head_dim_v = row.head_dim;
    const KernelPlan p = plan_kernel(s, KernelKind::decode, default_config(s, KernelKind::decode, "sm_90a"), "sm_90a");
    const int chosen = best_decode_splits(p, shape(row.batch, row.kv_len));
    const auto& ok = row.within_2_percent;
    EXPECT_NE(std::find(ok.begin(), ok.end(), chosen), ok.end())
        << "d" << row.head_dim << " Hq" << row.q_heads << " B" << row.batch << " L" << row.kv_len << ": chose "
        << chosen << ", measured best " << row.best_splits << " splits (" << row.best_us << " us)";
  }
}

// An SM whose last round runs one block reads at one block's rate while others idle: B16 L131072
// measured 1957 us with 2 splits (256 blocks: one round of two on most SMs), 2177 with 3 (384: a
// last round of one block on 120 SMs) and 1957 with 4 (512: two rounds of two); B1 L131072 150 us
// with 16 (128 blocks, one each), 163 with 17 (136: two on 4 SMs) and 150 with 33 (264, two each).
TEST(DecodeModel, ALastRoundOfOneBlockCosts) {
  const KernelPlan p = llama_decode();
  auto at = [&](int batch, int splits) { return predict_decode_seconds(p, shape(batch, 131072), splits); };
  EXPECT_GT(at(16, 3), at(16, 2));
  EXPECT_GT(at(16, 3), at(16, 4));
  EXPECT_GT(at(1, 17), 1.05 * at(1, 16));
  EXPECT_GT(at(1, 17), 1.05 * at(1, 33));
}

TEST(DecodeModel, SplitKvRuleTakesItsCountFromTheModelForDecodeBw) {
  const KernelPlan p = llama_decode();
  EXPECT_EQ(choose_num_splits(p, 16, 1, 32768, 132), best_decode_splits(p, shape(16, 32768)));
  EXPECT_EQ(decide_num_splits(p, shape(8, 131072), 0), best_decode_splits(p, shape(8, 131072)));
}

}  // namespace
}  // namespace attnc
