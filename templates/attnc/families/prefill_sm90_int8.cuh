// int8 Q·Kᵀ inside prefill_sm90 (Int8Mode::qk: int8 Q and K, 16-bit V; attention-semantics.md §5.2).
//
// Q and K tiles arrive by TMA as int8 rows: a SwizzledTile of half the columns in 2-byte units holds
// them byte for byte (AttentionParams' int8 strides are in 2-byte units too), and S = Q Kᵀ runs as
// s8 x s8 -> s32 wgmma (k32 steps, both operands K-major, sm90/wgmma_s8.cuh) into the registers of
// the fp32 score tile. The s32 sums convert exactly (|sum| <= 256 * 127 * 127 < 2^24) and are then
// multiplied by q_scale[row] * k_token_scale[key], as attention_sm80's int8 path does with its
// widened tiles, before softcap, ALiBi, mask and softmax. P·V stays 16-bit (V is 16-bit in this mode).
//
// The key scales of tile i are fetched into registers while its product is still on the tensor
// cores (fetch, then scale after the wait), so their global latency hides under the wgmma.
#pragma once

#include "attnc/features/int8_scales.cuh"
#include "attnc/params/params.h"
#include "attnc/sm90/wgmma.cuh"
#include "attnc/sm90/wgmma_s8.cuh"

namespace attnc {

template <class T, int BN, int D>
struct PrefillInt8 {
  static constexpr Int8Mode kMode = Int8ModeOf<T>::value;
  static constexpr bool kOn = kMode != Int8Mode::none;
  static_assert(kMode != Int8Mode::qkv, "prefill_sm90 takes int8_qk; int8_qkv runs on prefill_sm80");
  // Columns of the Q and K tiles in 2-byte units: one per int8 pair.
  static constexpr int kQkCols = kOn ? (D + 1) / 2 : D;
  static constexpr int KSTEPS = (D + 31) / 32;  // k32 steps; TMA zero-fills the columns past D

  float qs[2];          // q_scale of this thread's two rows (0 past the request)
  const float* ks;      // this (request, kv head)'s key scales from its first key
  long long ks_row;
  float kv_scale[BN / 8][2];  // the fetched tile's key scales, columns col0 and col0 + 1 of each 8

  // S (as s32, in s's registers) = Q Kᵀ for the warpgroup's 64 rows at q_row0; issued, not waited.
  template <class QTile, class KTile>
  __device__ static void issue_qk(float (&s)[BN / 8][4], u32 q, u32 k, int q_row0) {
    int(&si)[BN / 8][4] = reinterpret_cast<int(&)[BN / 8][4]>(s);
#pragma unroll
    for (int kk = 0; kk < KSTEPS; ++kk)
      wgmma_s8_ss<BN>(si, QTile::desc_k_major(q, q_row0, kk), KTile::desc_k_major(k, 0, kk), kk > 0);
  }

  // tok: this thread's two rows within the request.
  __device__ void init(const AttentionParams& p, int seq, int head, int kv_head, int q_begin, int k_begin, int sq,
                       const int (&tok)[2]) {
    if constexpr (kOn) {
#pragma unroll
      for (int r = 0; r < 2; ++r)
        qs[r] = tok[r] < sq ? p.q_scale[(long long)(q_begin + tok[r]) * p.q_scale_row_stride +
                                        head * p.q_scale_head_stride]
                            : 0.f;
      ks_row = p.k_token_scale_row_stride;
      ks = p.k_token_scale + kv_head * p.k_token_scale_head_stride + (long long)k_begin * ks_row;
    }
  }

  // The key scales of keys [n0, n0 + BN) this thread multiplies (0 past sk: masked there anyway).
  __device__ void fetch(int n0, int col0, int sk) {
    if constexpr (kOn) {
#pragma unroll
      for (int i = 0; i < BN / 8; ++i)
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const int j = n0 + i * 8 + col0 + c;
          kv_scale[i][c] = j < sk ? __ldg(ks + j * ks_row) : 0.f;
        }
    }
  }

  // s32 scores (in s's registers, fenced after the wait) -> fp32 times q_scale * k_token_scale.
  __device__ void scale(float (&s)[BN / 8][4]) const {
    if constexpr (kOn) {
      int(&si)[BN / 8][4] = reinterpret_cast<int(&)[BN / 8][4]>(s);
#pragma unroll
      for (int i = 0; i < BN / 8; ++i)
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const float k = kv_scale[i][c];
          const int lo = si[i][c], hi = si[i][2 + c];
          s[i][c] = float(lo) * (qs[0] * k);
          s[i][2 + c] = float(hi) * (qs[1] * k);
        }
    }
  }
};

}  // namespace attnc
