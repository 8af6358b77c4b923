// ATTNC_INT8_S8PV_BOUND (opt-in through ATTNC_NVRTC_DEFINES; TIMING ONLY, WRONG NUMBERS): int8_qkv's
// P·V as 8-bit integer wgmma in the producer-widening kernel (v_prewiden off), to bound in one GPU
// call what an s8 P·V could gain (docs/kernels-int8.md, "s8 P·V timing bound").
//
// P (fp32, in [0, 1] relative to the running max) is quantised to u8 by one FFMA a value,
// p * 255 + 2^23 (the add rounds to the nearest integer, which lands in the low byte), and packed
// four to a register by three PRMT: the m16n8k32 A fragment of a `.s32.u8.s8` wgmma with A in
// registers. The thread's scores are keys 8j + 2c, 8j + 2c + 1 of each 8-key group where the
// fragment wants keys 4c .. 4c + 3 of each 16: a permutation of keys within 16, which a real
// kernel would undo in the producer's V transpose. B is the raw int8 V tile of the stage read as
// if it were K-major (rows = the Dv columns, 32 keys a k32 step): the real kernel's instruction mix
// without the transpose, and wrong products. Each tile's P·V goes into a fresh s32 accumulator
// (scale-d 0 on its first k step), which is added to the fp32 O after the wait with the rescale
// of the softmax before (O rescaled one step late: o = o * r_prev + float(acc), one I2FP and one
// FFMA an element where the 16-bit path has one FMUL); 1/255 goes into v_channel_scale in the
// epilogue. The softmax and its row sums run on the float P as before.
#pragma once

#include "attnc/sm90/wgmma.cuh"
#include "attnc/sm90/wgmma_s8.cuh"

namespace attnc {

template <bool ON, int BN, int DVN, int STAGES, class RawVTile>
struct S8PvBound {
  static constexpr bool kOn = false;
};

template <int BN, int DVN, int STAGES, class RawVTile>
struct S8PvBound<true, BN, DVN, STAGES, RawVTile> {
  static constexpr bool kOn = true;
  // The raw V tile seen as V^T, K-major: DVN rows of BN bytes (BN / 2 columns in 2-byte units).
  using VtTile = SwizzledTile<DVN, BN / 2>;
  // Its bytes run past a narrow stage (BN < DVN): the descriptor's base stays inside the ring.
  static_assert(STAGES * RawVTile::kBytes >= VtTile::kBytes, "the raw V ring holds a V^T tile");

  int acc[DVN / 8][4];  // one tile's P V in s32
  float r_prev[2];      // the rescale of the softmax before the one whose P is in acc

  // P of N keys (fp32 accumulator layout) -> N / 32 u8 A fragments in pf[0 .. N / 32).
  template <int N>
  __device__ static void pack(const float (&s)[N / 8][4], u32 (&pf)[N / 16][4]) {
    static_assert(N % 32 == 0, "k32 steps");
#pragma unroll
    for (int kk = 0; kk < N / 32; ++kk) {
      pf[kk][0] = u8x4(s[4 * kk][0], s[4 * kk][1], s[4 * kk + 1][0], s[4 * kk + 1][1]);
      pf[kk][1] = u8x4(s[4 * kk][2], s[4 * kk][3], s[4 * kk + 1][2], s[4 * kk + 1][3]);
      pf[kk][2] = u8x4(s[4 * kk + 2][0], s[4 * kk + 2][1], s[4 * kk + 3][0], s[4 * kk + 3][1]);
      pf[kk][3] = u8x4(s[4 * kk + 2][2], s[4 * kk + 2][3], s[4 * kk + 3][2], s[4 * kk + 3][3]);
    }
  }

  // acc = P V over the N keys of the raw V tile at stage (issued, not waited).
  template <int N>
  __device__ void issue(const u32 (&pf)[N / 16][4], const u16* raw_ring, int stage) {
    const int first = stage * RawVTile::kBytes, last = STAGES * RawVTile::kBytes - VtTile::kBytes;
    const u32 vt = smem_u32(raw_ring) + u32(first < last ? first : last);
#pragma unroll
    for (int kk = 0; kk < N / 32; ++kk) wgmma_u8s8_rs<DVN>(acc, pf[kk], VtTile::desc_k_major(vt, 0, kk), kk > 0);
  }

  // After the P V wait: O (relative to the max before) rescaled and the tile's sum added; the
  // softmax's rescale of this step is kept for the next.
  __device__ void fold(float (&o)[DVN / 8][4], const float (&rescale)[2]) {
    fence_operand(acc);
#pragma unroll
    for (int i = 0; i < DVN / 8; ++i) {
      o[i][0] = fmaf(o[i][0], r_prev[0], float(acc[i][0]));
      o[i][1] = fmaf(o[i][1], r_prev[0], float(acc[i][1]));
      o[i][2] = fmaf(o[i][2], r_prev[1], float(acc[i][2]));
      o[i][3] = fmaf(o[i][3], r_prev[1], float(acc[i][3]));
    }
    r_prev[0] = rescale[0];
    r_prev[1] = rescale[1];
  }

 private:
  // round(p * 255) of four p in [0, 1], one byte each (p = a in the low byte).
  __device__ static u32 u8x4(float a, float b, float c, float d) {
    const u32 qa = __float_as_uint(fmaf(a, 255.f, 8388608.f)), qb = __float_as_uint(fmaf(b, 255.f, 8388608.f));
    const u32 qc = __float_as_uint(fmaf(c, 255.f, 8388608.f)), qd = __float_as_uint(fmaf(d, 255.f, 8388608.f));
    return __byte_perm(__byte_perm(qa, qb, 0x0040), __byte_perm(qc, qd, 0x0040), 0x5410);
  }
};

}  // namespace attnc
