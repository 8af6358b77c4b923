// prefill_sm90 over a paged KV cache: TMA per page. A key tile of BN keys is BN / R boxes of
// R = gcd(page_size, BN) rows, so every box lies inside one page (page 16 at BN 128: eight boxes;
// page >= BN and a multiple of it: one). Box j of the tile from key n0 holds keys
// [n0 + j R, n0 + j R + R): page pages[(n0 + j R) / page_size] (features/kv_source.cuh reads the
// page list and KV length in all three page-table forms), slot (n0 + j R) % page_size, through a
// 4-D tensor map over the cache plane, (D, page_size slots, Hkv, pages) innermost first, whose
// strides describe every layout. One producer warp loads a tile, lane j issuing box j.
//
// Keys past the request's end: boxes wholly past it are not loaded (their page-table entries need
// not exist), and the rest of the last page is whatever its unwritten slots hold (NaN, say). K
// rows there only make logits the mask replaces; V rows would turn P = 0 into NaN in P V, so the
// producer zeroes them in the last tile after it lands and hands that tile over on its own barrier.
//
// int8 (prefill_sm90_int8.cuh): the int8 K plane's boxes are rows of D bytes as 2-byte pairs. The
// key scales lie in the cache's [num_blocks, Hkv, page_size] fp32, so a box's R scales are
// contiguous: the lane that issues a K box copies them with one bulk copy into the scale ring, on
// the K tile's barrier (load_paged_key_scales; the contiguous kernel's scales, [total_k, Hkv], need
// a warp of loads). Scales past the end (NaN in unwritten slots) only scale logits the mask replaces.
// int8_qkv's raw V boxes land in the raw ring for the widening warps; int8 bytes are never NaN, so
// its last tile needs no zeroing (P = 0 times a finite widened value is 0). int8_qk's 16-bit V
// plane is zeroed as above.
#pragma once

#include "attnc/features/kv_source.cuh"
#include "attnc/params/params.h"
#include "attnc/sm90/fence.cuh"
#include "attnc/sm90/tma.cuh"

namespace attnc {

template <int BN>
struct PagedKvBoxes {
  const int* pages;  // the request's physical page of each logical page
  int page_size;
  int rows;  // R: rows per box
  int sk;    // KV length of the request

  __device__ PagedKvBoxes(const AttentionParams& p, int seq) {
    const KvSource<true> src(p, seq, 0);
    pages = src.pages;
    page_size = src.page_size;
    sk = src.sk;
    int a = page_size, b = BN;
    while (b) {
      const int t = a % b;
      a = b;
      b = t;
    }
    rows = a;
  }

  // Boxes of the tile from key n0 that hold keys of the request.
  __device__ int loaded(int n0) const { return min(BN / rows, (sk - n0 + rows - 1) / rows); }
  __device__ u32 loaded_bytes(int n0, int blocks) const { return u32(loaded(n0) * rows * 128 * blocks); }

  // Page and slot of box j of the tile from key n0; page -1 when the box is not loaded.
  __device__ void locate(int n0, int j, int& page, int& slot) const {
    const int n = n0 + j * rows;
    page = -1;
    slot = 0;
    if (j < BN / rows && n < sk) {
      const int lp = n / page_size;
      page = pages[lp];
      slot = n - lp * page_size;
    }
  }
};

// dst and bar: 32-bit shared addresses (the paged loader keeps its rings' addresses so).
__device__ __forceinline__ void tma_load_4d(u32 dst, const TmaDescriptor* map, u32 bar, int c0, int c1, int c2,
                                            int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, "
      "%6}], [%2];\n" ::"r"(dst),
      "l"(tma_map_address(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}

// int8: this lane's box's R key scales, from (page, slot) of the cache's [num_blocks, Hkv,
// page_size] fp32 (AttentionParams' k_token_scale; a page's slots one float apart) to dst[j R,
// j R + R), by one bulk copy completing on `full` (4 R bytes more for its expect_tx). A bulk copy
// needs 16-byte aligned ends: R and page sizes are multiples of 16, so every offset is a multiple
// of 64 bytes from the scales' start (16-byte aligned: the launcher checks). The strides are read
// from the parameters where they are used (constant memory), not held in the loader's registers.
__device__ __forceinline__ void load_paged_key_scales(const AttentionParams& p, u32 dst, u32 full, int kv_head, int rows,
                                                      int page, int slot, int j) {
  if (page < 0) return;
  const float* src = p.k_token_scale + kv_head * p.k_token_scale_head_stride + page * p.k_token_scale_block_stride + slot;
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                   dst + u32(j * rows * 4)),
               "l"(src), "r"(rows * 4), "r"(full)
               : "memory");
}

// This lane's box of a tile (a SwizzledTile of BN rows and `blocks` 64-column blocks at shared
// address `dst`): R rows at row j R of every column block. A box starts on a 16-row boundary, a
// multiple of the 1024 bytes the 128-byte swizzle repeats over, so the boxes together lay the tile
// out as one BN-row box would.
template <int BN>
__device__ __forceinline__ void load_paged_box(u32 dst, const TmaDescriptor* map, u32 full, int blocks, int kv_head,
                                               int rows, int page, int slot, int j) {
  if (page < 0) return;
  for (int c = 0; c < blocks; ++c)
    tma_load_4d(dst + u32((c * BN * 64 + j * rows * 64) * 2), map, full, c * 64, slot, kv_head, page);
}

// Zero rows [from, BN) of every column block of a tile, by one warp: a row is 128 contiguous
// bytes whatever the swizzle does inside it.
template <int BN>
__device__ __forceinline__ void zero_tile_rows(u16* dst, int blocks, int from, int lane) {
  const uint4 zero = make_uint4(0, 0, 0, 0);
  for (int c = 0; c < blocks; ++c)
    for (int i = from * 8 + lane; i < BN * 8; i += 32) *reinterpret_cast<uint4*>(dst + c * BN * 64 + i * 8) = zero;
}

}  // namespace attnc
