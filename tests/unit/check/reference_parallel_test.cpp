// The parallel reference (pieces of requests x heads x query rows) gives exactly what the serial
// one gives, with every feature on.
#include <gtest/gtest.h>

#include <random>

#include "check/reference.h"

namespace attnc {
namespace {

std::vector<double> normal(size_t n, std::mt19937_64& rng) {
  std::normal_distribution<double> d;
  std::vector<double> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

TEST(ReferenceParallel, MatchesSerial) {
  std::mt19937_64 rng(11);
  ReferenceOptions opt;
  opt.head_dim = 16;
  opt.head_dim_v = 8;
  opt.num_q_heads = 6;
  opt.num_kv_heads = 2;
  opt.window_left = 40;
  opt.window_right = 0;
  opt.softcap = 20;
  opt.alibi = Alibi::sqrt;
  const std::vector<double> slopes = {0.5, 0.25, 0.125, 0.0625, 0.03, 0.01}, sinks = normal(6, rng);
  opt.alibi_slopes = &slopes;
  opt.sinks = &sinks;
  const std::vector<int> cu_q = {0, 1, 600, 600, 700}, cu_k = {0, 5, 1400, 1400, 1420};
  const auto q = normal(700 * 6 * 16, rng), k = normal(1420 * 2 * 16, rng), v = normal(1420 * 2 * 8, rng);
  std::vector<double> o1, l1, o2, l2;
  reference_attention(opt, cu_q, cu_k, q, k, v, o1, l1);
  reference_attention_parallel(opt, cu_q, cu_k, q, k, v, o2, l2, 4);
  EXPECT_EQ(o1, o2);
  EXPECT_EQ(l1, l2);
}

}  // namespace
}  // namespace attnc
