// merge_states on the GPU against the float64 reference (check/ops_reference.h): fresh random
// inputs every run, poisoned outputs (every element and LSE must be written), bf16 and fp16, head
// sizes 8..256 (72: not a multiple of 16), LSE base e and 2, LSEs [H, T] (vLLM) and [T, H],
// +inf and -inf LSEs (one side empty, both empty: 0 and -inf), a side that dominates by 40,
// strided inputs and a head-major output, in place, without output_lse, 70000 tokens.
// Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <ostream>

#include "runtime/launch/merge_args.h"
#include "check/ops_reference.h"
#include "tests/gpu/ops_gpu_util.h"

namespace attnc {
namespace {

struct Case {
  std::string name;
  DType dtype = DType::bf16;
  int heads = 32, d = 128, tokens = 1000;
  LseBase base = LseBase::e;
  bool token_major_lse = false;  // [T, H] instead of vLLM's [H, T]
  bool out_lse = true;
  bool strided = false;          // prefix/suffix rows padded by 8 per head; output [H, T, D]
  bool in_place = false;         // output is prefix_output
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Case> cases() {
  std::vector<Case> out;
  out.push_back({"bf16_d128_vllm"});
  out.push_back({"fp16_d128_vllm", DType::fp16});
  out.push_back({"bf16_d64_base2_token_major", DType::bf16, 8, 64, 777, LseBase::two, true});
  out.push_back({"fp16_d256_base2", DType::fp16, 4, 256, 513, LseBase::two});
  out.push_back({"bf16_d72_h7", DType::bf16, 7, 72, 37});
  out.push_back({"bf16_d8_one_token", DType::bf16, 1, 8, 1});
  out.push_back({"bf16_d128_strided", DType::bf16, 16, 128, 300, LseBase::e, true, true, true});
  out.push_back({"bf16_d128_no_output_lse", DType::bf16, 8, 128, 200, LseBase::e, false, false});
  out.push_back({"fp16_d96_in_place", DType::fp16, 12, 96, 250, LseBase::two, false, true, false, true});
  out.push_back({"bf16_d128_70k_tokens", DType::bf16, 8, 128, 70000});
  return out;
}

// LSE pairs with the edge cases mixed in: one side empty (-inf, or FlashAttention-2's +inf),
// both empty, one side dominating.
void random_lse(std::mt19937_64& rng, size_t rows, std::vector<float>& p, std::vector<float>& s) {
  const float inf = std::numeric_limits<float>::infinity();
  std::uniform_real_distribution<float> dist(-4.f, 12.f);
  p.resize(rows);
  s.resize(rows);
  for (size_t r = 0; r < rows; ++r) {
    p[r] = dist(rng);
    s[r] = dist(rng);
    if (r % 11 == 3) p[r] = -inf;
    if (r % 13 == 5) s[r] = inf;
    if (r % 17 == 7) { p[r] = -inf; s[r] = inf; }
    if (r % 19 == 2) p[r] = s[r] + 40.f;
  }
}

class GpuMerge : public ::testing::TestWithParam<Case> {};

TEST_P(GpuMerge, MatchesFloat64Reference) {
  ATTNC_REQUIRE_GPU();
  const Case& c = GetParam();
  Spec spec;
  spec.dtype = c.dtype;
  spec.head_dim = spec.head_dim_v = c.d;
  spec.num_q_heads = spec.num_kv_heads = c.heads;
  spec.kernels.merge = true;
  const std::string arch = test_gpu()->arch();
  const KernelPlan plan = plan_kernel(spec, KernelKind::merge, default_config(spec, KernelKind::merge, arch), arch);
  const LoadedKernel k = load_kernel(plan);
  const int T = c.tokens, H = c.heads, D = c.d;
  const DType t = c.dtype;

  for (int run = 0; run < 2; ++run) {  // two fresh inputs: a moving error would show a race
    const std::uint64_t seed = fresh_seed();
    std::mt19937_64 rng(seed);
    const long long in_head = c.strided ? D + 8 : D, in_row = H * in_head;
    const long long out_row = c.in_place ? in_row : c.strided ? D : (long long)H * D;
    const long long out_head = c.in_place ? in_head : c.strided ? (long long)T * D : D;
    const long long lse_tok = c.token_major_lse ? H : 1, lse_head = c.token_major_lse ? 1 : T;

    // Inputs: the buffers as laid out, and dense [T, H, D] exact copies for the reference.
    std::vector<double> pre_all, suf_all;
    const auto pre_h = random_half(t, size_t(T) * in_row, rng, &pre_all);
    const auto suf_h = random_half(t, size_t(T) * in_row, rng, &suf_all);
    std::vector<double> pre(size_t(T) * H * D), suf(pre.size());
    for (int i = 0; i < T; ++i)
      for (int h = 0; h < H; ++h)
        for (int d = 0; d < D; ++d) {
          pre[(size_t(i) * H + h) * D + d] = pre_all[i * in_row + h * in_head + d];
          suf[(size_t(i) * H + h) * D + d] = suf_all[i * in_row + h * in_head + d];
        }
    std::vector<float> lp, ls;
    random_lse(rng, size_t(T) * H, lp, ls);  // dense [T, H]
    std::vector<float> lp_buf(size_t(T) * H), ls_buf(lp_buf.size());
    std::vector<double> lp_ref(lp_buf.size()), ls_ref(lp_buf.size());
    for (int i = 0; i < T; ++i)
      for (int h = 0; h < H; ++h) {
        const size_t r = size_t(i) * H + h;
        lp_buf[i * lse_tok + h * lse_head] = lp[r];
        ls_buf[i * lse_tok + h * lse_head] = ls[r];
        lp_ref[r] = lp[r];
        ls_ref[r] = ls[r];
      }

    DeviceBuffer pre_d = DeviceBuffer::from(pre_h), suf_d = DeviceBuffer::from(suf_h);
    DeviceBuffer lp_d = DeviceBuffer::from(lp_buf), ls_d = DeviceBuffer::from(ls_buf);
    DeviceBuffer out_d(size_t(T) * H * D * 2), out_lse_d(size_t(T) * H * 4);
    out_d.memset(0xff);  // NaN in bf16 and fp16
    out_lse_d.memset(0xff);

    MergeArgs a;
    a.output = c.in_place ? pre_d.as() : out_d.as();
    a.prefix_output = pre_d.as();
    a.prefix_lse = lp_d.as<float>();
    a.suffix_output = suf_d.as();
    a.suffix_lse = ls_d.as<float>();
    a.output_lse = c.out_lse ? out_lse_d.as<float>() : nullptr;
    a.num_tokens = T;
    // Strides left 0 where they are the defaults (contiguous [T, H, D], LSE [H, T]).
    const bool dense_out = !c.strided && !c.in_place, dense_lse = !c.token_major_lse;
    a.output_row_stride = dense_out ? 0 : out_row;
    a.output_head_stride = dense_out ? 0 : out_head;
    a.prefix_row_stride = a.suffix_row_stride = c.strided ? in_row : 0;
    a.prefix_head_stride = a.suffix_head_stride = c.strided ? in_head : 0;
    a.prefix_lse_token_stride = a.suffix_lse_token_stride = dense_lse ? 0 : lse_tok;
    a.prefix_lse_head_stride = a.suffix_lse_head_stride = dense_lse ? 0 : lse_head;
    if (c.out_lse && !dense_lse) {
      a.output_lse_token_stride = lse_tok;
      a.output_lse_head_stride = lse_head;
    }
    a.lse_base = c.base;
    const MergeLaunch launch = prepare_merge(plan, a);
    test_gpu()->synchronize();  // uploads and poison (legacy stream) land before the launch
    Stream stream;
    launch_merge(k.kernel, launch, stream.handle());
    stream.synchronize();

    std::vector<double> ref, ref_lse;
    reference_merge(T, H, D, c.base, pre, lp_ref, suf, ls_ref, ref, ref_lse);
    const auto got = (c.in_place ? pre_d : out_d).download<std::uint16_t>();
    long long bad = 0;
    double worst = 0;
    for (int i = 0; i < T; ++i)
      for (int h = 0; h < H; ++h)
        for (int d = 0; d < D; ++d) {
          const double r = ref[(size_t(i) * H + h) * D + d];
          const double g = from_half(t, got[i * out_row + h * out_head + d]);
          const double diff = std::abs(g - r);
          if (!(diff <= 1.5e-2 + 1e-2 * std::abs(r))) {  // NaN (never written) counts
            if (bad++ < 5)
              ADD_FAILURE() << c.name << " seed " << seed << ": out[" << i << "][" << h << "][" << d << "] = " << g
                            << ", reference " << r << " (lse " << lp[size_t(i) * H + h] << ", "
                            << ls[size_t(i) * H + h] << ")";
          }
          if (!std::isnan(diff)) worst = std::max(worst, diff);
        }
    long long bad_lse = 0;
    if (c.out_lse) {
      const auto got_lse = out_lse_d.download<float>();
      for (int i = 0; i < T; ++i)
        for (int h = 0; h < H; ++h) {
          const double r = ref_lse[size_t(i) * H + h], g = got_lse[i * lse_tok + h * lse_head];
          const bool ok = std::isinf(r) ? (std::isinf(g) && g < 0) : std::abs(g - r) <= 1e-4 + 1e-5 * std::abs(r);
          if (!ok && bad_lse++ < 5)
            ADD_FAILURE() << c.name << " seed " << seed << ": out_lse[" << i << "][" << h << "] = " << g
                          << ", reference " << r;
        }
    }
    std::printf("RESULT %-28s %-26s %s max_abs_err=%.3g bad=%lld bad_lse=%lld seed=%llu\n", c.name.c_str(),
                k.entry.c_str(), bad || bad_lse ? "FAIL" : "PASS", worst, bad, bad_lse, static_cast<unsigned long long>(seed));
    EXPECT_EQ(bad, 0) << c.name;
    EXPECT_EQ(bad_lse, 0) << c.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Grid, GpuMerge, ::testing::ValuesIn(cases()), [](const auto& info) { return info.param.name; });

// Both sides empty gives exactly 0 and -inf, whatever the partial outputs hold.
TEST(GpuMergeEdge, BothEmptyIsZeroAndMinusInf) {
  ATTNC_REQUIRE_GPU();
  Spec spec;
  spec.num_q_heads = spec.num_kv_heads = 2;
  spec.head_dim = spec.head_dim_v = 64;
  const std::string arch = test_gpu()->arch();
  const KernelPlan plan = plan_kernel(spec, KernelKind::merge, default_config(spec, KernelKind::merge, arch), arch);
  const LoadedKernel k = load_kernel(plan);
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<std::uint16_t> garbage(3 * 2 * 64, 0x7fc0);  // NaN partials must not leak
  DeviceBuffer pre = DeviceBuffer::from(garbage), suf = DeviceBuffer::from(garbage);
  DeviceBuffer lp = DeviceBuffer::from(std::vector<float>{-inf, inf, -inf, inf, -inf, -inf});
  DeviceBuffer ls = DeviceBuffer::from(std::vector<float>{inf, -inf, -inf, inf, inf, -inf});
  DeviceBuffer out(3 * 2 * 64 * 2), out_lse(6 * 4);
  out.memset(0xff);
  out_lse.memset(0xff);
  MergeArgs a;
  a.output = out.as();
  a.prefix_output = pre.as();
  a.suffix_output = suf.as();
  a.prefix_lse = lp.as<float>();
  a.suffix_lse = ls.as<float>();
  a.output_lse = out_lse.as<float>();
  a.num_tokens = 3;
  const MergeLaunch launch = prepare_merge(plan, a);
  test_gpu()->synchronize();
  Stream stream;
  launch_merge(k.kernel, launch, stream.handle());
  stream.synchronize();
  for (std::uint16_t v : out.download<std::uint16_t>()) ASSERT_EQ(v, 0) << "an empty row must be +0";
  for (float v : out_lse.download<float>()) EXPECT_TRUE(std::isinf(v) && v < 0) << v;
}

}  // namespace
}  // namespace attnc
