// Log-sum-exp in base 2, shared by every pass that finishes a softmax: the attention epilogue (one
// pass over all of a row's keys) and the split-KV combine (over the parts' LSEs). A sink logit
// joins the normaliser only (attention-semantics.md §1.7): a row with no keys then ends with
// output 0 and LSE = the sink.
#pragma once

#include "attnc/core/ptx.cuh"
#include "attnc/params/kinds.h"

namespace attnc {

// sum * 2^max stands for the sum of the terms; a row without terms has sum 0 (and any max).
struct Lse2 {
  float max;
  float sum;

  // Adds the term 2^sink2; returns the factor the earlier terms were scaled by (0 without any).
  __device__ float join(float sink2) {
    const float m = fmaxf(max, sink2);
    const float scale = sum > 0.f ? fast_exp2(max - m) : 0.f;
    sum = sum * scale + fast_exp2(sink2 - m);
    max = m;
    return scale;
  }
  // log2 of the sum; -inf without terms.
  __device__ float value() const { return sum > 0.f ? max + fast_log2(sum) : neg_inf(); }
};

// The union of N partial sums over disjoint key sets, each held relative to its own max (a warp's
// softmax state, a split's part): the union relative to the largest max of a non-empty part, and
// in weight[i] the factor that puts part i's terms (and its output) relative to it (0 when empty).
template <int N>
__device__ __forceinline__ Lse2 lse2_union(const float (&max)[N], const float (&sum)[N], float (&weight)[N]) {
  float m = neg_inf();
#pragma unroll
  for (int i = 0; i < N; ++i)
    if (sum[i] > 0.f) m = fmaxf(m, max[i]);
  Lse2 t{m, 0.f};
#pragma unroll
  for (int i = 0; i < N; ++i) {
    weight[i] = sum[i] > 0.f ? fast_exp2(max[i] - m) : 0.f;
    t.sum += weight[i] * sum[i];
  }
  return t;
}

// The LSE as the caller asked for it: base e or base 2.
template <LseOut OUT>
__device__ __forceinline__ float lse_out(float lse2) {
  return OUT == LseOut::base_e ? lse2 * kLn2 : lse2;
}

}  // namespace attnc
