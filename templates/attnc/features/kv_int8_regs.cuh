// int8 decode in registers (decode_bw; docs/kernels-int8.md, "int8 decode_bw"). The int8 K bytes a
// warp staged go straight into the B fragments of an s8 mma (m16n8k32, s32 accumulate) against the
// int8 Q fragments: no conversion at all for Q·Kᵀ. The s32 scores become fp32 and take
// q_scale * k_token_scale per (row, key) before the softmax scale, softcap, ALiBi and mask. V goes
// through Fp8RegTile's P·V (int8 bytes -> fp16 in registers, exact) for int8_qkv, with the
// per-channel v_channel_scale on the output columns at the end; int8_qk's 16-bit V takes the 16-bit
// P·V of attention_sm80.
//
// The reduction axis of S = Q Kᵀ is free to permute (kv_fp8_regs.cuh): lane (g, t) takes bytes
// [t D/4, t D/4 + D/4) of its key's row, and k32 step kk reads words 2 kk (the step's k 4t..4t+3)
// and 2 kk + 1 (k 16 + 4t..): one 16-byte load feeds two k steps. Q's A fragments take the same d
// from Q's rows. The K stages keep kv_fp8_regs.cuh's swizzle (the same read pattern).
#pragma once

#include "attnc/core/ptx.cuh"
#include "attnc/features/kv_fp8_regs.cuh"
#include "attnc/features/kv_source.cuh"

namespace attnc {

// D (s32) += A (16 x 32 s8, row) * B (32 x 8 s8, col).
__device__ __forceinline__ void mma_s8_16832(int (&d)[4], const u32 (&a)[4], u32 b0, u32 b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// One warp's S = Q Kᵀ on a staged int8 tile of BN keys, and its key scales. Lane = 4 g + t.
template <int D, int BN>
struct Int8RegQk {
  // k32 steps (at least one: decode_bw names this struct at every D, int8 is planned only at multiples
  // of 64, and the 16-bit sweep's D < 32 kernels must still compile); bytes a lane reads per K row.
  static constexpr int KSTEPS = D >= 32 ? D / 32 : 1, KB = D / 4;
  using KStage = Fp8SwizzledStage<BN, D, 1>;
  using KGroup = Fp8SwizzledStage<16, D, 1>;  // 16 rows of a stage (loads go 16 keys at a time)

  // The block's 16 rows of int8 Q, row-major [16][D] bytes at sq, rows past rows_here zero.
  // row_ptr(r) is row r's first element in AttentionParams' 2-byte units; int8 rows are only 8-byte
  // aligned (element strides are multiples of 8), so 8-byte loads, once per block.
  template <int NTHREADS, class RowPtr>
  __device__ static void load_q(u8* sq, const RowPtr& row_ptr, int rows_here, int tid) {
    for (int i = tid; i < 16 * D / 8; i += NTHREADS) {
      const int row = i / (D / 8), piece = i % (D / 8);
      uint2 x = make_uint2(0u, 0u);
      if (row < rows_here) x = *reinterpret_cast<const uint2*>(reinterpret_cast<const u8*>(row_ptr(row)) + 8 * piece);
      *reinterpret_cast<uint2*>(sq + row * D + 8 * piece) = x;
    }
  }

  // Q's A fragments in the permuted d order (rows g and g + 8).
  __device__ static void q_frags(const u8* sq, int lane, u32 (&qf)[KSTEPS][4]) {
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int kk = 0; kk < KSTEPS; ++kk)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const uint2 x = *reinterpret_cast<const uint2*>(sq + (g + 8 * r) * D + t * KB + 8 * kk);
        qf[kk][r] = x.x;      // k 4t..4t+3 of the step
        qf[kk][2 + r] = x.y;  // k 16 + 4t..
      }
  }

  // S = Q Kᵀ as fp32 (exact: |sum| <= D * 2^14 < 2^24).
  __device__ static void mma_qk(const u8* sk, int lane, const u32 (&qf)[KSTEPS][4], float (&acc_s)[BN / 8][4]) {
    static_assert(D % 32 == 0 && BN % 16 == 0, "lanes read whole k32 steps of 8 bytes");
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
      int acc[4] = {0, 0, 0, 0};
      u32 raw[KB / 4];
      KStage::template read<KB>(sk, 8 * j + g, t * KB, raw);
#pragma unroll
      for (int kk = 0; kk < KSTEPS; ++kk) mma_s8_16832(acc, qf[kk], raw[2 * kk], raw[2 * kk + 1]);
#pragma unroll
      for (int c = 0; c < 4; ++c) acc_s[j][c] = float(acc[c]);
    }
  }

  // The k_token_scale of keys [n, n + 16) (one page: n is a multiple of 16) into dst[0..16) by lanes
  // 0..15, 4-byte copies (the scale tensor is only 4-byte aligned); keys from `valid` on get 0.
  template <class Kv>
  __device__ static void load_key_scales(float* dst, const AttentionParams& p, const Kv& kv, int kv_head, int n,
                                         int valid, int lane) {
    if (lane >= 16) return;
    const int lp = n / kv.page_size;
    const float* src = p.k_token_scale + kv_head * p.k_token_scale_head_stride +
                       kv.pages[lp] * p.k_token_scale_block_stride +
                       (n - lp * kv.page_size + (lane < valid ? lane : 0)) * p.k_token_scale_row_stride;
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_u32(dst + lane)), "l"(src),
                 "r"(lane < valid ? 4 : 0));
  }

  // Scores of keys 8 j + 2t, 8 j + 2t + 1 (mma C layout) times q_scale (of rows g, g + 8) and the
  // keys' k_token_scale, from the stage's scales `ks`.
  __device__ static void scale_scores(float (&acc_s)[BN / 8][4], const float* ks, int lane, const float (&qs)[2]) {
    const int t = lane % 4;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
      const float2 k = *reinterpret_cast<const float2*>(ks + 8 * j + 2 * t);
      acc_s[j][0] *= qs[0] * k.x;
      acc_s[j][1] *= qs[0] * k.y;
      acc_s[j][2] *= qs[1] * k.x;
      acc_s[j][3] *= qs[1] * k.y;
    }
  }
};

}  // namespace attnc
