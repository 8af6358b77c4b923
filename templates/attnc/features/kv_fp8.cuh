// fp8 KV caches (attention-semantics.md §5.1): the paged cache holds e4m3 or e5m2 bytes. A tile is
// copied as it lies in the cache (16-byte cp.async of 16 fp8 elements, so the bytes read stay
// halved) into a staging buffer, then converted in shared memory into the fp16 tile the mma path
// reads: exact (every e4m3 and e5m2 value is an fp16) and cheap (one cvt per two e4m3 elements; an
// e5m2 byte is the top byte of an fp16). The mma runs in fp16 whatever the queries are: bf16 Q is
// converted once per block (QToF16). The dequantisation factors never touch the elements: K's
// multiplies the scores and V's the output rows, once per (request, kv head). The fp8 cvt needs
// sm_89 (the planner refuses older archs).
#pragma once

#include "attnc/core/ptx.cuh"
#include "attnc/params/ops_params.h"  // kCacheSame, kCacheFp8E4m3, kCacheFp8E5m2
#include "attnc/params/params.h"

namespace attnc {

typedef unsigned char u8;

__device__ __forceinline__ u32 byte_perm(u32 a, u32 b, u32 selector) {
  u32 r;
  asm("prmt.b32 %0, %1, %2, %3;\n" : "=r"(r) : "r"(a), "r"(b), "r"(selector));
  return r;
}

// Four fp8 (or int8 V) bytes -> four fp16: bytes 0 and 1 into lo, 2 and 3 into hi (low byte in the low half).
// (To bf16 it would take ~10 instructions per 4 elements: docs/kernels-decode.md.)
template <int CACHE>
__device__ __forceinline__ void fp8x4_to_f16(u32 w, u32& lo, u32& hi) {
  if constexpr (CACHE == kCacheFp8E5m2) {
    lo = byte_perm(w, 0u, 0x1404u);  // an e5m2 byte is the top byte of an fp16
    hi = byte_perm(w, 0u, 0x3424u);
  } else if constexpr (CACHE == kCacheInt8Qkv) {
    // int8 V (features/kv_int8_regs.cuh), exactly: b + 128 in an fp16's low mantissa byte under
    // exponent 2^10 is 1024 + 128 + b, and subtracting 1152 leaves b.
    const u32 x = w ^ 0x80808080u;
    lo = byte_perm(x, 0x64646464u, 0x4140u);
    hi = byte_perm(x, 0x64646464u, 0x4342u);
    asm("sub.f16x2 %0, %0, %2;\n sub.f16x2 %1, %1, %2;\n" : "+r"(lo), "+r"(hi) : "r"(0x64806480u));
  } else {
    asm("{ .reg .b16 l, h;\n mov.b32 {l, h}, %2;\n cvt.rn.f16x2.e4m3x2 %0, l;\n cvt.rn.f16x2.e4m3x2 %1, h; }\n"
        : "=r"(lo), "=r"(hi) : "r"(w));
  }
}

// ROWS rows of COLS fp8 bytes (COLS a multiple of 16) in shared memory. SWZ 0: unswizzled, chunk c
// of row r is the 16 bytes at 16 * (r * COLS / 16 + c), so a warp's conversion reads consecutive
// chunks. SWZ > 0 (features/kv_fp8_regs.cuh, read straight into fragments): chunk c of row r is at
// c ^ (r & SWZ) within the row.
template <int ROWS, int COLS, int SWZ = 0>
struct Fp8Stage {
  static constexpr int kChunks = COLS / 16;  // per row
  static constexpr int kBytes = ROWS * COLS;
  static constexpr int kSpan = SWZ < 2 ? SWZ + 1 : SWZ < 4 ? 4 : 8;  // chunks a row's XOR can reach

  // (Checked where used: 16-bit caches name this type without loading through it.)
  __device__ static int chunk_at(int row, int chunk) {
    static_assert(COLS % 16 == 0 && SWZ < 8 && kChunks % kSpan == 0, "whole 16-byte chunks; the swizzle stays in the row");
    return row * kChunks + (chunk ^ (row & SWZ));
  }

  // Rows [0, valid_rows) of a global view (row_ptr(r): row r's first byte); the rest zero-filled,
  // so keys past the end convert to 0 and 0 * P stays finite. One cp.async group left open.
  template <int NTHREADS, class RowPtr>
  __device__ static void load_rows_async(u8* stage, const RowPtr& row_ptr, int valid_rows, int tid) {
    const u32 base = smem_u32(stage);
    const u8* any_valid = row_ptr(0);
#pragma unroll
    for (int i = tid; i < ROWS * kChunks; i += NTHREADS) {
      const int row = i / kChunks, chunk = i % kChunks;
      const bool ok = row < valid_rows;
      cp_async_16(base + 16u * chunk_at(row, chunk), ok ? row_ptr(row) + 16 * chunk : any_valid, ok);
    }
  }

