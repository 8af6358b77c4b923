// The key tiles one block visits (FlashAttention-3's BlockMN::get_n_block_min_max): the mask's key
// range over the block's query tokens [t0, t1), aligned down to a whole tile, then, with split-KV,
// part `split` of `num_splits` (parts of ceil(tiles / num_splits) tiles; the last may be shorter
// or empty).
#pragma once

namespace attnc {

struct BlockRange {
  int n_begin;  // first key of the first tile
  int n_tiles;
};

template <int BN, class MaskT>
__device__ __forceinline__ BlockRange block_range(const MaskT& mask, int t0, int t1, int sk, int split, int num_splits) {
  int begin, end;
  mask.key_range(t0, t1, sk, begin, end);
  begin = begin / BN * BN;
  int tiles = end > begin ? (end - begin + BN - 1) / BN : 0;
  if (num_splits > 1) {
    const int per_split = (tiles + num_splits - 1) / num_splits;
    const int first = min(tiles, split * per_split);
    begin += first * BN;
    tiles = min(tiles, first + per_split) - first;
  }
  return {begin, tiles};
}

}  // namespace attnc
