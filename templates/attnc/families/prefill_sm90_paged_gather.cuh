// prefill_sm90 over a paged 16-bit KV cache by a cp.async gather (Config paged_gather; traits
// kPagedGather): the producer warpgroup's 128 threads copy each K and V tile as 16-byte chunks
// instead of TMA boxes. At small pages TMA needs many small boxes per tile (page 16, d128: 32 of
// 2 KB per K/V tile pair) and its box rate, not bandwidth, bounds the kernel
// (docs/kernels-prefill-sm90.md, "Paged K/V: cp.async gather").
//
// A tile of BN keys is BN / 16 groups of 16 rows; page sizes are multiples of 16 and tiles start
// on multiples of BN, so a group lies inside one page: lane g of every producer warp reads group
// g's page and slot (PagedKvBoxes with 16-row boxes). Eight threads read one 128-byte line of a
// row, chunk t % 8 of every 64-column block, in one of two ways (copy() picks):
//   copy_groups (BN a multiple of 64): warp w copies whole groups w, w + 4, ..., from their first
//     rows' addresses, which lane g computes for group g and the warp takes by one 64-bit shuffle
//     a group; a thread's rows in it are four rows' stride apart (about half the instructions of
//     copy_tile per tile, 7.6 % faster at page 16, d128: docs/kernels-prefill-sm90.md);
//   copy_tile (otherwise: n80 at d256, whose 5 groups do not share out over 4 warps): thread t
//     copies row t / 8 of every group, taking each group's page and slot by shuffle.
// Each chunk lands where the TMA box would have put it (SwizzledTile::offset: chunk c of row r at
// chunk c ^ (r % 8) of the row's 128-byte line), so the consumers' wgmma descriptors are the TMA
// path's.
//
// Completion: after a tile's copies each thread arrives on the stage's full barrier by
// cp.async.mbarrier.arrive.noinc, which fires once the thread's copies have landed; the full
// barriers are initialised for 128 arrivals on this path. The empty barriers are waited on as on
// the TMA path. Rows past the request's end and columns past D (or Dv) are zero-filled (cp.async
// with 0 source bytes reads nothing, so no page-table entry past the end is read), so the last V
// tile needs no zeroing pass and no v_tail barrier.
#pragma once

#include "attnc/families/prefill_sm90_paged.cuh"
#include "attnc/sm90/mbarrier.cuh"
#include "attnc/sm90/wgmma.cuh"

namespace attnc {

// This thread's arrival on `bar` once all of its earlier cp.async copies have landed; noinc: the
// barrier's expected count includes it.
__device__ __forceinline__ void cp_async_arrive_noinc(u32 bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}

template <int BN>
struct PagedGather {
  static constexpr int kThreads = 128;  // the producer warpgroup
  static constexpr int kGroups = BN / 16;
  static_assert(BN % 16 == 0 && kGroups <= 32, "16-row groups, one per lane");

  PagedKvBoxes<BN> groups;  // 16-row boxes: locate() gives a lane its group's page and slot

  __device__ PagedGather(const AttentionParams& p, int seq) : groups(p, seq) { groups.rows = 16; }

  // Lane g's group of the tile from key n0: its page (-1 past the request's end) and first slot.
  __device__ void locate(int n0, int lane, int& page, int& slot) const { groups.locate(n0, lane, page, slot); }

  // The tile from key n0 of one plane (`plane`: the kv head's first element; strides in elements,
  // a page's rows spanning less than 2^31 of them) into the SwizzledTile<BN, COLS> at shared address
  // dst. page and slot: this lane's group's, from locate(n0).
  template <int COLS>
  __device__ void copy_tile(u32 dst, const u16* plane, long long block_stride, int row_stride, int n0, int page,
                            int slot, int t) const {
    using Tile = SwizzledTile<BN, COLS>;
    const int row = (t / 8) % 16, chunk = t % 8;
    // Row g * 16 + row, column c * 64 + chunk * 8: group g and block c move the chunk by whole
    // swizzle atoms (g * 16 is a multiple of 8), so the offset is this thread's in group 0, block 0,
    // plus a constant.
    const u32 to = dst + 2u * u32(Tile::offset(row, chunk * 8));
    const int from = row * row_stride + chunk * 8;
#pragma unroll
    for (int g = 0; g < kGroups; ++g) {
      const int pg = __shfl_sync(0xffffffffu, page, g), sl = __shfl_sync(0xffffffffu, slot, g);
      const bool row_ok = pg >= 0 && n0 + g * 16 + row < groups.sk;
      const u16* src = plane + max(pg, 0) * block_stride + (sl * row_stride + from);
#pragma unroll
      for (int c = 0; c < Tile::kBlocks; ++c)
        cp_async_16(to + 2u * u32(Tile::offset(g * 16, c * 64)), src + c * 64, row_ok && c * 64 + chunk * 8 < COLS);
    }
  }

