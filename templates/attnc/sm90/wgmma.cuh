// Warpgroup matrix multiply (wgmma, sm_90a) over 128-byte-swizzled shared-memory tiles.
//
// SwizzledTile<ROWS, COLS> is the layout TMA's 128-byte swizzle writes and wgmma's 128-byte
// swizzle reads: column blocks of 64 16-bit elements (one 128-byte line per row), one block after
// another, each ROWS x 64 with 16-byte chunk c of row r stored at chunk c ^ (r % 8). A tile starts
// 1024-byte aligned (the swizzle keys on address bits 7-9). Its descriptors address an m64nNk16
// operand: K-major (the K dimension runs along the row: Q and K for S = Q K^T) or MN-major (the N
// dimension runs along the row: V for O = P V).
//
// A wgmma is issued by all 128 threads of a warpgroup: fence, the wgmmas of one step, commit, and
// later wait. Accumulators stay live across the asynchronous window, so every register the
// tensor cores write is fenced (fence_operand) after the wait and before the next ordinary use.
#pragma once

#include "attnc/core/ptx.cuh"
#include "attnc/sm90/wgmma_shapes.cuh"

namespace attnc {

// Shared-memory matrix descriptor (PTX ISA "matrix-descriptor"): start address, leading and stride
// byte offsets (all >> 4), swizzle mode in bits 62-63 (1 = 128-byte).
__device__ __forceinline__ u64 wgmma_desc_128b(u32 smem_addr, u32 leading_bytes, u32 stride_bytes) {
  return u64((smem_addr & 0x3FFFF) >> 4) | (u64(leading_bytes >> 4) << 16) | (u64(stride_bytes >> 4) << 32) |
         (1ull << 62);
}

template <int ROWS, int COLS>
struct SwizzledTile {
  static_assert(ROWS % 8 == 0, "whole 8-row swizzle atoms");
  static constexpr int kBlocks = (COLS + 63) / 64;  // 64-column blocks
  static constexpr int kElems = kBlocks * ROWS * 64;
  static constexpr int kBytes = kElems * 2;
  static constexpr u32 kBlockBytes = ROWS * 128;

  // Element offset of (row, col).
  __device__ static int offset(int row, int col) {
    return (col >> 6) * (ROWS * 64) + row * 64 + ((((col >> 3) & 7) ^ (row & 7)) << 3) + (col & 7);
  }

  // K-major operand: rows [row0, row0 + 64) (A) or the whole N extent (B), K columns
  // [16 * kk, 16 * kk + 16). Eight-row groups are 1024 bytes apart; the leading offset is unused.
  // Offsets join the start-address field by addition (a shared address stays below 2^18, so
  // nothing carries out of it): constant offsets then fold into one add per operand.
  __device__ static u64 desc_k_major(u32 tile, int row0, int kk) {
    return wgmma_desc_128b(tile, 16, 1024) + (((kk >> 2) * kBlockBytes + row0 * 128 + (kk & 3) * 32) >> 4);
  }
  // MN-major B operand (K = rows, N = columns): K rows [16 * kk, 16 * kk + 16), every column block.
  // Column blocks are kBlockBytes apart (leading offset), eight-row groups 1024 bytes.
  __device__ static u64 desc_mn_major(u32 tile, int kk) {
    return wgmma_desc_128b(tile, kBlockBytes, 1024) + ((kk * 16 * 128) >> 4);
  }
};

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Waits until at most N committed groups of this warpgroup are still running.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// Pins the registers in place around asynchronous wgmma: the compiler may not move reads or writes
// of them across this point.
template <int NT>
__device__ __forceinline__ void fence_operand(float (&d)[NT][4]) {
#pragma unroll
  for (int i = 0; i < NT; ++i)
#pragma unroll
    for (int c = 0; c < 4; ++c) asm volatile("" : "+f"(d[i][c])::"memory");
}
template <int NT>
__device__ __forceinline__ void fence_operand(u32 (&a)[NT][4]) {
#pragma unroll
  for (int i = 0; i < NT; ++i)
#pragma unroll
    for (int c = 0; c < 4; ++c) asm volatile("" : "+r"(a[i][c])::"memory");
}

// D[64 x N] (+)= A[64 x 16] * B[16 x N], both from shared memory; A K-major. accumulate = false
// overwrites D (the first K step of a product).
template <class E, int N, int TRANS_B = 0>
__device__ __forceinline__ void wgmma_ss(float (&d)[N / 8][4], u64 a, u64 b, bool accumulate) {
  WgmmaM64<N>::template ss<E, TRANS_B>(d, a, b, accumulate ? 1 : 0);
}

// The same with A in registers: the m16n8k16 A fragment of each warp's 16 rows (as mma.sync),
// which is how an fp32 accumulator of a previous wgmma converts to an operand without leaving
// registers (pack2 pairs of columns).
template <class E, int N, int TRANS_B = 1>
__device__ __forceinline__ void wgmma_rs(float (&d)[N / 8][4], const u32 (&a)[4], u64 b, bool accumulate) {
  WgmmaM64<N>::template rs<E, TRANS_B>(d, a, b, accumulate ? 1 : 0);
}

}  // namespace attnc
