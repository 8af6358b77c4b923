// merge_states: merge_attn_states (attention-semantics.md §1.9; formula and edge cases in
// MergeParams, attnc/params/ops_params.h). Memory bound: each thread merges one 16-byte chunk (8
// elements) of one (token, head) row; the grid is (tokens * chunks / 128, heads), so no 64-bit
// division runs per element. The two weights are computed first and each element is then
// prefix * w_p + suffix * w_s in fp32, rounded once.
//
// Traits (written by the emitter) supply: Element (bf16_t | fp16_t).
#pragma once

#include "attnc/core/convert.cuh"
#include "attnc/params/ops_params.h"
#include "attnc/core/ptx.cuh"

namespace attnc {

template <class T>
struct MergeStates {
  using E = typename T::Element;

  // +inf marks an empty row in FlashAttention-2; it merges like -inf (no keys).
  __device__ static float load_lse(const float* lse, long long offset) {
    const float x = lse[offset];
    return x == __int_as_float(0x7f800000) ? neg_inf() : x;
  }

  __device__ static void run(const MergeParams& p) {
    const int chunks = p.head_size / 8;
    const int i = blockIdx.x * kMergeThreads + threadIdx.x;  // host keeps tokens * chunks < 2^31
    if (i >= p.num_tokens * chunks) return;
    const int token = i / chunks, c = i - token * chunks, head = blockIdx.y;
    const bool base2 = p.lse_base2 != 0;

    const float lp = load_lse(p.prefix_lse, token * p.prefix_lse_token_stride + head * p.prefix_lse_head_stride);
    const float ls = load_lse(p.suffix_lse, token * p.suffix_lse_token_stride + head * p.suffix_lse_head_stride);
    const float m = fmaxf(lp, ls);
    u16* out = static_cast<u16*>(p.out) + token * p.out_row_stride + head * p.out_head_stride + c * 8;
    float* out_lse = p.out_lse && c == 0
                         ? p.out_lse + token * p.out_lse_token_stride + head * p.out_lse_head_stride
                         : nullptr;

    if (m == neg_inf()) {  // both sides empty: no keys at all
      *reinterpret_cast<uint4*>(out) = make_uint4(0u, 0u, 0u, 0u);
      if (out_lse) *out_lse = neg_inf();
      return;
    }
    const float wp = base2 ? exp2f(lp - m) : expf(lp - m);
    const float ws = base2 ? exp2f(ls - m) : expf(ls - m);
    const float sum = wp + ws;
    const float sp = wp / sum, ss = ws / sum;

    const uint4 a = *reinterpret_cast<const uint4*>(static_cast<const u16*>(p.prefix) + token * p.prefix_row_stride +
                                                    head * p.prefix_head_stride + c * 8);
    const uint4 b = *reinterpret_cast<const uint4*>(static_cast<const u16*>(p.suffix) + token * p.suffix_row_stride +
                                                    head * p.suffix_head_stride + c * 8);
    uint4 r;
    r.x = merge_word(a.x, b.x, sp, ss);
    r.y = merge_word(a.y, b.y, sp, ss);
    r.z = merge_word(a.z, b.z, sp, ss);
    r.w = merge_word(a.w, b.w, sp, ss);
    *reinterpret_cast<uint4*>(out) = r;
    if (out_lse) *out_lse = m + (base2 ? log2f(sum) : logf(sum));
  }

  __device__ static u32 merge_word(u32 a, u32 b, float sp, float ss) {
    const float2 x = unpack2<E>(a), y = unpack2<E>(b);
    return pack2<E>(x.x * sp + y.x * ss, x.y * sp + y.y * ss);
  }
};

}  // namespace attnc