  static constexpr int kWarps = kThreads / 32;

  // The tile, by copy_groups where the groups share out over the warps, else by copy_tile (both
  // take the same arguments).
  template <int COLS>
  __device__ void copy(u32 dst, const u16* plane, long long block_stride, int row_stride, int n0, int page, int slot,
                       int t) const {
    if constexpr (kGroups % kWarps == 0)
      copy_groups<COLS>(dst, plane, block_stride, row_stride, n0, page, slot, t);
    else
      copy_tile<COLS>(dst, plane, block_stride, row_stride, n0, page, slot, t);
  }

  // Warp w copies whole groups w, w + 4, ...: lane g computes group g's first row from its page
  // and slot, a group costs one 64-bit shuffle, and its rows are reached by adding four rows'
  // stride, not by per-chunk 64-bit arithmetic. Lane l of a warp copies rows l / 8 + 4 k (k < 4)
  // of its groups.
  template <int COLS>
  __device__ void copy_groups(u32 dst, const u16* plane, long long block_stride, int row_stride, int n0, int page,
                              int slot, int t) const {
    using Tile = SwizzledTile<BN, COLS>;
    const int warp = t / 32, r = t % 32 / 8, chunk = t % 8;
    // This lane's group's first row (the plane itself past the request's end: never read).
    const u16* const group_row = plane + max(page, 0) * block_stride + slot * row_stride;
    // Rows r and r + 4 of group `warp` (their swizzles differ); + 8 rows, + 4 groups and + one
    // column block are whole swizzle atoms, constants.
    const u32 to_even = dst + 2u * u32(Tile::offset(warp * 16 + r, chunk * 8));
    const u32 to_odd = dst + 2u * u32(Tile::offset(warp * 16 + r + 4, chunk * 8));
    // Row k of group warp + kWarps gi is in the request while gi 16 kWarps + 4 k < rows_left.
    const int rows_left = groups.sk - n0 - warp * 16 - r;
    const int from = r * row_stride + chunk * 8;
    static_assert(kGroups % kWarps == 0, "whole groups per warp");
#pragma unroll
    for (int gi = 0; gi < kGroups / kWarps; ++gi) {
      const u16* src = shfl_ptr(group_row, warp + gi * kWarps) + from;
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const bool row_ok = gi * 16 * kWarps + 4 * k < rows_left;
        const u32 to = (k % 2 ? to_odd : to_even) + 2u * u32(Tile::offset(gi * 16 * kWarps + k / 2 * 8, 0));
#pragma unroll
        for (int c = 0; c < Tile::kBlocks; ++c)
          cp_async_16(to + 2u * u32(Tile::offset(0, c * 64)), src + c * 64, row_ok && c * 64 + chunk * 8 < COLS);
        src = advance(src, 4 * row_stride);
      }
    }
  }

  // ptr + n elements, opaque to the compiler: folded into per-row constants, the row steps were
  // hoisted as one 64-bit offset per row and spilled the producer's 32 registers.
  __device__ static const u16* advance(const u16* ptr, int n) {
    const u16* out;
    asm("mad.wide.s32 %0, %1, 2, %2;\n" : "=l"(out) : "r"(n), "l"(ptr));
    return out;
  }

  __device__ static const u16* shfl_ptr(const u16* ptr, int lane) {
    const unsigned long long v = reinterpret_cast<unsigned long long>(ptr);
    const u32 lo = __shfl_sync(0xffffffffu, u32(v), lane), hi = __shfl_sync(0xffffffffu, u32(v >> 32), lane);
    return reinterpret_cast<const u16*>((static_cast<unsigned long long>(hi) << 32) | lo);
  }
};

}  // namespace attnc
