// generator/decode_model: the time model the decode_bw split heuristic takes its count from.
#include <gtest/gtest.h>

#include "generator/decode_model.h"

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
// 264 slots), and long contexts with few requests (split until the copies in flight saturate).
TEST(DecodeModel, SplitsOnlyWhereTheBlocksCannotSaturateTheMemory) {
  const KernelPlan p = llama_decode();
  EXPECT_EQ(best_decode_splits(p, shape(64, 8192)), 1);
  EXPECT_EQ(best_decode_splits(p, shape(128, 2048)), 1);
  EXPECT_EQ(best_decode_splits(p, shape(16, 32768)), 2);
  EXPECT_GE(best_decode_splits(p, shape(8, 131072)), 3);
  EXPECT_GE(best_decode_splits(p, shape(1, 131072)), 17);
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

TEST(DecodeModel, SplitKvRuleTakesItsCountFromTheModelForDecodeBw) {
  const KernelPlan p = llama_decode();
  EXPECT_EQ(choose_num_splits(p, 16, 1, 32768, 132), best_decode_splits(p, shape(16, 32768)));
  EXPECT_EQ(decide_num_splits(p, shape(8, 131072), 0), best_decode_splits(p, shape(8, 131072)));
}

}  // namespace
}  // namespace attnc
