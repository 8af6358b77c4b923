// Shared-memory tiles of 16-bit elements, ROWS x COLS (COLS a multiple of 64), stored with a
// 16-byte-chunk XOR swizzle: chunk c of row r lives at chunk c ^ (r % 8). The eight rows an
// ldmatrix phase reads then fall in eight different bank groups, and cp.async writes stay whole
// 16-byte chunks.
#pragma once

#include "attnc/core/ptx.cuh"

namespace attnc {

template <int ROWS, int COLS>
struct SmemTile {
  static_assert(COLS % 64 == 0, "swizzled tiles need rows of whole 128-byte lines");
  static constexpr int kChunksPerRow = COLS / 8;
  static constexpr int kElems = ROWS * COLS;

  __device__ static int offset(int row, int col) {
    return row * COLS + ((((col >> 3) ^ (row & 7))) << 3) + (col & 7);
  }

  // ldmatrix addressing. Every row a thread addresses has the same (row % 8), so the swizzle of
  // chunk c reduces to c ^ x with one per-thread x: the address of a fragment is a per-thread base,
  // plus compile-time row offsets, plus (c ^ x) * 16 bytes. Keeping it in this form stops the
  // compiler from holding one precomputed address per fragment in registers.
  __device__ static u32 row_base(const u16* tile, int row) { return smem_u32(tile) + 2u * row * COLS; }
  // x < 8 only touches the low three bits of the chunk: the high part folds into the load's
  // immediate offset and only (chunk % 8) ^ x, at most eight values, needs a register.
  __device__ static u32 frag_addr(u32 base, int row_off, int chunk, int x) {
    return base + 2u * row_off * COLS + (u32(chunk & ~7) << 4) + (u32((chunk & 7) ^ x) << 4);
  }

  // Copy rows [0, valid_rows) of a global view into the tile, all NTHREADS threads taking part;
  // one cp.async group is left open. row_ptr(r) gives row r's first element in global memory (so
  // paged and gathered rows load like contiguous ones). Chunks [0, VALID_CHUNKS) are copied,
  // chunks [VALID_CHUNKS, LOAD_CHUNKS) and rows past valid_rows are zero-filled, chunks from
  // LOAD_CHUNKS on are left alone (nothing reads them). Row 0 must be valid: zero-filled copies
  // still name a source address, and row 0's keeps the address arithmetic in one base (an
  // unrelated fallback pointer costs ~40 registers in the attention kernels).
  template <int NTHREADS, int LOAD_CHUNKS = kChunksPerRow, int VALID_CHUNKS = LOAD_CHUNKS, class RowPtr>
  __device__ static void load_rows_async(u16* tile, const RowPtr& row_ptr, int valid_rows, int tid) {
    static_assert(VALID_CHUNKS <= LOAD_CHUNKS && LOAD_CHUNKS <= kChunksPerRow, "chunks within the row");
    const u32 base = smem_u32(tile);
    const u16* any_valid = row_ptr(0);
#pragma unroll
    for (int i = tid; i < ROWS * LOAD_CHUNKS; i += NTHREADS) {
      const int row = i / LOAD_CHUNKS, chunk = i % LOAD_CHUNKS;
      const bool ok = row < valid_rows && chunk < VALID_CHUNKS;
      const u16* g = ok ? row_ptr(row) + chunk * 8 : any_valid;
      cp_async_16(base + 2u * offset(row, chunk * 8), g, ok);
    }
  }

  // The contiguous case: rows `row_stride` elements apart from `src`.
  template <int NTHREADS, int LOAD_CHUNKS = kChunksPerRow, int VALID_CHUNKS = LOAD_CHUNKS>
  __device__ static void load_async(u16* tile, const u16* src, long long row_stride, int valid_rows, int tid) {
    load_rows_async<NTHREADS, LOAD_CHUNKS, VALID_CHUNKS>(
        tile, [&](int r) { return src + r * row_stride; }, valid_rows, tid);
  }

  // Store the first `valid_rows` rows, columns [0, OUT_COLS), to global memory in 16-byte pieces;
  // row_ptr(r) gives row r's destination.
  template <int NTHREADS, int OUT_COLS, class RowPtr>
  __device__ static void store_rows(const u16* tile, const RowPtr& row_ptr, int valid_rows, int tid) {
    static_assert(OUT_COLS % 8 == 0 && OUT_COLS <= COLS, "whole 16-byte chunks of the tile");
    constexpr int kOutChunks = OUT_COLS / 8;
#pragma unroll
    for (int i = tid; i < ROWS * kOutChunks; i += NTHREADS) {
      const int row = i / kOutChunks, chunk = i % kOutChunks;
      if (row < valid_rows) {
        const uint4 v = *reinterpret_cast<const uint4*>(tile + offset(row, chunk * 8));
        *reinterpret_cast<uint4*>(row_ptr(row) + chunk * 8) = v;
      }
    }
  }
};

}  // namespace attnc