  // Into Tile (a swizzled SmemTile of fp16 with ROWS rows) as the mma path reads it. A chunk of 16
  // bytes becomes the tile's chunks 2c and 2c + 1; lanes with c % 8 >= 4 store the odd one first,
  // so the eight lanes of a store phase hit eight different bank groups.
  template <int NTHREADS, class Tile, int CACHE>
  __device__ static void convert(const u8* stage, u16* tile, int tid) {
    static_assert(SWZ == 0, "the conversion reads chunks in order");
#pragma unroll
    for (int i = tid; i < ROWS * kChunks; i += NTHREADS) {
      const int row = i / kChunks, c = i % kChunks;
      const uint4 w = *reinterpret_cast<const uint4*>(stage + 16 * i);
      const int odd_first = (c >> 2) & 1;  // (selecting the 8 input bytes costs half of selecting outputs)
      uint4 a, b;
      fp8x4_to_f16<CACHE>(odd_first ? w.z : w.x, a.x, a.y);
      fp8x4_to_f16<CACHE>(odd_first ? w.w : w.y, a.z, a.w);
      fp8x4_to_f16<CACHE>(odd_first ? w.x : w.z, b.x, b.y);
      fp8x4_to_f16<CACHE>(odd_first ? w.y : w.w, b.z, b.w);
      *reinterpret_cast<uint4*>(tile + Tile::offset(row, 16 * c + 8 * odd_first)) = a;
      *reinterpret_cast<uint4*>(tile + Tile::offset(row, 16 * c + 8 * (1 - odd_first))) = b;
    }
  }
};

// bf16 queries against an fp8 cache: Q becomes fp16 in place, scaled by 2^-s so that its largest
// element lies in [2^14, 2^15). That is exact (a power of two, and fp16 holds bf16's 8 significant
// bits; only elements 2^28 below the largest become fp16 subnormals and lose bits, far below what
// the fp32 score resolves), and the caller multiplies the scores by 2^s. Rows [r0, r0 + 16) of a
// SmemTile of D columns, by threads `tid` of `nthreads` (a warp's own rows, or a block's).
template <class QTile, int D>
struct QToF16 {
  static constexpr int kChunks = 16 * D / 8;  // 8 elements each

  __device__ static float amax(const u16* tile, int r0, int tid, int nthreads) {
    float m = 0.f;
    for (int i = tid; i < kChunks; i += nthreads) {
      const uint4 c = *reinterpret_cast<const uint4*>(tile + QTile::offset(r0 + i / (D / 8), (i % (D / 8)) * 8));
      const u32 w[4] = {c.x, c.y, c.z, c.w};
#pragma unroll
      for (int j = 0; j < 4; ++j)
        m = fmaxf(m, fmaxf(fabsf(__uint_as_float(w[j] << 16)), fabsf(__uint_as_float(w[j] & 0xffff0000u))));
    }
    return m;
  }
  // s for the largest |q| (0 for an all-zero Q), kept where 2^s and 2^-s are normal floats.
  __device__ static int exponent(float amax) {
    if (!(amax > 0.f)) return 0;
    const int e = int((__float_as_uint(amax) >> 23) & 0xff) - 127;  // amax in [2^e, 2^(e+1))
    return max(-100, min(113, e - 14));
  }
  __device__ static float pow2(int s) { return __uint_as_float(u32(127 + s) << 23); }
  __device__ static void convert(u16* tile, int r0, int tid, int nthreads, int s) {
    const float f = pow2(-s);
    for (int i = tid; i < kChunks; i += nthreads) {
      uint4* p = reinterpret_cast<uint4*>(tile + QTile::offset(r0 + i / (D / 8), (i % (D / 8)) * 8));
      const uint4 c = *p;
      const u32 w[4] = {c.x, c.y, c.z, c.w};
      u32 h[4];
#pragma unroll
      for (int j = 0; j < 4; ++j)
        h[j] = pack2<fp16_t>(__uint_as_float(w[j] << 16) * f, __uint_as_float(w[j] & 0xffff0000u) * f);
      *p = make_uint4(h[0], h[1], h[2], h[3]);
    }
  }
};

// The dequantisation factors of one (request, kv head): the per-tensor scale ([1], FlashInfer's
// k_scale / v_scale) times FlashAttention-3's descale ([batch, Hkv], any strides), each optional.
struct KvDequant {
  float k = 1.f, v = 1.f;
  KvDequant() = default;
  __device__ KvDequant(const AttentionParams& p, int seq, int kv_head) {
    if (p.k_scale) k = *p.k_scale;
    if (p.v_scale) v = *p.v_scale;
    if (p.k_descale) k *= p.k_descale[seq * p.k_descale_batch_stride + kv_head * p.k_descale_head_stride];
    if (p.v_descale) v *= p.v_descale[seq * p.v_descale_batch_stride + kv_head * p.v_descale_head_stride];
  }
};

// The element type the paged K/V hold, and the one the mma runs in.
template <bool FP8> struct KvElemOf { using type = u16; };
template <> struct KvElemOf<true> { using type = u8; };
template <bool FP8, class E> struct MmaElemOf { using type = E; };
template <class E> struct MmaElemOf<true, E> { using type = fp16_t; };

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

}  // namespace attnc
