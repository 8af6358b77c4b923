// fp8 K/V converted in registers (decode_bw; docs/kernels-decode.md, "fp8 v3"). The staged fp8 bytes
// are read straight into mma fragments and converted there (cvt e4m3x2 -> f16x2, or a prmt for
// e5m2), so no 16-bit copy of the tile is written to or read back from shared memory.
//
// The mma's reduction axes are free to permute, and the output's columns are too:
// - S = Q K^T sums over d: lane (g, t) takes the four d of each k step from bytes [t D/4, t D/4 + D/4)
//   of its key's row (k step kk: bytes 4 kk .. 4 kk + 3), so one 16-byte load feeds four k steps. Q's
//   fragments are read with the same permutation (q_frags).
// - O = P V sums over keys in P's fixed order (keys 2t, 2t + 1, 2t + 8, 2t + 9 of each 16), but the
//   output column n of n-tile i is dim g Dv/8 + i: lane g reads bytes [g Dv/8, g Dv/8 + Dv/8) of
//   those four key rows, and byte i of them is n-tile i's B fragment. The merge writes column
//   (2t + c) Dv/8 + i of acc_o[i][c] (out_col).
// The stages are swizzled in 16-byte chunks (chunk c of row r at c ^ (r & SWZ)) so that the eight
// lanes of each shared-memory phase read eight different bank groups.
#pragma once

#include "attnc/core/ptx.cuh"
#include "attnc/features/kv_fp8.cuh"

namespace attnc {

// Reading a swizzled Fp8Stage (kv_fp8.cuh) into registers.
template <int ROWS, int COLS, int SWZ>
struct Fp8SwizzledStage : Fp8Stage<ROWS, COLS, SWZ> {
  using Fp8Stage<ROWS, COLS, SWZ>::chunk_at;

  // BYTES bytes of row `row` from byte `off` (both multiples of 8, not crossing a 16-byte chunk
  // when BYTES is 8) as words.
  template <int BYTES>
  __device__ static void read(const u8* stage, int row, int off, u32 (&w)[BYTES / 4]) {
    if constexpr (BYTES % 16 == 0) {
#pragma unroll
      for (int j = 0; j < BYTES / 16; ++j) {
        const uint4 x = *reinterpret_cast<const uint4*>(stage + 16 * chunk_at(row, off / 16 + j));
        w[4 * j] = x.x; w[4 * j + 1] = x.y; w[4 * j + 2] = x.z; w[4 * j + 3] = x.w;
      }
    } else {
      static_assert(BYTES % 8 == 0, "rows read in 8-byte pieces");
#pragma unroll
      for (int j = 0; j < BYTES / 8; ++j) {
        const int o = off + 8 * j;
        const uint2 x = *reinterpret_cast<const uint2*>(stage + 16 * chunk_at(row, o / 16) + o % 16);
        w[2 * j] = x.x; w[2 * j + 1] = x.y;
      }
    }
  }
};

// One warp's S = Q K^T and O += P V on a staged fp8 tile of BN keys (fp16 mma). Lane = 4 g + t.
template <int D, int DV, int BN, int CACHE>
struct Fp8RegTile {
  static constexpr int KSTEPS = D / 16, NT_O = DV / 8;  // k steps of S; n-tiles of O
  static constexpr int KB = D / 4, VB = DV / 8;         // bytes a lane reads per K row, per V row
  static constexpr int KSWZ = 1, VSWZ = DV % 128 == 0 ? 6 : 2;  // (a phase's 8 lanes: 2 K rows, 4 V rows)
  using KStage = Fp8SwizzledStage<BN, D, KSWZ>;
  using VStage = Fp8SwizzledStage<BN, DV, VSWZ>;
  using KGroup = Fp8SwizzledStage<16, D, KSWZ>;  // 16 rows of a stage (loads go 16 keys at a time)
  using VGroup = Fp8SwizzledStage<16, DV, VSWZ>;
  static_assert(D % 64 == 0 && DV % 64 == 0 && BN % 16 == 0, "lanes read whole 8- or 16-byte pieces");

