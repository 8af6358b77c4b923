// Split-KV combine (attention-semantics.md §8, merged with §1.9's formula): each split wrote its
// normalised partial output and base-2 LSE; the result is sum_s 2^(lse_s - lse) * o_s with
// lse = log2(sum_s 2^lse_s [+ 2^sink]) (features/lse.cuh). Sinks enter here, once, because only
// this pass sees every split. One warp per (token, q head) row; an all-empty row gives 0 and LSE
// -inf (or the sink).
#pragma once

#include "attnc/core/ptx.cuh"
#include "attnc/features/lse.cuh"
#include "attnc/params/params.h"
#include "attnc/params/split_combine_shape.h"

namespace attnc {

template <class T>
struct SplitCombine {
  using E = typename T::Element;
  static constexpr int DV = T::kHeadDimV;
  static_assert(DV % 4 == 0, "four output columns per lane step");

  __device__ static void run(const AttentionParams& p) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const long long plane = (long long)p.total_q * p.num_q_heads;  // rows per split
    const long long row = (long long)blockIdx.x * kCombineRowsPerBlock + warp;
    if (row >= plane) return;
    const int token = int(row / p.num_q_heads), head = int(row % p.num_q_heads);
    const int splits = p.num_splits;

    float m = neg_inf();
    for (int s = 0; s < splits; ++s) m = fmaxf(m, p.lse_partial[s * plane + row]);
    Lse2 total{m == neg_inf() ? 0.f : m, 0.f};
    for (int s = 0; s < splits; ++s) total.sum += fast_exp2(p.lse_partial[s * plane + row] - total.max);
    if constexpr (T::kSinks) total.join(p.sinks[head] * kLog2e);
    const float lse = total.value();
    const float sum = total.sum;

    u16* o = static_cast<u16*>(p.o) + token * p.o_row_stride + head * p.o_head_stride;
    for (int c = lane * 4; c < DV; c += 128) {
      float acc[4] = {0.f, 0.f, 0.f, 0.f};
      if (sum > 0.f)
        for (int s = 0; s < splits; ++s) {
          const float part_lse = p.lse_partial[s * plane + row];
          if (part_lse == neg_inf()) continue;  // an empty part (decode_bw leaves its O unwritten)
          const float w = fast_exp2(part_lse - lse);
          const float4 part = *reinterpret_cast<const float4*>(p.o_partial + (s * plane + row) * DV + c);
          acc[0] += w * part.x;
          acc[1] += w * part.y;
          acc[2] += w * part.z;
          acc[3] += w * part.w;
        }
      uint2 packed;
      packed.x = pack2<E>(acc[0], acc[1]);
      packed.y = pack2<E>(acc[2], acc[3]);
      *reinterpret_cast<uint2*>(o + c) = packed;
    }
    if constexpr (T::kLse != LseOut::none)
      if (lane == 0) p.lse[token * p.lse_row_stride + head * p.lse_head_stride] = lse_out<T::kLse>(lse);
  }
};

}  // namespace attnc
