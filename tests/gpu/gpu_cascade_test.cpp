// Cascade attention on the GPU (runtime/launch/cascade.h: prefix pass, suffix pass, merge) against the
// float64 reference attention over each request's whole KV, gathered from the paged cache. Fresh
// random inputs every run; output and workspace poisoned; a vLLM-layout cache (2, nb, bs, Hkv, D)
// with shuffled pages, shared prefix pages at the start of every block-table row, a row stride
// wider than max_blocks_per_seq, unused entries -1. Cases: decode batches (one query each) and
// mixed prefill, suffixes exactly as long as the queries, GQA 1/2/4, head dims 64/128/256, page
// sizes 16/64, bf16 and fp16, softcap, sinks (applied once), a non-causal spec, a query that is a
// strided view of fused QKV. Skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <ostream>

#include "runtime/launch/cascade_program.h"
#include "check/reference.h"
#include "tests/gpu/ops_gpu_util.h"

namespace attnc {
namespace {

struct Case {
  std::string name;
  DType dtype = DType::bf16;
  int hq = 8, hkv = 2, d = 128;
  MaskKind mask = MaskKind::causal;
  float softcap = 0;
  bool sinks = false;
  int page_size = 16;
  int prefix_pages = 16;
  std::vector<int> q_lens = {};
  int max_extra = 100;   // suffix_kv_len = q_len + uniform [0, max_extra]
  bool fused_q = false;  // query is a view of [T, (Hq + 2 Hkv) * D]
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Case> cases() {
  const std::vector<int> decode(16, 1), mixed{1, 7, 33, 1, 120, 5, 64, 1, 2, 17};
  std::vector<Case> out;
  Case c{"bf16_d128_g4_decode"};
  c.q_lens = decode;
  c.prefix_pages = 32;
  c.max_extra = 200;
  out.push_back(c);
  c = {"bf16_d128_g4_mixed_fused_q"};
  c.q_lens = mixed;
  c.fused_q = true;
  out.push_back(c);
  c = {"bf16_d128_g4_suffix_is_query"};
  c.q_lens = mixed;
  c.max_extra = 0;
  out.push_back(c);
  c = {"fp16_d64_g1_page64", DType::fp16, 4, 4, 64};
  c.page_size = 64;
  c.prefix_pages = 2;
  c.q_lens = mixed;
  out.push_back(c);
  c = {"bf16_d256_g2", DType::bf16, 4, 2, 256};
  c.q_lens = mixed;
  out.push_back(c);
  c = {"bf16_d128_softcap30"};
  c.softcap = 30;
  c.q_lens = mixed;
  out.push_back(c);
  c = {"bf16_d128_sinks"};
  c.sinks = true;
  c.q_lens = mixed;
  out.push_back(c);
  c = {"bf16_d128_sinks_decode"};
  c.sinks = true;
  c.q_lens = decode;
  out.push_back(c);
  c = {"bf16_d128_nomask", DType::bf16, 8, 2, 128, MaskKind::none};
  c.q_lens = mixed;
  out.push_back(c);
  return out;
}

class GpuCascade : public ::testing::TestWithParam<Case> {};

TEST_P(GpuCascade, MatchesFullAttention) {
  ATTNC_REQUIRE_GPU();
  const Case& c = GetParam();
  Spec spec;
  spec.dtype = c.dtype;
  spec.head_dim = spec.head_dim_v = c.d;
  spec.num_q_heads = c.hq;
  spec.num_kv_heads = c.hkv;
  spec.mask = {c.mask, -1, -1};
  spec.softcap = c.softcap;
  spec.sinks = c.sinks;
  spec.kernels.prefill = spec.kernels.merge = true;
  const CascadeProgram program(spec, test_gpu()->arch());
  const DType t = c.dtype;
  const int R = int(c.q_lens.size()), ps = c.page_size, P = c.prefix_pages * ps;
  const int hq = c.hq, hkv = c.hkv, D = c.d;

  for (int run = 0; run < 2; ++run) {
    const std::uint64_t seed = fresh_seed();
    std::mt19937_64 rng(seed);

    // Lengths: each request's queries are the last q_len of its suffix.
    std::vector<int> cu_q(R + 1, 0), suffix(R), seq(R);
    std::uniform_int_distribution<int> extra(0, c.max_extra);
    for (int b = 0; b < R; ++b) {
      cu_q[b + 1] = cu_q[b] + c.q_lens[b];
      suffix[b] = c.q_lens[b] + extra(rng);
      seq[b] = P + suffix[b];
    }
    const int T = cu_q[R];
    const int max_q = *std::max_element(c.q_lens.begin(), c.q_lens.end());

    // Pages: shared prefix pages, each request's own suffix pages, and 20 never referenced, shuffled.
    int pages_needed = c.prefix_pages, max_pages = 0;
    for (int b = 0; b < R; ++b) {
      pages_needed += (suffix[b] + ps - 1) / ps;
      max_pages = std::max(max_pages, (seq[b] + ps - 1) / ps);
    }
    const int nb = pages_needed + 20, max_blocks = max_pages + 1, stride = max_blocks + 3;
    std::vector<int> ids(nb);
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), rng);
    std::vector<int> table(size_t(R) * stride, -1);
    int next = c.prefix_pages;
    for (int b = 0; b < R; ++b) {
      for (int j = 0; j < c.prefix_pages; ++j) table[b * stride + j] = ids[j];
      for (int j = c.prefix_pages; j < (seq[b] + ps - 1) / ps; ++j) table[b * stride + j] = ids[next++];
      for (int j = max_blocks; j < stride; ++j) table[b * stride + j] = 0x3fffffff;  // past the usable columns
    }

