// ALiBi bias (attention-semantics.md §1.4, §1.5), added after softcap and before the mask:
// -slope_h * dist (linear) or -slope_h * sqrt(dist) (sqrt), dist = |i + sk - sq - j|, the exact
// relative form (FlashAttention's causal kernel adds slope * j instead, which shifts the LSE).
// Slopes are natural-log units; they are held here pre-multiplied by log2(e) and negated.
#pragma once

#include "attnc/core/ptx.cuh"
#include "attnc/params/kinds.h"

namespace attnc {

template <Alibi KIND>
struct AlibiBias {
  float neg_slope2 = 0.f;

  AlibiBias() = default;
  template <class P>
  __device__ AlibiBias(const P& p, int seq, int head) {
    if constexpr (KIND != Alibi::none) neg_slope2 = -p.alibi_slopes[seq * p.alibi_batch_stride + head] * kLog2e;
  }
  __device__ float operator()(float x, int diag_minus_j) const {
    if constexpr (KIND == Alibi::none) return x;
    const float dist = float(diag_minus_j < 0 ? -diag_minus_j : diag_minus_j);
    return x + neg_slope2 * (KIND == Alibi::sqrt ? sqrtf(dist) : dist);
  }
};

}  // namespace attnc
