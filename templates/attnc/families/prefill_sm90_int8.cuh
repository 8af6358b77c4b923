// int8 Q·Kᵀ inside prefill_sm90 (Int8Mode::qk: int8 Q and K, 16-bit V; attention-semantics.md §5.2).
//
// Q and K tiles arrive by TMA as int8 rows: a SwizzledTile of half the columns in 2-byte units holds
// them byte for byte (AttentionParams' int8 strides are in 2-byte units too), and S = Q Kᵀ runs as
// s8 x s8 -> s32 wgmma (k32 steps, both operands K-major, sm90/wgmma_s8.cuh) into the registers of
// the fp32 score tile. The s32 sums convert exactly (|sum| <= 256 * 127 * 127 < 2^24) and are then
// multiplied by q_scale[row] * k_token_scale[key], as attention_sm80's int8 path does with its
// widened tiles, before softcap, ALiBi, mask and softmax. P·V stays 16-bit (V is 16-bit in this mode).
//
// The key scales travel with the K tile: a producer warp copies the tile's BN scales into a ring
// beside the K ring and arrives on the same k_full barrier (which then waits for the TMA bytes and
// that arrival), so the consumers read them from shared memory after the product, holding no
// registers across it (fetching them into registers under the wgmma spilled at d128).
#pragma once

#include "attnc/features/int8_scales.cuh"
#include "attnc/params/params.h"
#include "attnc/sm90/mbarrier.cuh"
#include "attnc/sm90/wgmma.cuh"
#include "attnc/sm90/wgmma_s8.cuh"

namespace attnc {

template <class T, int BN, int D, int STAGES>
struct PrefillInt8 {
  static constexpr Int8Mode kMode = Int8ModeOf<T>::value;
  static constexpr bool kOn = kMode != Int8Mode::none;
  static_assert(kMode != Int8Mode::qkv, "prefill_sm90 takes int8_qk; int8_qkv runs on prefill_sm80");
  // Columns of the Q and K tiles in 2-byte units: one per int8 pair.
  static constexpr int kQkCols = kOn ? (D + 1) / 2 : D;
  static constexpr int KSTEPS = (D + 31) / 32;  // k32 steps; TMA zero-fills the columns past D
  // The key-scale ring (fp32, BN per stage) and the arrivals k_full takes per stage.
  static constexpr int kScaleBytes = kOn ? STAGES * BN * 4 : 0;
  static constexpr int kKeyFullArrivals = kOn ? 2 : 1;

  float qs[2];  // q_scale of this thread's two rows (0 past the request)

  // S (as s32, in s's registers) = Q Kᵀ for the warpgroup's 64 rows at q_row0; issued, not waited.
  template <class QTile, class KTile>
  __device__ static void issue_qk(float (&s)[BN / 8][4], u32 q, u32 k, int q_row0) {
    int(&si)[BN / 8][4] = reinterpret_cast<int(&)[BN / 8][4]>(s);
#pragma unroll
    for (int kk = 0; kk < KSTEPS; ++kk)
      wgmma_s8_ss<BN>(si, QTile::desc_k_major(q, q_row0, kk), KTile::desc_k_major(k, 0, kk), kk > 0);
  }

  // Producer warp: the scales of keys [n0, n0 + BN) of the request (0 past sk, masked there) into
  // stage `ring`, once the consumers have released it; then one arrival on k_full.
  __device__ static void load_scales(const AttentionParams& p, float* ring, u64* full, u64* empty, int kv_head,
                                     int k_begin, int sk, int n0, int i, int lane) {
    if (lane == 0) mbar_wait(empty, ((i / STAGES) & 1) ^ 1);
    __syncwarp();
    const float* ks = p.k_token_scale + kv_head * p.k_token_scale_head_stride;
#pragma unroll
    for (int j = lane; j < BN; j += 32)
      ring[j] = n0 + j < sk ? __ldg(ks + (long long)(k_begin + n0 + j) * p.k_token_scale_row_stride) : 0.f;
    __syncwarp();
    if (lane == 0) mbar_arrive(full);  // release: the stores above are seen by whoever waits on `full`
  }

  // tok: this thread's two rows within the request.
  __device__ void init(const AttentionParams& p, int head, int q_begin, int sq, const int (&tok)[2]) {
    if constexpr (kOn) {
#pragma unroll
      for (int r = 0; r < 2; ++r)
        qs[r] = tok[r] < sq ? p.q_scale[(long long)(q_begin + tok[r]) * p.q_scale_row_stride +
                                        head * p.q_scale_head_stride]
                            : 0.f;
    }
  }

  // s32 scores (in s's registers, fenced after the wait) -> fp32 times q_scale * k_token_scale, the
  // key scales from the K tile's stage of the ring (read before the stage is released).
  __device__ void scale(float (&s)[BN / 8][4], const float* ring, int col0) const {
    if constexpr (kOn) {
      const int(&si)[BN / 8][4] = reinterpret_cast<const int(&)[BN / 8][4]>(s);
#pragma unroll
      for (int i = 0; i < BN / 8; ++i) {
        const float2 k = *reinterpret_cast<const float2*>(ring + i * 8 + col0);
        const int lo0 = si[i][0], lo1 = si[i][1], hi0 = si[i][2], hi1 = si[i][3];
        s[i][0] = float(lo0) * (qs[0] * k.x);
        s[i][1] = float(lo1) * (qs[0] * k.y);
        s[i][2] = float(hi0) * (qs[1] * k.x);
        s[i][3] = float(hi1) * (qs[1] * k.y);
      }
    }
  }
};

}  // namespace attnc
