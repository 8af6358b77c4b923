// Test page tables: distinct pages, the top page always used, the decoy nowhere a request looks,
// and each form giving back the KV lengths it was built from.
#include <gtest/gtest.h>

#include <set>

#include "check/page_table_builder.h"

namespace attnc {
namespace {

const std::vector<int> kLens{1, 16, 17, 0, 300, 48};

std::vector<int> lengths_from(const HostPageTable& t, int page_size) {
  std::vector<int> out;
  for (size_t b = 0; b + 1 < t.kv_indptr.size(); ++b) {
    const int n = t.kv_indptr[b + 1] - t.kv_indptr[b];
    out.push_back(n ? (n - 1) * page_size + t.kv_last_page_len[b] : 0);
  }
  return out;
}

TEST(PageTableBuilder, PagesAreDistinctAndIncludeTheTopPage) {
  std::mt19937_64 rng(7);
  PageTableOptions opt;
  opt.num_blocks = 64;
  const HostPageTable t = build_page_table(kLens, opt, rng);
  std::set<int> seen;
  for (size_t b = 0; b < kLens.size(); ++b) {
    EXPECT_EQ(int(t.pages[b].size()), (kLens[b] + 15) / 16);
    for (int p : t.pages[b]) {
      EXPECT_TRUE(p >= 0 && p < 64);
      EXPECT_TRUE(seen.insert(p).second) << "page " << p << " used twice";
    }
  }
  EXPECT_TRUE(seen.count(63)) << "the top page must be used";
  EXPECT_FALSE(seen.count(t.decoy_page));
  EXPECT_EQ(t.pages_used(), int(seen.size()));
}

TEST(PageTableBuilder, BlockTableIsAColumnOffsetView) {
  std::mt19937_64 rng(1);
  PageTableOptions opt;
  opt.form = PageTableForm::cu_seqlens_k;
  opt.num_blocks = 100;
  opt.column_offset = 3;
  const HostPageTable t = build_page_table(kLens, opt, rng);
  EXPECT_EQ(t.max_blocks_per_seq, 19);  // 300 / 16 rounded up
  EXPECT_EQ(t.table_stride, 3 + 19 + 1);
  for (size_t b = 0; b < kLens.size(); ++b)
    for (int j = 0; j < t.table_stride; ++j) {
      const int entry = t.block_table[b * t.table_stride + j], logical = j - 3;
      if (logical >= 0 && logical < int(t.pages[b].size())) EXPECT_EQ(entry, t.pages[b][logical]);
      else EXPECT_EQ(entry, t.decoy_page);
    }
  EXPECT_EQ(t.cu_seqlens_k, (std::vector<int>{0, 1, 17, 34, 34, 334, 382}));
  EXPECT_TRUE(t.seqused_k.empty());
}

TEST(PageTableBuilder, FlashInferIndptrStartsPastUnusedEntries) {
  std::mt19937_64 rng(2);
  PageTableOptions opt;
  opt.form = PageTableForm::flashinfer;
  opt.page_size = 16;
  opt.num_blocks = 100;
  opt.indptr_offset = 5;
  const HostPageTable t = build_page_table(kLens, opt, rng);
  EXPECT_EQ(t.kv_indptr.front(), 5);
  EXPECT_EQ(int(t.kv_indices.size()), t.kv_indptr.back() + 2);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(t.kv_indices[i], t.decoy_page);
  EXPECT_EQ(lengths_from(t, 16), kLens);
  EXPECT_TRUE(t.block_table.empty());
}

TEST(PageTableBuilder, RefusesACacheTooSmall) {
  std::mt19937_64 rng(3);
  PageTableOptions opt;
  opt.num_blocks = 26;  // the batch needs 26 pages plus the decoy
  EXPECT_THROW(build_page_table(kLens, opt, rng), std::invalid_argument);
  opt.num_blocks = 27;
  EXPECT_NO_THROW(build_page_table(kLens, opt, rng));
}

}  // namespace
}  // namespace attnc
