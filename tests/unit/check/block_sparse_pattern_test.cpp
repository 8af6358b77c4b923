// The kernels' in-kernel block-sparse pattern (templates/attnc/features/block_sparse.cuh, compiled
// here for the host) against the seed's formulas (check/block_sparse_reference.h), exhaustively on
// small sequences for several parameter sets: the element test is exact; the prefill tile list
// visits exactly the tiles holding a visible key; the skip test never skips such a tile; a tile
// called full has every causal key visible. Plus the seed's documented cases by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "check/block_sparse_reference.h"

using std::max;
using std::min;
#define __device__
#include "attnc/features/block_sparse.cuh"
#undef __device__

namespace attnc {
namespace {

SparsePattern pattern(int bs, int local, int vs, int step, int begin, int qbs, int group) {
  SparsePattern p;
  p.enabled = true;
  p.block_size = bs;
  p.local_blocks = local;
  p.vert_stride = vs;
  p.head_sliding_step = step;
  p.head_begin = begin;
  p.q_block_size = qbs;
  p.group = group;
  return p;
}

constexpr int kHeads = 8, kSeq = 600;

// Whether any query at [p0, p1] of heads [h0, h1] sees a key of [j0, j1).
bool any_visible(const SparsePattern& p, int p0, int p1, int j0, int j1, int h0, int h1) {
  for (int h = h0; h <= h1; ++h)
    for (int pos = max(p0, 0); pos <= p1; ++pos)
      for (int j = j0; j < j1; ++j)
        if (sparse_visible(p, pos, j, h)) return true;
  return false;
}

template <class P, int BN>
void check_tiles(const SparsePattern& ref, int bm) {
  for (int p0 = 0; p0 < kSeq; p0 += bm) {
    const int p1 = min(p0 + bm, kSeq) - 1, end = (p1 + BN) / BN;  // the causal mask's tiles
    for (int h = 0; h < kHeads; ++h) {
      const typename P::template Tiles<BN> tiles(p0, p1, 0, end, h);
      std::vector<int> listed;
      for (int i = 0, t = tiles.first(); i < tiles.count(); ++i, t = tiles.next(t)) listed.push_back(t);
      std::vector<int> expected;
      for (int t = 0; t < end; ++t)
        if (any_visible(ref, p0, p1, t * BN, (t + 1) * BN, h, h)) expected.push_back(t);
      ASSERT_EQ(listed, expected) << "BN " << BN << " rows [" << p0 << ", " << p1 << "] head " << h;
    }
    for (int h0 = 0; h0 < kHeads; h0 += ref.group)
      for (int t = 0; t < end; ++t) {
        const int h1 = h0 + ref.group - 1, j0 = t * BN, j1 = j0 + BN;
        if (any_visible(ref, p0, p1, j0, j1, h0, h1)) {
          ASSERT_TRUE(P::tile_visible(p0, p1, j0, j1, h0, h1)) << "skipped a visible tile " << t << " rows " << p0;
        }
        if (!P::tile_full(p0, p1, j0, j1, h0, h1)) continue;
        for (int h = h0; h <= h1; ++h)
          for (int pos = p0; pos <= p1; ++pos)
            for (int j = j0; j < min(j1, pos + 1); ++j)
              ASSERT_TRUE(sparse_visible(ref, pos, j, h)) << "full tile " << t << " hides " << pos << "," << j;
      }
  }
}

// prefill_sm90's mixed tiles: the blocks the list covers, in order, are exactly the blocks holding
// a visible key (none twice, none skipped); wide tiles (two blocks) cover the local band but its
// first block when the band is odd, narrow tiles (one block) everything else.
template <class P, int BS, int LOCAL, int QBS>
void check_mixed_tiles(const SparsePattern& ref, int bm) {
  for (int p0 = 0; p0 < kSeq; p0 += bm) {
    const int p1 = min(p0 + bm, kSeq) - 1, end = p1 / BS + 1;  // the causal mask's blocks
    const int band = LOCAL > 0 ? max(0, p0 / QBS * (QBS / BS) - LOCAL + 1) : end;
    for (int h = 0; h < kHeads; ++h) {
      const typename P::MixedTiles tiles(p0, p1, 0, end, h);
      std::vector<int> covered;
      int wide = 0, narrow_in_band = 0;
      for (int i = 0, t = tiles.first(); i < tiles.count(); ++i, t = tiles.next(t)) {
        const int kb = P::MixedTiles::block(t);
        ASSERT_EQ(P::MixedTiles::keys(t), P::MixedTiles::wide(t) ? 2 * BS : BS);
        covered.push_back(kb);
        if (P::MixedTiles::wide(t)) {
          covered.push_back(kb + 1);
          ++wide;
          ASSERT_GE(kb, band) << "wide tile below the band, rows [" << p0 << ", " << p1 << "] head " << h;
        } else if (kb >= band) {
          ++narrow_in_band;
          ASSERT_EQ(kb, band) << "narrow tile inside the band, rows [" << p0 << ", " << p1 << "] head " << h;
        }
      }
      ASSERT_EQ(tiles.from(end), 2 * end) << "the list ends at the mask's end";
      std::vector<int> expected;
      for (int kb = 0; kb < end; ++kb)
        if (any_visible(ref, p0, p1, kb * BS, (kb + 1) * BS, h, h)) expected.push_back(kb);
      ASSERT_EQ(covered, expected) << "rows [" << p0 << ", " << p1 << "] head " << h;
      ASSERT_EQ(wide, (end - band) / 2) << "rows [" << p0 << ", " << p1 << "] head " << h;
      ASSERT_EQ(narrow_in_band, (end - band) % 2);
    }
  }
}

// prefill_sm90's paired tiles: the blocks the tiles' halves cover (the first, then the second
// unless the tile is single), in order, are exactly the blocks holding a visible key; only the
// last tile may be single. A half the consumers call full for one warpgroup's 64 rows hides no
// causal key of those rows.
template <class P, int BS>
void check_paired_tiles(const SparsePattern& ref, int bm) {
  using Paired = typename P::PairedTiles;
  for (int p0 = 0; p0 < kSeq; p0 += bm) {
    const int p1 = min(p0 + bm, kSeq) - 1, end = p1 / BS + 1;  // the causal mask's blocks
    for (int h = 0; h < kHeads; ++h) {
      const Paired tiles(p0, p1, 0, end, h);
      std::vector<int> covered;
      for (int i = 0, t = tiles.first(); i < tiles.count(); ++i, t = tiles.next(t)) {
        covered.push_back(Paired::first_block(t));
        if (!Paired::single(t)) covered.push_back(Paired::second_block(t));
        else ASSERT_EQ(i, tiles.count() - 1) << "a single block before the end, rows [" << p0 << ", " << p1 << "]";
        ASSERT_EQ(Paired::second_block(t), Paired::single(t) ? Paired::first_block(t) : covered.back());
      }
      std::vector<int> expected;
      for (int kb = 0; kb < end; ++kb)
        if (any_visible(ref, p0, p1, kb * BS, (kb + 1) * BS, h, h)) expected.push_back(kb);
      ASSERT_EQ(covered, expected) << "rows [" << p0 << ", " << p1 << "] head " << h;
      for (int w0 = p0; w0 <= p1; w0 += 64)
        for (int kb : covered) {
          if (!P::tile_full(w0, w0 + 63, kb * BS, (kb + 1) * BS, h, h)) continue;
          for (int pos = w0; pos <= min(w0 + 63, kSeq - 1); ++pos)
            for (int j = kb * BS; j < min((kb + 1) * BS, pos + 1); ++j)
              ASSERT_TRUE(sparse_visible(ref, pos, j, h)) << "full half " << kb << " hides " << pos << "," << j;
        }
    }
  }
}

template <int BS, int LOCAL, int VS, int STEP, int BEGIN, int QBS, int G>
void check_pattern() {
  using P = LocalStrided<BS, LOCAL, VS, STEP, BEGIN, QBS, G>;
  const SparsePattern ref = pattern(BS, LOCAL, VS, STEP, BEGIN, QBS, G);
  for (int h = 0; h < kHeads; ++h) {
    const typename P::Row row(h);
    for (int pos = 0; pos < kSeq; ++pos)
      for (int j = 0; j <= pos; ++j)
        ASSERT_EQ(row.allowed(pos, j), sparse_visible(ref, pos, j, h)) << "head " << h << " q " << pos << " k " << j;
  }
  check_tiles<P, 64>(ref, 128);
  check_tiles<P, 128>(ref, 128);
  check_tiles<P, 16>(ref, 64);
  check_tiles<P, 48>(ref, 192);
  // q tiles of 2, 3 and 8 sparse blocks, and of 100 rows (straddling blocks)
  for (int bm : {2 * BS, 3 * BS, 8 * BS, 100}) check_mixed_tiles<P, BS, LOCAL, QBS>(ref, bm);
  for (int bm : {128, 192, 2 * BS, 3 * BS, 100}) check_paired_tiles<P, BS>(ref, bm);
}

TEST(BlockSparsePattern, Phi3SmallShapeScaledDown) { check_pattern<16, 4, 8, 1, 0, 16, 4>(); }
TEST(BlockSparsePattern, LargeBlocks) { check_pattern<64, 2, 3, 1, 0, 64, 2>(); }
TEST(BlockSparsePattern, HomoHead) { check_pattern<32, 3, 4, 0, 0, 32, 1>(); }
TEST(BlockSparsePattern, SlideOnKvHeadsWithRank) { check_pattern<16, 2, 5, -1, 8, 16, 2>(); }
TEST(BlockSparsePattern, StepTwoWithRank) { check_pattern<16, 1, 6, 2, 5, 16, 1>(); }
TEST(BlockSparsePattern, QueryBlockOfThreeRows) { check_pattern<16, 2, 4, 1, 0, 48, 2>(); }
TEST(BlockSparsePattern, NoLocalBlocks) { check_pattern<16, 0, 3, 1, 0, 32, 1>(); }
TEST(BlockSparsePattern, VertStrideOneIsDense) { check_pattern<32, 0, 1, 1, 0, 32, 1>(); }

// Phi-3-small's mixed tiles by hand: rows [40 * 64, 42 * 64) (q blocks 40 and 41) of head 0 see the
// band 25..41 (block 25 only from q block 40) and the vertical blocks 7, 15, 23 below it: three
// narrow vertical tiles, the band's odd first block narrow, then 8 wide tiles ending at the diagonal.
TEST(BlockSparsePattern, Phi3SmallMixedTiles) {
  using P = LocalStrided<64, 16, 8, 1, 0, 64, 4>;
  const P::MixedTiles tiles(40 * 64, 42 * 64 - 1, 0, 42, 0);
  std::vector<int> listed;
  for (int i = 0, t = tiles.first(); i < tiles.count(); ++i, t = tiles.next(t)) listed.push_back(t);
  const std::vector<int> expected = {2 * 7, 2 * 15, 2 * 23, 2 * 25, 2 * 26 + 1, 2 * 28 + 1, 2 * 30 + 1,
                                     2 * 32 + 1, 2 * 34 + 1, 2 * 36 + 1, 2 * 38 + 1, 2 * 40 + 1};
  EXPECT_EQ(listed, expected);
  // Head 1's vertical blocks are 6, 14, 22; a q tile at the start holds only the band: rows [0, 128)
  // see blocks 0 and 1, one wide tile.
  const P::MixedTiles head1(40 * 64, 42 * 64 - 1, 0, 42, 1);
  EXPECT_EQ(head1.first(), 2 * 6);
  EXPECT_EQ(head1.count(), 12);
  const P::MixedTiles start(0, 127, 0, 2, 0);
  EXPECT_EQ(start.first(), 1);
  EXPECT_EQ(start.count(), 1);
  // A short request (one 64-row block) that ends inside a q tile: one narrow tile.
  const P::MixedTiles short_rows(0, 40, 0, 1, 0);
  EXPECT_EQ(short_rows.first(), 0);
  EXPECT_EQ(short_rows.count(), 1);
}

// Phi-3-small's paired tiles by hand: rows [40 * 64, 42 * 64) of head 0 see the vertical blocks
// 7, 15, 23 and the band 25..41, 20 blocks: 10 tiles, the first two pairing blocks 8 and 2 apart.
// Rows [2 * 64, 4 * 64) see blocks 0..3 (the band): 2 adjacent pairs; rows [0, 192) blocks 0..2:
// one pair, then block 2 single (its second half repeats it).
TEST(BlockSparsePattern, Phi3SmallPairedTiles) {
  using P = LocalStrided<64, 16, 8, 1, 0, 64, 4>;
  using Paired = P::PairedTiles;
  const Paired tiles(40 * 64, 42 * 64 - 1, 0, 42, 0);
  std::vector<std::pair<int, int>> listed;
  for (int i = 0, t = tiles.first(); i < tiles.count(); ++i, t = tiles.next(t))
    listed.push_back({Paired::first_block(t), Paired::second_block(t)});
  std::vector<std::pair<int, int>> expected = {{7, 15}, {23, 25}};
  for (int kb = 26; kb < 42; kb += 2) expected.push_back({kb, kb + 1});
  EXPECT_EQ(listed, expected);
  const Paired band(2 * 64, 4 * 64 - 1, 0, 4, 0);
  EXPECT_EQ(band.count(), 2);
  EXPECT_EQ(band.first(), 0 * Paired::kCode + 1);
  EXPECT_EQ(band.next(band.first()), 2 * Paired::kCode + 1);
  const Paired odd(0, 3 * 64 - 1, 0, 3, 0);
  EXPECT_EQ(odd.count(), 2);
  EXPECT_TRUE(Paired::single(odd.next(odd.first())));
  EXPECT_EQ(Paired::first_block(odd.next(odd.first())), 2);
}

// The seed's rule by hand (attention-semantics.md §7.4): Phi-3-small, block 64, 16 local blocks,
// vertical stride 8, step 1.
TEST(BlockSparsePattern, SeedCases) {
  const SparsePattern p = pattern(64, 16, 8, 1, 0, 64, 4);
  const long q = 40 * 64 + 5;                        // block 40
  EXPECT_TRUE(sparse_visible(p, q, 25 * 64, 0));     // 40 - 25 = 15 < 16: local
  EXPECT_FALSE(sparse_visible(p, q, 24 * 64, 0));    // 16 back, (24 + 0 + 1) % 8 != 0
  EXPECT_TRUE(sparse_visible(p, q, 7 * 64, 0));      // (7 + 1) % 8 == 0: vertical for head 0
  EXPECT_FALSE(sparse_visible(p, q, 7 * 64, 1));     // head 1: (7 + 2) % 8
  EXPECT_TRUE(sparse_visible(p, q, 6 * 64, 1));      // (6 + 2) % 8 == 0
  EXPECT_FALSE(sparse_visible(p, q, q + 1, 0));      // causal inside the diagonal block
  SparsePattern kv = pattern(64, 16, 8, -1, 4, 64, 4);  // slide on kv heads: rank's first q head 4
  EXPECT_TRUE(sparse_visible(kv, q, 6 * 64, 3));     // global kv head 1 (q heads 4..7): (6 + 2) % 8
  EXPECT_TRUE(sparse_visible(kv, q, 5 * 64, 4));     // global kv head 2: (5 + 3) % 8
  SparsePattern merged = pattern(64, 16, 8, 1, 0, 128, 4);  // rows 40 and 41 share the union
  EXPECT_TRUE(sparse_visible(merged, 41 * 64, 25 * 64, 0));  // row 41 alone would not see block 25
  EXPECT_FALSE(sparse_visible(pattern(64, 16, 8, 1, 0, 64, 4), 41 * 64, 25 * 64, 0));
}

}  // namespace
}  // namespace attnc
