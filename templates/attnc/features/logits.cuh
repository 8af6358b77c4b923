// Raw q.k accumulators of one key tile -> base-2 logits (attention-semantics.md §1.1-§1.6): the
// score transform (scale, softcap), ALiBi, then the mask (and the block-sparse pattern of each
// row's head, features/block_sparse.cuh) where the tile crosses a boundary.
// Works on mma.sync m16n8 and wgmma m64nN C fragments alike: s[nt][c] is the thread's row c / 2
// (token tok[c / 2]) and key n0 + nt * 8 + col0 + c % 2.
#pragma once

#include "attnc/core/ptx.cuh"
#include "attnc/features/alibi.cuh"
#include "attnc/features/mask.cuh"
#include "attnc/features/score.cuh"

namespace attnc {

// Score: ScoreTransform, or any functor of one raw score (prefill_sm90's int8 path folds the scale
// into its q scales and passes what is left).
template <int NT, class Score, Alibi ALIBI, MaskKind MASK, class SparseRow>
__device__ __forceinline__ void apply_logits(float (&s)[NT][4], const Score& score,
                                             const AlibiBias<ALIBI> (&alibi)[2], const Mask<MASK>& mask,
                                             const SparseRow (&sparse)[2], const int (&tok)[2], int n0, int col0,
                                             int sk, bool need_mask) {
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int c = 0; c < 4; ++c) s[nt][c] = alibi[c / 2](score(s[nt][c]), tok[c / 2] + mask.shift - (n0 + nt * 8 + col0 + c % 2));
  // A separate, block-uniform branch: tiles inside every row's range pay nothing for the mask.
  if (need_mask) {
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int j = n0 + nt * 8 + col0 + (c % 2);
        if (j >= sk || !mask.allowed(tok[c / 2], j) || !sparse[c / 2].allowed(tok[c / 2] + mask.shift, j))
          s[nt][c] = neg_inf();
      }
  }
}

}  // namespace attnc
