// int8 attention (attention-semantics.md §5.2) inside the 16-bit attention_sm80 family.
//
// int8 tiles are widened to the 16-bit element type as they are copied to shared memory: int8
// values are exact in fp16 and bf16, and a sum of D <= 256 products of int8 values stays below
// 2^24, so the 16-bit mma with fp32 accumulation gives the s32 product of Q·Kᵀ exactly. The scales
// then act on fp32 values: q_scale * k_token_scale on each score before the softmax scale, softcap,
// ALiBi and mask; with Int8Mode::qkv the per-channel v_channel_scale on the output (it factors out of the
// sum over keys: o[d] = v_channel_scale[d] * sum_j p_j * v8[j, d]), so P·V runs on the exact int8 values of
// V with P rounded to 16 bits as in the 16-bit kernels (docs/kernels-int8.md).
#pragma once

#include "attnc/core/ptx.cuh"
#include "attnc/params/kinds.h"
#include "attnc/params/params.h"

namespace attnc {

// A traits struct's int8 mode; none where it names none (the 16-bit kernels leave kInt8 out).
template <class T, class = void>
struct Int8ModeOf {
  static constexpr Int8Mode value = Int8Mode::none;
};
template <class T>
struct Int8ModeOf<T, decltype(void(T::kInt8))> {
  static constexpr Int8Mode value = T::kInt8;
};

// Two int8 values (bytes `shift / 8` and `shift / 8 + 1` of w) -> two 16-bit elements, exactly.
template <class E>
__device__ __forceinline__ u32 widen_int8x2(u32 w, int shift) {
  const int lo = static_cast<signed char>(w >> shift), hi = static_cast<signed char>(w >> (shift + 8));
  return pack2<E>(float(lo), float(hi));
}

// SmemTile::load_rows_async for rows of int8 elements: the same chunks of 8 elements, the same
// zero fill, row_ptr(r) giving row r's first element (in the 2-byte units of AttentionParams'
// int8 strides), but each chunk is 8 bytes read synchronously and stored widened as 16 bytes.
template <class Tile, class E, int NTHREADS, int LOAD_CHUNKS, int VALID_CHUNKS, class RowPtr>
__device__ void load_int8_rows_widened(u16* tile, const RowPtr& row_ptr, int valid_rows, int tid) {
  constexpr int ROWS = Tile::kElems / (8 * Tile::kChunksPerRow);
#pragma unroll
  for (int i = tid; i < ROWS * LOAD_CHUNKS; i += NTHREADS) {
    const int row = i / LOAD_CHUNKS, chunk = i % LOAD_CHUNKS;
    uint4 out = make_uint4(0, 0, 0, 0);
    if (row < valid_rows && chunk < VALID_CHUNKS) {
      const uint2 w = *reinterpret_cast<const uint2*>(reinterpret_cast<const signed char*>(row_ptr(row)) + chunk * 8);
      out = make_uint4(widen_int8x2<E>(w.x, 0), widen_int8x2<E>(w.x, 16), widen_int8x2<E>(w.y, 0),
                       widen_int8x2<E>(w.y, 16));
    }
    *reinterpret_cast<uint4*>(tile + Tile::offset(row, chunk * 8)) = out;
  }
}

// Raw int8 K/V tiles staged in shared memory: ROWS rows of COLS bytes (COLS a multiple of 8), row
// major. They arrive by cp.async in 8-byte pieces (rows past the valid ones zero-filled), so the
// 16-bit pipeline's depth hides their latency too; widen() then writes them into the 16-bit tile
// the mma steps read.
template <int ROWS, int COLS>
struct Int8RawTile {
  static_assert(COLS % 8 == 0, "rows of whole 8-byte pieces");
  static constexpr int kBytes = ROWS * COLS;

  // Rows [0, valid_rows) from row_ptr(r) (the row's first element, in 2-byte units as
  // AttentionParams' int8 strides); one cp.async group is left open. Row 0 must be valid (its
  // address stands in for the zero-filled pieces).
  template <int NTHREADS, class RowPtr>
  __device__ static void load_async(unsigned char* tile, const RowPtr& row_ptr, int valid_rows, int tid) {
    constexpr int kPieces = COLS / 8;
    const u32 base = smem_u32(tile);
    const signed char* any_valid = reinterpret_cast<const signed char*>(row_ptr(0));
#pragma unroll
    for (int i = tid; i < ROWS * kPieces; i += NTHREADS) {
      const int row = i / kPieces, piece = i % kPieces;
      const bool ok = row < valid_rows;
      const signed char* g = ok ? reinterpret_cast<const signed char*>(row_ptr(row)) + piece * 8 : any_valid;
      asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(base + u32(row * COLS + piece * 8)),
                   "l"(g), "r"(ok ? 8 : 0));
    }
  }