    // Cache (2, nb, ps, hkv, D) and query, random; exact copies for the reference.
    const long long page_stride = (long long)hkv * D, block_stride = (long long)ps * hkv * D;
    const size_t plane = size_t(nb) * block_stride;
    std::vector<double> cache_x;
    const auto cache_h = random_half(t, 2 * plane, rng, &cache_x);
    const long long q_row = c.fused_q ? (long long)(hq + 2 * hkv) * D : (long long)hq * D;
    std::vector<double> q_all;
    const auto q_h = random_half(t, size_t(T) * q_row, rng, &q_all);
    std::vector<double> q(size_t(T) * hq * D);
    for (int i = 0; i < T; ++i)
      for (int e = 0; e < hq * D; ++e) q[size_t(i) * hq * D + e] = q_all[i * q_row + e];
    std::vector<double> sinks_x;
    std::vector<float> sinks_f;
    if (c.sinks) {
      std::normal_distribution<float> dist(4.f, 1.5f);  // large enough that counting it twice shows
      for (int h = 0; h < hq; ++h) {
        sinks_f.push_back(dist(rng));
        sinks_x.push_back(sinks_f.back());
      }
    }

    // Reference: each request's whole KV gathered in token order.
    std::vector<int> cu_k(R + 1, 0);
    for (int b = 0; b < R; ++b) cu_k[b + 1] = cu_k[b] + seq[b];
    std::vector<double> k(static_cast<size_t>(cu_k[R]) * hkv * D), v(k.size());
    for (int b = 0; b < R; ++b)
      for (int j = 0; j < seq[b]; ++j) {
        const size_t src = size_t(table[b * stride + j / ps]) * block_stride + (j % ps) * page_stride;
        const size_t dst = size_t(cu_k[b] + j) * hkv * D;
        std::copy_n(&cache_x[src], hkv * D, &k[dst]);
        std::copy_n(&cache_x[plane + src], hkv * D, &v[dst]);
      }
    ReferenceOptions opt;
    opt.head_dim = opt.head_dim_v = D;
    opt.num_q_heads = hq;
    opt.num_kv_heads = hkv;
    opt.causal = c.mask == MaskKind::causal;
    opt.softcap = c.softcap;
    opt.sinks = c.sinks ? &sinks_x : nullptr;
    std::vector<double> ref_o, ref_lse;
    reference_attention(opt, cu_q, cu_k, q, k, v, ref_o, ref_lse);

