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

  // Columns [16 g, 16 g + 16) of `row` into Tile (a swizzled fp16 SmemTile): two 16-byte stores,
  // zeros where `keep` is false. (A 16-column group never straddles the two boxes.)
  template <class Tile, int CACHE>
  __device__ static void convert_chunk(const u8* stage, u16* tile, int row, int g, bool keep) {
    uint4 a = make_uint4(0, 0, 0, 0), b = a;
    if (keep) {
      const int half = g / kChunks, c = g % kChunks;
      const uint4 w = *reinterpret_cast<const uint4*>(stage + half * ROWS * kHalf + row * kHalf + 16 * c);
      fp8x4_to_f16<CACHE>(w.x, a.x, a.y);
      fp8x4_to_f16<CACHE>(w.y, a.z, a.w);
      fp8x4_to_f16<CACHE>(w.z, b.x, b.y);
      fp8x4_to_f16<CACHE>(w.w, b.z, b.w);
    }
    *reinterpret_cast<uint4*>(tile + Tile::offset(row, 16 * g)) = a;
    *reinterpret_cast<uint4*>(tile + Tile::offset(row, 16 * g + 8)) = b;
  }
};

}  // namespace attnc
