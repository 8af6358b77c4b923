// The statistics and rotation arithmetic of the measurement, without a GPU.
#include <gtest/gtest.h>

#include "generator/spec/spec_parse.h"
#include "tuner/measure.h"
#include "tuner/progress.h"

namespace attnc {
namespace {

TEST(Measure, MedianMinP90) {
  std::vector<float> ms;
  for (int i = 10; i >= 1; --i) ms.push_back(i * 0.001f);  // 1..10 us, unsorted
  const Timing t = summarize_times(ms);
  EXPECT_NEAR(t.median_us, 5.5, 1e-3);
  EXPECT_NEAR(t.min_us, 1, 1e-3);
  EXPECT_NEAR(t.p90_us, 9, 1e-3);
  EXPECT_EQ(t.repeats, 10);
  EXPECT_EQ(summarize_times({}).repeats, 0);
}

TEST(Measure, RotationSets) {
  const std::size_t l2 = 60u << 20, big = std::size_t(1) << 40;
  EXPECT_EQ(rotation_sets(16u << 20, l2, big, 2), 8);                              // 120 MiB / 16 MiB
  EXPECT_EQ(rotation_sets(std::size_t(4) << 30, l2, big, 2), 2);                   // always at least two sets
  EXPECT_EQ(rotation_sets(std::size_t(4) << 30, l2, std::size_t(5) << 30, 2), 1);  // memory caps it
  EXPECT_EQ(rotation_sets(std::size_t(4) << 30, l2, std::size_t(3) << 30, 2), 0);  // does not fit at all
  EXPECT_EQ(rotation_sets(1024, l2, big, 2), 256);
}

TEST(Measure, Throughput) {
  const Spec s = parse_spec(
      "version: 1\nname: t\nhead_dim: 128\nnum_q_heads: 32\nnum_kv_heads: 8\nmask: none\n"
      "kernels: [prefill, decode]\n",
      "t.yaml");
  // Decode: 64 x 8192 tokens x 8 heads x 256 values x 2 bytes read in 1 ms.
  EXPECT_NEAR(problem_throughput(s, KernelKind::decode, {KernelKind::decode, 64, 1, 8192}, 1000),
              64.0 * 8192 * 8 * 256 * 2 / 1e-3 / 1e12, 1e-9);
  // Prefill without a mask: 2 * q * k * Hq * (D + Dv) flops.
  EXPECT_NEAR(problem_throughput(s, KernelKind::prefill, {KernelKind::prefill, 1, 1024, 1024}, 1000),
              2.0 * 1024 * 1024 * 32 * 256 / 1e-3 / 1e12, 1e-9);
  // int8 caches: a byte per K element; int8_qk's V is 16-bit (the fork's 3-plane cache).
  const std::string int8 =
      "version: 1\nname: i\nhead_dim: 128\nnum_q_heads: 32\nnum_kv_heads: 8\ndtype: fp16\n"
      "kv_cache: {dtype: int8, layout: HND, page_size: 16}\nkernels: [decode]\nquant: ";
  EXPECT_NEAR(problem_throughput(parse_spec(int8 + "int8_qkv\n", "i.yaml"), KernelKind::decode,
                                 {KernelKind::decode, 64, 1, 8192}, 1000),
              64.0 * 8192 * 8 * 256 * 1 / 1e-3 / 1e12, 1e-9);
  EXPECT_NEAR(problem_throughput(parse_spec(int8 + "int8_qk\n", "i.yaml"), KernelKind::decode,
                                 {KernelKind::decode, 64, 1, 8192}, 1000),
              64.0 * 8192 * 8 * (128 * 1 + 128 * 2) / 1e-3 / 1e12, 1e-9);
  EXPECT_STREQ(throughput_unit(KernelKind::decode), "TB/s");
  EXPECT_STREQ(throughput_unit(KernelKind::prefill_paged), "TFLOP/s");
}

TEST(Progress, LineAndEta) {
  TuneProgress p;
  p.done = 30;
  p.total = 120;
  p.task = 1;
  p.tasks = 5;
  p.bucket = "decode b64.q1.k8192";
  p.elapsed = std::chrono::seconds(30);
  p.remaining_budget = std::chrono::minutes(10);
  EXPECT_EQ(estimate_eta(p), std::chrono::seconds(90));
  EXPECT_EQ(progress_line(p, 8), "[##......] 30/120 decode b64.q1.k8192 (2/5) ETA 1m30s");
  p.remaining_budget = std::chrono::seconds(20);  // never past the budget
  EXPECT_EQ(estimate_eta(p), std::chrono::seconds(20));
}

}  // namespace
}  // namespace attnc
