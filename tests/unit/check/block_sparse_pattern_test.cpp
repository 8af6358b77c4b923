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
}

TEST(BlockSparsePattern, Phi3SmallShapeScaledDown) { check_pattern<16, 4, 8, 1, 0, 16, 4>(); }
TEST(BlockSparsePattern, LargeBlocks) { check_pattern<64, 2, 3, 1, 0, 64, 2>(); }
TEST(BlockSparsePattern, HomoHead) { check_pattern<32, 3, 4, 0, 0, 32, 1>(); }
TEST(BlockSparsePattern, SlideOnKvHeadsWithRank) { check_pattern<16, 2, 5, -1, 8, 16, 2>(); }
TEST(BlockSparsePattern, StepTwoWithRank) { check_pattern<16, 1, 6, 2, 5, 16, 1>(); }
TEST(BlockSparsePattern, QueryBlockOfThreeRows) { check_pattern<16, 2, 4, 1, 0, 48, 2>(); }
TEST(BlockSparsePattern, NoLocalBlocks) { check_pattern<16, 0, 3, 1, 0, 32, 1>(); }
TEST(BlockSparsePattern, VertStrideOneIsDense) { check_pattern<32, 0, 1, 1, 0, 32, 1>(); }

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
