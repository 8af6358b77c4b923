// The harness's paged cache, end to end on the host: page images written into a poisoned cache,
// page tables in every form, prepare_attention's params, and the addressing the kernels document
// (templates/attnc/params/params.h) read back exactly the logical K/V, for every layout, form and a
// V head dim different from K's. What the GPU grid relies on before any kernel runs.
#include <gtest/gtest.h>

#include <random>

#include "runtime/launch/attention_args.h"
#include "check/half.h"
#include "check/kv_cache_fill.h"

namespace attnc {
namespace {

// Element `d` of token n, kv head h of request `seq`, through AttentionParams as the kernel
// reads it (KvSource<true>); plane 0 = K, 1 = V.
std::uint16_t read_through_params(const AttentionParams& p, int plane, int seq, int n, int h, int d, int& sk) {
  const int* pages;
  if (p.kv_indptr) {
    const int lo = p.kv_indptr[seq], hi = p.kv_indptr[seq + 1];
    pages = p.kv_indices + lo;
    sk = hi > lo ? (hi - lo - 1) * p.page_size + p.kv_last_page_len[seq] : 0;
  } else {
    pages = p.block_table + seq * p.block_table_stride;
    sk = p.seqused_k ? p.seqused_k[seq] : p.cu_seqlens_k[seq + 1] - p.cu_seqlens_k[seq];
  }
  const auto* base = static_cast<const std::uint16_t*>(plane ? p.v : p.k);
  const long long block = plane ? p.v_block_stride : p.k_block_stride, row = plane ? p.v_row_stride : p.k_row_stride,
                  head = plane ? p.v_head_stride : p.k_head_stride;
  const int lp = n / p.page_size;
  return base[pages[lp] * block + (n - lp * p.page_size) * row + h * head + d];
}

struct Shape {
  int d, dv, hkv, page_size;
};

void check_round_trip(KvCacheLayout layout, PageTableForm form, Shape sh, int column_offset) {
  SCOPED_TRACE(std::string(to_string(layout)) + " " + to_string(form) + " d" + std::to_string(sh.d) + "v" +
               std::to_string(sh.dv) + " bs" + std::to_string(sh.page_size));
  std::mt19937_64 rng(42);
  const std::vector<int> lens = {1, sh.page_size, sh.page_size + 1, 0, 3 * sh.page_size - 5};
  std::vector<int> cu = {0};
  for (int l : lens) cu.push_back(cu.back() + l);
  std::vector<std::uint16_t> k(size_t(cu.back()) * sh.hkv * sh.d), v(size_t(cu.back()) * sh.hkv * sh.dv);
  for (size_t i = 0; i < k.size(); ++i) k[i] = std::uint16_t(i % 30000);  // finite, distinct enough
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::uint16_t(30000 + i % 30000);

  PageTableOptions opt{form, sh.page_size, 64, column_offset, 4};
  const HostPageTable t = build_page_table(lens, opt, rng);
  const KvCacheStrides s = kv_cache_strides(layout, 64, sh.page_size, sh.hkv, sh.d, sh.dv);
  std::vector<std::uint16_t> cache(s.total_elems + 8, kHalfPoison);
  std::uint16_t* aligned = cache.data() + (8 - reinterpret_cast<std::uintptr_t>(cache.data()) % 16 / 2) % 8;
  long long written = 0;
  for_each_page_image(s, t, cu, k, v, sh.d, sh.dv, [&](long long off, const std::vector<std::uint16_t>& img) {
    ASSERT_LE(off + (long long)img.size(), s.total_elems);
    std::copy(img.begin(), img.end(), aligned + off);
    written += img.size();
  });
  EXPECT_EQ(written, 2LL * t.pages_used() * s.page_elems);

  Spec spec;
  spec.head_dim = sh.d;
  spec.head_dim_v = sh.dv;
  spec.num_q_heads = sh.hkv;
  spec.num_kv_heads = sh.hkv;
  const KernelPlan plan = plan_kernel(spec, KernelKind::decode, default_config(spec, KernelKind::decode, "sm_90a"), "sm_90a");
  AttentionArgs a;
  alignas(16) static std::uint16_t q_o[16];
  a.q = q_o;
  a.o = q_o;
  a.batch = int(lens.size());
  a.total_q = a.batch;
  a.max_seqlen_q = 1;
  bind_kv_cache(a, s, aligned);
  AttentionHostMetadata h;
  if (form == PageTableForm::flashinfer) {
    a.kv_indptr = h.kv_indptr = t.kv_indptr.data();
    a.kv_indices = h.kv_indices = t.kv_indices.data();
    a.kv_last_page_len = h.kv_last_page_len = t.kv_last_page_len.data();
    h.num_kv_indices = int(t.kv_indices.size());
  } else {
    a.block_table = h.block_table = t.block_table.data() + column_offset;
    a.block_table_stride = t.table_stride;
    a.max_blocks_per_seq = t.max_blocks_per_seq;
    if (form == PageTableForm::seqused_k) a.seqused_k = h.seqused_k = t.seqused_k.data();
    else a.cu_seqlens_k = h.cu_seqlens_k = t.cu_seqlens_k.data();
  }
  a.host = &h;
  a.num_splits = 1;
  const AttentionParams p = prepare_attention(plan, a).params;

  for (int b = 0; b < a.batch; ++b) {
    int sk = -1;
    if (lens[b] == 0) {
      read_through_params(p, 0, b, 0, 0, 0, sk);  // only the length is used: page 0 of an empty row
      EXPECT_EQ(sk, 0);
      continue;
    }
    for (int n = 0; n < lens[b]; ++n)
      for (int hh = 0; hh < sh.hkv; ++hh) {
        for (int d = 0; d < sh.d; ++d)
          ASSERT_EQ(read_through_params(p, 0, b, n, hh, d, sk), k[(size_t(cu[b] + n) * sh.hkv + hh) * sh.d + d])
              << "K request " << b << " token " << n << " head " << hh << " d " << d;
        for (int d = 0; d < sh.dv; ++d)
          ASSERT_EQ(read_through_params(p, 1, b, n, hh, d, sk), v[(size_t(cu[b] + n) * sh.hkv + hh) * sh.dv + d])
              << "V request " << b << " token " << n << " head " << hh << " d " << d;
      }
    EXPECT_EQ(sk, lens[b]);
    // The slot after the last token of a partial page is still poison.
    if (lens[b] % sh.page_size) {
      int ignored;
      EXPECT_EQ(read_through_params(p, 0, b, lens[b], 0, 0, ignored), kHalfPoison);
    }
  }
}

TEST(KvCacheFill, EveryLayoutAndFormReadsBackTheLogicalKv) {
  for (KvCacheLayout layout : all_kv_cache_layouts())
    for (PageTableForm form : all_page_table_forms()) {
      check_round_trip(layout, form, {64, 64, 2, 16}, 0);
      check_round_trip(layout, form, {40, 40, 3, 48}, 3);
    }
}

TEST(KvCacheFill, VHeadDimSmallerThanK) {
  for (KvCacheLayout layout : all_kv_cache_layouts()) check_round_trip(layout, PageTableForm::seqused_k, {192, 128, 2, 32}, 2);
}

}  // namespace
}  // namespace attnc
