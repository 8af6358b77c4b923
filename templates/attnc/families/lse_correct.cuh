// lse_correct: the LSE correction of decode context parallelism (attention-semantics.md §9;
// formula and output layout in LseCorrectParams, attnc/params/ops_params.h). Memory bound like
// merge_states: each thread rescales one 16-byte chunk (8 elements) of one (token, head) row; the
// grid is (tokens * chunks / 128, heads). Fused: the global LSE over the N ranks, the rescale, and
// the write into the reduce-scatter's chunked layout, in one pass over the partial output (vLLM
// needs a correction kernel and a transposing copy before the reduce-scatter).
//
// Traits (written by the emitter) supply: Element (bf16_t | fp16_t).
#pragma once

#include "attnc/core/convert.cuh"
#include "attnc/params/ops_params.h"
#include "attnc/core/ptx.cuh"

namespace attnc {

template <class T>
struct LseCorrect {
  using E = typename T::Element;

  // NaN and +inf (FlashAttention-2's empty row) count as -inf, as in vLLM.
  __device__ static float clean(float x) { return (x != x || x == __int_as_float(0x7f800000)) ? neg_inf() : x; }

  __device__ static void run(const LseCorrectParams& p) {
    const int chunks = p.head_size / 8;
    const int i = blockIdx.x * kLseCorrectThreads + threadIdx.x;  // host keeps tokens * chunks < 2^31
    if (i >= p.num_tokens * chunks) return;
    const int token = i / chunks, c = i - token * chunks, head = blockIdx.y;
    const bool base2 = p.lse_base2 != 0;

    // The N LSEs of this (token, head): a few floats, read by every chunk's thread (L1 hits).
    const float* l = p.lses + token * p.lses_token_stride + head * p.lses_head_stride;
    float m = neg_inf();
    for (int r = 0; r < p.world_size; ++r) m = fmaxf(m, clean(l[r * p.lses_rank_stride]));
    const float shift = m == neg_inf() ? 0.f : m;
    float sum = 0.f;
    for (int r = 0; r < p.world_size; ++r) {
      const float x = clean(l[r * p.lses_rank_stride]) - shift;
      sum += base2 ? exp2f(x) : expf(x);
    }
    const float lse = shift + (base2 ? log2f(sum) : logf(sum));  // -inf when no rank saw a key
    const float d = clean(clean(l[p.rank * p.lses_rank_stride]) - lse);  // -inf - -inf is NaN: weight 0
    const float w = base2 ? exp2f(d) : expf(d);

    const int chunk = head / p.heads_per_chunk, h = head - chunk * p.heads_per_chunk;
    u16* out = static_cast<u16*>(p.out) + chunk * p.out_chunk_stride + token * p.out_row_stride +
               h * p.out_head_stride + c * 8;
    if (c == 0 && p.out_lse) p.out_lse[token * p.out_lse_token_stride + head * p.out_lse_head_stride] = lse;
    if (w == 0.f) {  // no weight: 0 even where the partial holds garbage (an empty shard)
      *reinterpret_cast<uint4*>(out) = make_uint4(0u, 0u, 0u, 0u);
      return;
    }
    const uint4 a = *reinterpret_cast<const uint4*>(static_cast<const u16*>(p.partial) + token * p.partial_row_stride +
                                                    head * p.partial_head_stride + c * 8);
    uint4 r;
    r.x = scale_word(a.x, w);
    r.y = scale_word(a.y, w);
    r.z = scale_word(a.z, w);
    r.w = scale_word(a.w, w);
    *reinterpret_cast<uint4*>(out) = r;
  }

  __device__ static u32 scale_word(u32 a, float w) {
    const float2 x = unpack2<E>(a);
    return pack2<E>(x.x * w, x.y * w);
  }
};

}  // namespace attnc
