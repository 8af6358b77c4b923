// Online softmax state for the ROWS rows one thread holds, in base 2. The running sum is kept per
// thread and reduced across the quad once at the end; the running max is quad-reduced every tile
// so the rescale factors agree within a row. A row that has seen only masked keys keeps max -inf
// and contributes exp2(-inf) = 0, so a fully masked row ends with sum 0 -> output 0, LSE -inf.
#pragma once

#include "attnc/core/ptx.cuh"
#include "attnc/features/lse.cuh"

namespace attnc {

template <int ROWS>
struct OnlineSoftmax {
  float row_max[ROWS];
  float row_sum[ROWS];

  __device__ OnlineSoftmax() {
#pragma unroll
    for (int r = 0; r < ROWS; ++r) { row_max[r] = neg_inf(); row_sum[r] = 0.f; }
  }

  // s[NT][4] holds mma accumulator fragments: elements 0,1 belong to row 0, elements 2,3 to row 1.
  // Replaces logits by probabilities (unnormalised) and returns each row's rescale factor for the
  // output accumulator.
  template <int NT>
  __device__ void update(float (&s)[NT][4], float (&rescale)[ROWS]) {
    const float unscaled[ROWS] = {1.f, 1.f};
    update_rows<false>(s, rescale, unscaled);
  }

  // The max of row r's values (before row_scale), not yet quad-reduced; starts from `init`.
  template <int NT>
  __device__ static float thread_row_max(const float (&s)[NT][4], int r, float init) {
    float m = init;
#pragma unroll
    for (int n = 0; n < NT; ++n) m = fmaxf(m, fmaxf(s[n][2 * r], s[n][2 * r + 1]));
    return m;
  }

  // update_rows<true> takes logits given as t * row_scale[r] with t in s: the max is taken over t
  // and scaled (row_scale > 0), and each exponent is one FMA, exp2(t * row_scale - max), so the
  // scale costs no multiplication of its own (prefill_sm90: int8's q scales, 16-bit's scale * log2 e,
  // with neither softcap nor ALiBi).
  // `between()` runs after both rows' max and rescale factors, before the exponentials (a hook for
  // prefill_sm90's chain stamps). Rows in turn (max, exp of row 0, then row 1) unless the hook
  // splits the phases (Between::kSplits: both rows' maxima first).
  struct NoHook {
    static constexpr bool kSplits = false;
    __device__ void operator()() const {}
  };
  template <bool kScaled, int NT, class Between = NoHook>
  __device__ void update_rows(float (&s)[NT][4], float (&rescale)[ROWS], const float (&row_scale)[ROWS],
                              Between between = {}) {
    static_assert(ROWS == 2, "mma fragments carry two rows per thread");
    float base[ROWS];
    if constexpr (Between::kSplits) {
      max_row<kScaled>(s, rescale, row_scale, base, 0);
      max_row<kScaled>(s, rescale, row_scale, base, 1);
      between();
      exp_row<kScaled>(s, rescale, row_scale, base, 0);
      exp_row<kScaled>(s, rescale, row_scale, base, 1);
    } else {
#pragma unroll
      for (int r = 0; r < ROWS; ++r) {
        max_row<kScaled>(s, rescale, row_scale, base, r);
        exp_row<kScaled>(s, rescale, row_scale, base, r);
      }
    }
  }

  // Row r's new running max, its rescale factor and the exponent base.
  template <bool kScaled, int NT>
  __device__ void max_row(const float (&s)[NT][4], float (&rescale)[ROWS], const float (&row_scale)[ROWS],
                          float (&base)[ROWS], int r) {
    float m;
    if constexpr (kScaled) m = fmaxf(row_max[r], quad_max(thread_row_max(s, r, neg_inf())) * row_scale[r]);
    else m = quad_max(thread_row_max(s, r, row_max[r]));
    // -inf rows subtract 0 instead, so exp2 sees -inf - 0 rather than -inf - -inf (NaN).
    base[r] = m == neg_inf() ? 0.f : m;
    rescale[r] = fast_exp2(row_max[r] - base[r]);
    row_max[r] = m;
  }

  // Row r's probabilities in place and its running sum.
  template <bool kScaled, int NT>
  __device__ void exp_row(float (&s)[NT][4], const float (&rescale)[ROWS], const float (&row_scale)[ROWS],
                          const float (&base)[ROWS], int r) {
    float sum = 0.f;
#pragma unroll
    for (int n = 0; n < NT; ++n) {
      if constexpr (kScaled) {
        s[n][2 * r] = fast_exp2(fmaf(s[n][2 * r], row_scale[r], -base[r]));
        s[n][2 * r + 1] = fast_exp2(fmaf(s[n][2 * r + 1], row_scale[r], -base[r]));
      } else {
        s[n][2 * r] = fast_exp2(s[n][2 * r] - base[r]);
        s[n][2 * r + 1] = fast_exp2(s[n][2 * r + 1] - base[r]);
      }
      sum += s[n][2 * r] + s[n][2 * r + 1];
    }
    row_sum[r] = row_sum[r] * rescale[r] + sum;
  }

  // Scales this thread's output accumulators (NT mma fragments: elements 0,1 on row 0, 2,3 on row 1)
  // by each row's factor from update(), so O stays relative to the new running max.
  template <int NT>
  __device__ static void rescale_o(float (&acc_o)[NT][4], const float (&rescale)[ROWS]) {
    static_assert(ROWS == 2, "mma fragments carry two rows per thread");
#pragma unroll
    for (int i = 0; i < NT; ++i) {
      acc_o[i][0] *= rescale[0];
      acc_o[i][1] *= rescale[0];
      acc_o[i][2] *= rescale[1];
      acc_o[i][3] *= rescale[1];
    }
  }

  // Quad-reduce the sums; returns 1/sum (0 for an empty row) and the base-2 LSE per row. With
  // SINKS each row's sink logit (base 2) joins the normaliser (features/lse.cuh).
  template <bool SINKS = false>
  __device__ void finish(float (&inv_sum)[ROWS], float (&lse2)[ROWS], const float (&sink2)[ROWS] = {}) {
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
      Lse2 t{row_max[r], quad_sum(row_sum[r])};
      float out_scale = 1.f;
      if constexpr (SINKS) out_scale = t.join(sink2[r]);
      inv_sum[r] = t.sum > 0.f ? out_scale / t.sum : 0.f;
      lse2[r] = t.value();
    }
  }
};

}  // namespace attnc
