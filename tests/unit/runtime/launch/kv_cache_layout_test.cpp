// Each named cache layout puts element (page, slot, head, d) of K and V where its documented
// tensor shape says, and one page of one plane is contiguous.
#include <gtest/gtest.h>

#include "runtime/launch/attention_args.h"
#include "runtime/launch/kv_cache_layout.h"

namespace attnc {
namespace {

constexpr int kBlocks = 5, kBs = 16, kHkv = 3, kD = 24;

// Row-major offset of an index in a shape.
long long flat(std::initializer_list<long long> idx, std::initializer_list<long long> shape) {
  long long off = 0;
  auto s = shape.begin();
  for (long long i : idx) off = off * *s++ + i;
  return off;
}

// Index of K (plane 0) or V (plane 1) in the layout's documented shape.
long long documented(KvCacheLayout l, int plane, int page, int slot, int head, int d) {
  switch (l) {
    case KvCacheLayout::vllm: return flat({plane, page, slot, head, d}, {2, kBlocks, kBs, kHkv, kD});
    case KvCacheLayout::fork_hnd: return flat({plane, page, head, slot, d}, {2, kBlocks, kHkv, kBs, kD});
    case KvCacheLayout::flashinfer_nhd: return flat({page, plane, slot, head, d}, {kBlocks, 2, kBs, kHkv, kD});
    case KvCacheLayout::flashinfer_hnd: return flat({page, plane, head, slot, d}, {kBlocks, 2, kHkv, kBs, kD});
  }
  return -1;
}

TEST(KvCacheLayout, MatchesTheDocumentedShapes) {
  for (KvCacheLayout l : all_kv_cache_layouts()) {
    const KvCacheStrides s = kv_cache_strides(l, kBlocks, kBs, kHkv, kD, kD);
    EXPECT_EQ(s.total_elems, 2LL * kBlocks * kBs * kHkv * kD) << to_string(l);
    for (int page : {0, 3, kBlocks - 1})
      for (int slot : {0, 7, kBs - 1})
        for (int head : {0, kHkv - 1})
          for (int d : {0, 5, kD - 1}) {
            EXPECT_EQ(s.k_index(page, slot, head, d), documented(l, 0, page, slot, head, d)) << to_string(l);
            EXPECT_EQ(s.v_index(page, slot, head, d), documented(l, 1, page, slot, head, d)) << to_string(l);
            EXPECT_EQ(s.k_index(page, slot, head, d) - s.k_index(page, 0, 0, 0), s.in_page(slot, head, d));
          }
    EXPECT_EQ(s.in_page(kBs - 1, kHkv - 1, kD - 1), s.page_elems - 1) << "a page is contiguous: " << to_string(l);
  }
}

TEST(KvCacheLayout, DifferentVDimUsesTheLargerRow) {
  const KvCacheStrides s = kv_cache_strides(KvCacheLayout::vllm, 4, 16, 2, 192, 128);
  EXPECT_EQ(s.row_dim, 192);
  EXPECT_EQ(s.row_stride, 2 * 192);
  EXPECT_EQ(s.v_offset, 4LL * 16 * 2 * 192);
}

TEST(KvCacheLayout, BindSetsPagedArguments) {
  const KvCacheStrides s = kv_cache_strides(KvCacheLayout::flashinfer_hnd, 8, 32, 2, 64, 64);
  AttentionArgs a;
  bind_kv_cache(a, s, reinterpret_cast<const void*>(0x100000));
  EXPECT_EQ(a.k, reinterpret_cast<const void*>(0x100000));
  EXPECT_EQ(a.v, reinterpret_cast<const void*>(0x100000 + 2 * 32 * 2 * 64));
  EXPECT_EQ(a.k_block_stride, 2 * 32 * 2 * 64);
  EXPECT_EQ(a.k_row_stride, 64);
  EXPECT_EQ(a.k_head_stride, 32 * 64);
  EXPECT_EQ(a.page_size, 32);
  EXPECT_EQ(a.num_blocks, 8);
}

TEST(KvCacheLayout, NamesRoundTripAndBadOnesListTheAllowed) {
  for (KvCacheLayout l : all_kv_cache_layouts()) EXPECT_EQ(parse_kv_cache_layout(to_string(l)), l);
  try {
    parse_kv_cache_layout("NHD");
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "unknown KV cache layout 'NHD'; allowed: vllm, fork_hnd, flashinfer_nhd, flashinfer_hnd");
  }
  EXPECT_THROW(kv_cache_strides(KvCacheLayout::vllm, 4, 16, 2, 60, 64), std::invalid_argument);
}

}  // namespace
}  // namespace attnc
