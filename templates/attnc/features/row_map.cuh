// Which (query token, q head) each row of a tile holds (attention-semantics.md §1.10).
// Plain: a block serves one q head; row r is token m0 + r. Packed GQA (FlashAttention's
// seqlenq_ngroups_swapped, FlashInfer's tensor-core decode): a block serves one kv head and row
// R = m0 + r is token R / G, q head kv_head * G + R % G, so each K/V tile is read once for all G
// query heads that share it.
#pragma once

namespace attnc {

template <bool PACK, int G>
struct RowMap {
  int m0;         // first row of the block
  int head_base;  // plain: the q head; packed: kv_head * G

  RowMap() = default;
  __device__ RowMap(int m0_, int block_head) : m0(m0_), head_base(PACK ? block_head * G : block_head) {}

  __device__ static int rows_of(int sq) { return PACK ? sq * G : sq; }
  __device__ int token(int r) const { return PACK ? (m0 + r) / G : m0 + r; }
  __device__ int head(int r) const { return PACK ? head_base + (m0 + r) % G : head_base; }
};

}  // namespace attnc