  // Q's A fragments in the permuted d order, from the block's 16 x D fp16 Q tile (QTile swizzle).
  template <class QTile>
  __device__ static void q_frags(const u16* sQ, int lane, u32 (&qf)[KSTEPS][4]) {
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int kk = 0; kk < KSTEPS; ++kk)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const uint2 x = *reinterpret_cast<const uint2*>(sQ + QTile::offset(g + 8 * r, t * KB + 4 * kk));
        qf[kk][r] = x.x;      // d (2t, 2t + 1) of the step: elements 4 kk, 4 kk + 1 of the lane's run
        qf[kk][2 + r] = x.y;  // d (2t + 8, 2t + 9): elements 4 kk + 2, 4 kk + 3
      }
  }

  // S = Q K^T, Q's fragments from registers (q_frags).
  __device__ static void mma_qk(const u8* sk, int lane, const u32 (&qf)[KSTEPS][4], float (&acc_s)[BN / 8][4]) {
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
      for (int c = 0; c < 4; ++c) acc_s[j][c] = 0.f;
      u32 raw[KB / 4];  // the lane's d run of its key: four k steps a 16-byte load
      KStage::template read<KB>(sk, 8 * j + g, t * KB, raw);
#pragma unroll
      for (int kk = 0; kk < KSTEPS; ++kk) {
        u32 b0, b1;
        fp8x4_to_f16<CACHE>(raw[kk], b0, b1);
        mma_16816<fp16_t>(acc_s[j], qf[kk], b0, b1);
      }
    }
  }

  __device__ static void mma_pv(const u8* sv, int lane, const float (&acc_s)[BN / 8][4], float (&acc_o)[NT_O][4]) {
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      u32 a[4];
      a[0] = pack2<fp16_t>(acc_s[2 * kk][0], acc_s[2 * kk][1]);
      a[1] = pack2<fp16_t>(acc_s[2 * kk][2], acc_s[2 * kk][3]);
      a[2] = pack2<fp16_t>(acc_s[2 * kk + 1][0], acc_s[2 * kk + 1][1]);
      a[3] = pack2<fp16_t>(acc_s[2 * kk + 1][2], acc_s[2 * kk + 1][3]);
      u32 r[4][VB / 4];  // key rows 2t, 2t + 1, 2t + 8, 2t + 9 of the step
#pragma unroll
      for (int q = 0; q < 4; ++q) VStage::template read<VB>(sv, 16 * kk + 2 * t + (q & 1) + 8 * (q >> 1), g * VB, r[q]);
#pragma unroll
      for (int w = 0; w < VB / 4; ++w) {
        u32 b0[4], b1[4];  // n-tiles 4w .. 4w + 3: (key 2t, key 2t + 1) and (2t + 8, 2t + 9) pairs
        fp8x4_to_f16<CACHE>(byte_perm(r[0][w], r[1][w], 0x5140u), b0[0], b0[1]);
        fp8x4_to_f16<CACHE>(byte_perm(r[0][w], r[1][w], 0x7362u), b0[2], b0[3]);
        fp8x4_to_f16<CACHE>(byte_perm(r[2][w], r[3][w], 0x5140u), b1[0], b1[1]);
        fp8x4_to_f16<CACHE>(byte_perm(r[2][w], r[3][w], 0x7362u), b1[2], b1[3]);
#pragma unroll
        for (int e = 0; e < 4; ++e) mma_16816<fp16_t>(acc_o[4 * w + e], a, b0[e], b1[e]);
      }
    }
  }

  // The output column of acc_o[i][c] for a lane with col0 = 2t.
  __device__ static int out_col(int col0, int i, int c) { return (col0 + c) * VB + i; }
};

}  // namespace attnc
