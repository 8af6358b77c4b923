// Which keys a query may see (attention-semantics.md §1.3, §1.6). Positions are within one
// sequence; masks are bottom-right aligned: query i lines up with key i + sk - sq.
// Causal is the window (unbounded, 0). Every family uses this piece, so prefill and decode agree.
#pragma once

#include "attnc/params/kinds.h"

namespace attnc {

template <MaskKind KIND>
struct Mask {
  int shift;  // sk - sq
  int left;   // -1 = unbounded
  int right;  // -1 = unbounded

  __device__ Mask(int sq, int sk, int window_left, int window_right)
      : shift(sk - sq),
        left(KIND == MaskKind::sliding_window ? window_left : -1),
        right(KIND == MaskKind::causal ? 0 : (KIND == MaskKind::sliding_window ? window_right : -1)) {}

  __device__ bool allowed(int i, int j) const {
    const int diag = i + shift;
    return (right < 0 || j <= diag + right) && (left < 0 || j >= diag - left);
  }

  // Keys [begin, end) that any query in [i0, i1) may see, clipped to [0, sk).
  __device__ void key_range(int i0, int i1, int sk, int& begin, int& end) const {
    begin = left < 0 ? 0 : max(0, i0 + shift - left);
    end = right < 0 ? sk : min(sk, i1 - 1 + shift + right + 1);
  }

  // Whether a key tile [j0, j1) seen by queries [i0, i1) needs element-wise masking.
  __device__ bool tile_needs_mask(int i0, int i1, int j0, int j1, int sk) const {
    if (j1 > sk) return true;
    if (right >= 0 && j1 - 1 > i0 + shift + right) return true;
    if (left >= 0 && j0 < i1 - 1 + shift - left) return true;
    return false;
  }
};

}  // namespace attnc
