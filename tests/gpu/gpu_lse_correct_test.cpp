// lse_correct (decode context parallelism's LSE correction) on the GPU against the float64
// reference (check/ops_reference.h): fresh random inputs every run, poisoned outputs (every element
// and LSE must be written), bf16 and fp16, 1..8 ranks, every rank's view, LSE base e and 2, the
// gathered LSEs as [N, T, H] and as FlashAttention's [N, H, T], the reduce-scatter's chunked output
// and the plain one in place, empty shards (-inf, +inf, NaN LSEs: weight 0 even over NaN partials)
// and a rank that dominates by 40. The sum over ranks of the corrected outputs is checked against
// the reference merge of all ranks too. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <ostream>

#include "check/ops_reference.h"
#include "runtime/launch/lse_correct_args.h"
#include "tests/gpu/ops_gpu_util.h"

namespace attnc {
namespace {

struct Case {
  std::string name;
  DType dtype = DType::bf16;
  int heads = 32, d = 128, tokens = 300, world = 2;
  LseBase base = LseBase::e;
  bool head_major_lse = false;  // gathered [N, H, T] instead of [N, T, H]
  bool chunked = true;          // output [N, T, H/N, D]; else in place over the partial
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Case> cases() {
  return {
      {"bf16_d128_n2"},
      {"fp16_d128_n2_head_major", DType::fp16, 32, 128, 300, 2, LseBase::e, true},
      {"bf16_d64_n4_base2", DType::bf16, 16, 64, 513, 4, LseBase::two},
      {"bf16_d256_n8", DType::bf16, 8, 256, 77, 8},
      {"fp16_d72_n3_in_place", DType::fp16, 6, 72, 129, 3, LseBase::e, false, false},
      {"bf16_d128_n1", DType::bf16, 4, 128, 40, 1},
      {"bf16_d128_n2_40k_tokens", DType::bf16, 8, 128, 40000, 2},
  };
}

// [N, T, H] LSEs with the edge cases mixed in: ranks whose shard is empty (-inf, +inf, NaN), every
// rank empty, one rank dominating.
std::vector<float> random_lses(std::mt19937_64& rng, int n, size_t rows) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::uniform_real_distribution<float> dist(-4.f, 12.f);
  std::vector<float> l(size_t(n) * rows);
  for (auto& x : l) x = dist(rng);
  for (size_t r = 0; r < rows; ++r) {
    const size_t rank0 = r, rank_last = size_t(n - 1) * rows + r;
    if (r % 11 == 3) l[rank0] = -inf;
    if (r % 13 == 5) l[rank_last] = inf;
    if (r % 23 == 9) l[rank0] = nan;
    if (r % 17 == 7)
      for (int k = 0; k < n; ++k) l[k * rows + r] = k % 2 ? inf : -inf;
    if (r % 19 == 2) l[rank_last] = l[rank0] + 40.f;
  }
  return l;
}

class GpuLseCorrect : public ::testing::TestWithParam<Case> {};

TEST_P(GpuLseCorrect, EveryRankMatchesFloat64Reference) {
  ATTNC_REQUIRE_GPU();
  const Case& c = GetParam();
  Spec spec;
  spec.dtype = c.dtype;
  spec.head_dim = spec.head_dim_v = c.d;
  spec.num_q_heads = spec.num_kv_heads = c.heads;
  const std::string arch = test_gpu()->arch();
  const KernelPlan plan =
      plan_kernel(spec, KernelKind::lse_correct, default_config(spec, KernelKind::lse_correct, arch), arch);
  const LoadedKernel k = load_kernel(plan);
  const int T = c.tokens, H = c.heads, D = c.d, N = c.world, hc = c.chunked ? H / N : H;
  const DType t = c.dtype;
  ASSERT_EQ(H % N, 0);

  const std::uint64_t seed = fresh_seed();
  std::mt19937_64 rng(seed);
  const size_t rows = size_t(T) * H;
  const std::vector<float> lses = random_lses(rng, N, rows);  // dense [N, T, H]
  std::vector<float> lses_buf(lses.size());
  std::vector<double> lses_ref(lses.begin(), lses.end());
  for (int r = 0; r < N; ++r)
    for (int i = 0; i < T; ++i)
      for (int h = 0; h < H; ++h)
        lses_buf[r * rows + (c.head_major_lse ? size_t(h) * T + i : size_t(i) * H + h)] = lses[r * rows + i * H + h];
  DeviceBuffer lses_d = DeviceBuffer::from(lses_buf);

  std::vector<double> sum(rows * D, 0.0), all_partials;  // the ranks' corrected outputs, summed
  long long bad = 0, bad_lse = 0;
  double worst = 0;
  for (int rank = 0; rank < N; ++rank) {
    std::vector<double> partial;
    auto partial_h = random_half(t, rows * D, rng, &partial);
    for (size_t r = 0; r < rows; ++r)  // a rank with no keys may hold anything: NaN must not leak
      if (std::isnan(lses[rank * rows + r]) || lses[rank * rows + r] == -std::numeric_limits<float>::infinity())
        for (int d = 0; d < D; ++d) partial_h[r * D + d] = 0x7fc0;  // NaN in bf16 and fp16
    DeviceBuffer partial_d = DeviceBuffer::from(partial_h);
    DeviceBuffer out_d(rows * D * 2), out_lse_d(rows * 4);
    out_d.memset(0xff);  // NaN in bf16 and fp16
    out_lse_d.memset(0xff);

    LseCorrectArgs a;
    a.output = c.chunked ? out_d.as() : partial_d.as();
    a.partial = partial_d.as();
    a.lses = lses_d.as<float>();
    a.output_lse = out_lse_d.as<float>();
    a.num_tokens = T;
    a.world_size = N;
    a.rank = rank;
    a.heads_per_chunk = c.chunked ? hc : 0;
    if (c.head_major_lse) {
      a.lses_rank_stride = (long long)rows;
      a.lses_token_stride = 1;
      a.lses_head_stride = T;
      a.output_lse_token_stride = H;  // [T, H] out: not the default
      a.output_lse_head_stride = 1;
    }
    a.lse_base = c.base;
    const LseCorrectLaunch launch = prepare_lse_correct(plan, a);
    test_gpu()->synchronize();  // uploads and poison (legacy stream) land before the launch
    Stream stream;
    launch_lse_correct(k.kernel, launch, stream.handle());
    stream.synchronize();

    std::vector<double> ref, ref_lse;  // weight 0 writes 0: `partial` keeps its finite values there
    reference_lse_correct(T, H, D, N, rank, c.base, partial, lses_ref, ref, ref_lse);
    const auto got = (c.chunked ? out_d : partial_d).download<std::uint16_t>();
    const auto got_lse = out_lse_d.download<float>();
    for (int i = 0; i < T; ++i)
      for (int h = 0; h < H; ++h) {
        const size_t at = size_t(h / hc) * T * hc * D + (size_t(i) * hc + h % hc) * D;
        for (int d = 0; d < D; ++d) {
          const double r = ref[(size_t(i) * H + h) * D + d], g = from_half(t, got[at + d]);
          sum[(size_t(i) * H + h) * D + d] += g;
          const double diff = std::abs(g - r);
          if (!(diff <= 1e-2 + 8e-3 * std::abs(r)) && bad++ < 5)  // NaN (never written) counts
            ADD_FAILURE() << c.name << " seed " << seed << " rank " << rank << ": out[" << i << "][" << h << "][" << d
                          << "] = " << g << ", reference " << r << " (lse " << lses[rank * rows + i * H + h] << ")";
          if (!std::isnan(diff)) worst = std::max(worst, diff);
        }
        const double r = ref_lse[size_t(i) * H + h];
        const double g = got_lse[c.head_major_lse ? size_t(i) * H + h : size_t(h) * T + i];
        const bool ok = std::isinf(r) ? (std::isinf(g) && g < 0) : std::abs(g - r) <= 1e-4 + 1e-5 * std::abs(r);
        if (!ok && bad_lse++ < 5)
          ADD_FAILURE() << c.name << " seed " << seed << " rank " << rank << ": out_lse[" << i << "][" << h
                        << "] = " << g << ", reference " << r;
      }
    all_partials.insert(all_partials.end(), partial.begin(), partial.end());
  }
  // The point of it all: the corrected outputs summed over ranks are the attention over all keys,
  // the N partials weighted by their LSEs (merged one by one, in float64).
  // From nothing (0, -inf), so a rank with no keys counts as nothing even when it is the only one.
  std::vector<double> merged(rows * D, 0.0), merged_lse(rows, -std::numeric_limits<double>::infinity());
  for (int rank = 0; rank < N; ++rank) {
    std::vector<double> next(all_partials.begin() + rank * rows * D, all_partials.begin() + (rank + 1) * rows * D);
    std::vector<double> next_lse(lses_ref.begin() + rank * rows, lses_ref.begin() + (rank + 1) * rows);
    for (auto* l : {&next_lse, &merged_lse})  // merge takes +inf as empty; NaN is empty here too
      for (auto& x : *l)
        if (std::isnan(x)) x = -std::numeric_limits<double>::infinity();
    std::vector<double> out, out_lse;
    reference_merge(T, H, D, c.base, merged, merged_lse, next, next_lse, out, out_lse);
    merged.swap(out);
    merged_lse.swap(out_lse);
  }
  long long bad_sum = 0;
  for (size_t e = 0; e < merged.size(); ++e)
    if (!(std::abs(sum[e] - merged[e]) <= 2e-2 + 1e-2 * std::abs(merged[e])) && bad_sum++ < 5)
      ADD_FAILURE() << c.name << " seed " << seed << ": sum over ranks [" << e << "] = " << sum[e]
                    << ", merge of all ranks " << merged[e];
  std::printf("RESULT %-28s %-26s %s max_abs_err=%.3g bad=%lld bad_lse=%lld bad_sum=%lld seed=%llu\n", c.name.c_str(),
              k.entry.c_str(), bad || bad_lse || bad_sum ? "FAIL" : "PASS", worst, bad, bad_lse, bad_sum,
              static_cast<unsigned long long>(seed));
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(bad_lse, 0);
  EXPECT_EQ(bad_sum, 0);
}

INSTANTIATE_TEST_SUITE_P(Grid, GpuLseCorrect, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace attnc
