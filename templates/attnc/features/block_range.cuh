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

// Split-KV in parts of one size for every request of a call (decode_bw): part `split` covers
// tiles [split * per, (split + 1) * per) of the request's range, per = ceil(tiles of the longest
// request / num_splits), the longest being a request of max_sk keys (`longest`: the mask built for
// it). In a ragged batch the long request then spreads over all parts while a short one fills its
// first part or few and its other blocks find no tiles. A request longer than max_sk (or max_sk
// unknown, 0) splits as block_range does, so no key is ever dropped.
template <int BN, class MaskT>
__device__ __forceinline__ BlockRange block_range_even_parts(const MaskT& mask, const MaskT& longest, int t0, int t1,
                                                              int sk, int max_sk, int split, int num_splits) {
  BlockRange r = block_range<BN>(mask, t0, t1, sk, 0, 1);
  if (num_splits > 1) {
    const int bound = max_sk > sk ? block_range<BN>(longest, t0, t1, max_sk, 0, 1).n_tiles : 0;
    const int tiles = r.n_tiles > bound ? r.n_tiles : bound;
    const int per_split = (tiles + num_splits - 1) / num_splits;
    const int first = min(r.n_tiles, split * per_split);
    r.n_begin += first * BN;
    r.n_tiles = min(r.n_tiles, first + per_split) - first;
  }
  return r;
}

}  // namespace attnc