  // Into a 16-bit SmemTile: chunks [0, COLS / 8) widened, chunks [COLS / 8, LOAD_CHUNKS) zero (as
  // SmemTile::load_rows_async leaves the mma steps' padding).
  template <class Tile, class E, int NTHREADS, int LOAD_CHUNKS>
  __device__ static void widen(u16* dst, const unsigned char* tile, int tid) {
#pragma unroll
    for (int i = tid; i < ROWS * LOAD_CHUNKS; i += NTHREADS) {
      const int row = i / LOAD_CHUNKS, chunk = i % LOAD_CHUNKS;
      uint4 out = make_uint4(0, 0, 0, 0);
      if (chunk < COLS / 8) {
        const uint2 w = *reinterpret_cast<const uint2*>(tile + row * COLS + chunk * 8);
        out = make_uint4(widen_int8x2<E>(w.x, 0), widen_int8x2<E>(w.x, 16), widen_int8x2<E>(w.y, 0),
                         widen_int8x2<E>(w.y, 16));
      }
      *reinterpret_cast<uint4*>(dst + Tile::offset(row, chunk * 8)) = out;
    }
  }
};

// One thread's scales: its two accumulator rows' q scales, the key scales of its (request, kv
// head), and the per-channel V scales. Empty work for Int8Mode::none.
template <Int8Mode MODE, bool PAGED>
struct Int8Scales {
  float qs[2];
  const float* ks;    // this (request, kv head)'s key scales: contiguous from its first key, or paged
  const int* pages;   // paged: the request's page list
  int page_size;
  long long ks_row, ks_block;
  const float* vs;    // [Dv] of this kv head (Int8Mode::qkv)

  // rows_here: rows of the block that exist; row_tok / row_head map an accumulator row.
  template <class Kv, class RowTok, class RowHead>
  __device__ void init(const AttentionParams& p, const Kv& kv, int seq, int kv_head, int dv, const int (&rows)[2],
                       int rows_here, const RowTok& row_tok, const RowHead& row_head) {
    if constexpr (MODE != Int8Mode::none) {
#pragma unroll
      for (int r = 0; r < 2; ++r)
        qs[r] = rows[r] < rows_here ? p.q_scale[row_tok(rows[r]) * p.q_scale_row_stride +
                                                row_head(rows[r]) * p.q_scale_head_stride]
                                    : 0.f;
      ks_row = p.k_token_scale_row_stride;
      ks_block = p.k_token_scale_block_stride;
      ks = p.k_token_scale + kv_head * p.k_token_scale_head_stride;
      if constexpr (PAGED) {
        pages = kv.pages;
        page_size = kv.page_size;
      } else {
        ks += p.cu_seqlens_k[seq] * ks_row;
      }
      if constexpr (MODE == Int8Mode::qkv) vs = p.v_channel_scale + (long long)kv_head * dv;
    }
  }

  __device__ float k_token_scale_at(int n) const {
    if constexpr (PAGED) {
      const int lp = n / page_size;
      return ks[pages[lp] * ks_block + (n - lp * page_size) * ks_row];
    } else {
      return ks[n * ks_row];
    }
  }

  // Raw s32-valued scores of keys [n0, n0 + 8 * NT) (mma C layout: columns col0, col0 + 1 of each
  // 8-wide tile, rows 0 and 1 in c / 2) times q_scale * k_token_scale. Keys past sk get 0 (the mask
  // removes them; their page may not exist).
  template <int NT>
  __device__ void scale_scores(float (&acc_s)[NT][4], int n0, int col0, int sk) const {
    if constexpr (MODE != Int8Mode::none) {
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const int j = n0 + nt * 8 + col0 + c;
          const float k = j < sk ? k_token_scale_at(j) : 0.f;
          acc_s[nt][c] *= qs[0] * k;
          acc_s[nt][2 + c] *= qs[1] * k;
        }
    }
  }

  // O columns (i * 8 + col0 + c % 2) times the per-channel V scale (Int8Mode::qkv).
  template <int NI, int DV>
  __device__ void scale_output(float (&acc_o)[NI][4], int col0) const {
    if constexpr (MODE == Int8Mode::qkv) {
#pragma unroll
      for (int i = 0; i < NI; ++i)
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const int col = i * 8 + col0 + c;
          const float v = col < DV ? vs[col] : 0.f;
          acc_o[i][c] *= v;
          acc_o[i][2 + c] *= v;
        }
    }
  }
};

}  // namespace attnc
