// Score transform: raw q.k -> logit in base 2 (attention-semantics.md §1.1, §1.2).
// Softcap comes before any bias or mask: cap * tanh(scale * qk / cap).
#pragma once

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
