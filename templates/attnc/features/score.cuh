// Score transform: raw q.k -> logit in base 2 (attention-semantics.md §1.1, §1.2).
// Softcap comes before any bias or mask: cap * tanh(scale * qk / cap).
#pragma once

#include "attnc/params/params.h"
#include "attnc/core/ptx.cuh"

namespace attnc {

template <bool SOFTCAP>
struct ScoreTransform {
  float mul;      // no softcap: scale * log2(e); softcap: scale / cap
  float out_mul;  // softcap: cap * log2(e)

  template <class P>
  __device__ explicit ScoreTransform(const P& p)
      : mul(SOFTCAP ? p.softcap_inv_scale : p.scale_log2), out_mul(p.softcap * kLog2e) {}

  __device__ float operator()(float qk) const {
    if constexpr (SOFTCAP) return fast_tanh(qk * mul) * out_mul;
    return qk * mul;
  }
};

}  // namespace attnc

namespace attnc {

// ALiBi bias (attention-semantics.md §1.4, §1.5), added after softcap and before the mask:
// -slope_h * dist (linear) or -slope_h * sqrt(dist) (sqrt), dist = |i + sk - sq - j|, the exact
// relative form (FlashAttention's causal kernel adds slope * j instead, which shifts the LSE).
// Slopes are natural-log units; they are held here pre-multiplied by log2(e) and negated.
template <int KIND>
struct AlibiBias {
  float neg_slope2 = 0.f;

  template <class P>
  __device__ AlibiBias(const P& p, int seq, int head) {
    if constexpr (KIND != 0) neg_slope2 = -p.alibi_slopes[seq * p.alibi_batch_stride + head] * kLog2e;
  }
  __device__ float operator()(float x, int diag_minus_j) const {
    if constexpr (KIND == 0) return x;
    const float dist = float(diag_minus_j < 0 ? -diag_minus_j : diag_minus_j);
    return x + neg_slope2 * (KIND == 2 ? sqrtf(dist) : dist);
  }
};

}  // namespace attnc
