// mla_decode over an fp8 latent cache (attention-semantics.md §5.1, §7.3): a 64-key tile arrives
// as its bytes (two unswizzled TMA boxes of half a row: [2][64 rows][288 bytes], 36 KiB, half the
// 16-bit tile's traffic) and the consumers convert it into the swizzled fp16 tile both products
// read (one cvt per two e4m3 elements, exact: every e4m3 / e5m2 value is an fp16). Slots past the
// request's end become zeros, so their V rows add nothing (a slot nobody wrote may hold NaN).
#pragma once

#include "attnc/features/kv_fp8.cuh"

namespace attnc {

template <int ROWS, int COLS>
struct MlaFp8Tile {
  static constexpr int kHalf = COLS / 2;           // bytes of a row in one box
  static constexpr int kChunks = kHalf / 16;       // 16-byte chunks of a half row
  static constexpr int kBytes = ROWS * COLS;
  static constexpr int kBoxCols16 = kHalf / 2;     // the box's width in 16-bit pairs (the tensor map's unit)
  static_assert(kHalf % 16 == 0, "half rows of whole 16-byte chunks");

  // Rows [0, valid) of `stage` into Tile (a swizzled fp16 SmemTile), rows past `valid` zero, by
  // threads `tid` of NTHREADS. A chunk of 16 bytes becomes the tile's 8-column chunks 2g and
  // 2g + 1; lanes with g % 8 >= 4 store the odd one first, so a store phase spreads over the banks.
  template <int NTHREADS, class Tile, int CACHE>
  __device__ static void convert(const u8* stage, u16* tile, int valid, int tid) {
#pragma unroll 3
    for (int i = tid; i < 2 * ROWS * kChunks; i += NTHREADS) {
      const int half = i / (ROWS * kChunks), row = (i / kChunks) % ROWS, c = i % kChunks;
      const int g = (half * kHalf) / 16 + c;  // 16-column group of the row
      uint4 a = make_uint4(0, 0, 0, 0), b = a;
      const int odd_first = (g >> 2) & 1;
      if (row < valid) {
        const uint4 w = *reinterpret_cast<const uint4*>(stage + 16 * i);
        fp8x4_to_f16<CACHE>(odd_first ? w.z : w.x, a.x, a.y);
        fp8x4_to_f16<CACHE>(odd_first ? w.w : w.y, a.z, a.w);
        fp8x4_to_f16<CACHE>(odd_first ? w.x : w.z, b.x, b.y);
        fp8x4_to_f16<CACHE>(odd_first ? w.y : w.w, b.z, b.w);
      }
      *reinterpret_cast<uint4*>(tile + Tile::offset(row, 16 * g + 8 * odd_first)) = a;
      *reinterpret_cast<uint4*>(tile + Tile::offset(row, 16 * g + 8 * (1 - odd_first))) = b;
    }
  }
};

}  // namespace attnc