    DeviceBuffer cache_d = DeviceBuffer::from(cache_h), q_d = DeviceBuffer::from(q_h);
    DeviceBuffer table_d = DeviceBuffer::from(table), cu_q_d = DeviceBuffer::from(cu_q);
    DeviceBuffer cu_pre_d = DeviceBuffer::from(std::vector<int>{0, T});
    DeviceBuffer pre_len_d = DeviceBuffer::from(std::vector<int>{P}), suffix_d = DeviceBuffer::from(suffix);
    DeviceBuffer sinks_d = DeviceBuffer::from(c.sinks ? sinks_f : std::vector<float>{0.f});
    DeviceBuffer out_d(size_t(T) * hq * D * 2);
    DeviceBuffer ws_d(cascade_workspace_bytes(program.plans(), T));
    out_d.memset(0xff);
    ws_d.memset(0xff);  // a row the passes miss would merge into NaN

    CascadeArgs a;
    a.query = q_d.as();
    a.key_cache = cache_d.as();
    a.value_cache = cache_d.as<std::uint16_t>() + plane;
    a.output = out_d.as();
    a.q_row_stride = q_row;
    a.k_row_stride = a.v_row_stride = page_stride;
    a.k_head_stride = a.v_head_stride = D;
    a.k_block_stride = a.v_block_stride = block_stride;
    a.page_size = ps;
    a.num_blocks = nb;
    a.num_tokens = T;
    a.num_reqs = R;
    a.cu_query_lens = cu_q_d.as<const int>();
    a.max_query_len = max_q;
    a.cu_prefix_query_lens = cu_pre_d.as<const int>();
    a.prefix_kv_lens = pre_len_d.as<const int>();
    a.suffix_kv_lens = suffix_d.as<const int>();
    a.common_prefix_len = P;
    a.max_kv_len = *std::max_element(seq.begin(), seq.end());
    a.block_table = table_d.as<const int>();
    a.block_table_stride = stride;
    a.max_blocks_per_seq = max_blocks;
    a.sinks = c.sinks ? sinks_d.as<const float>() : nullptr;
    a.workspace = ws_d.as();
    a.workspace_bytes = ws_d.size();
    const CascadeHostMetadata host{cu_q.data(), suffix.data(), table.data()};
    a.host = &host;
    const CascadeLaunch launch = prepare_cascade(program.plans(), a);
    test_gpu()->synchronize();  // uploads and poison (legacy stream) land before the launches
    Stream stream;
    launch_cascade(program.kernels(), launch, stream.handle());
    stream.synchronize();

    const auto got = out_d.download<std::uint16_t>();
    long long bad = 0;
    double worst = 0, num = 0, den = 0;
    for (size_t i = 0; i < ref_o.size(); ++i) {
      const double g = from_half(t, got[i]), r = ref_o[i], diff = std::abs(g - r);
      num += (g - r) * (g - r);
      den += r * r;
      if (!(diff <= 1.5e-2 + 1e-2 * std::abs(r)) && bad++ < 5) {
        const size_t row = i / D;
        ADD_FAILURE() << c.name << " seed " << seed << ": out[token " << row / hq << "][head " << row % hq << "][" << i % D
                      << "] = " << g << ", reference " << r;
      }
      if (!std::isnan(diff)) worst = std::max(worst, diff);
    }
    const double rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
    std::printf("RESULT %-30s T=%-4d R=%-3d prefix=%-4d %s max_abs_err=%.3g rel_l2=%.3g bad=%lld seed=%llu\n",
                c.name.c_str(), T, R, P, bad || !(rel_l2 < 1e-2) ? "FAIL" : "PASS", worst, rel_l2, bad, static_cast<unsigned long long>(seed));
    EXPECT_EQ(bad, 0) << c.name;
    EXPECT_LT(rel_l2, 1e-2) << c.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Grid, GpuCascade, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace attnc
