// The work of one mla_decode block (mla_decode.cuh, mla_decode_narrow.cuh): BM packed rows (row R is
// token R / H, head R % H) of one request and split-KV part, from blockIdx (x: row block, z:
// request x splits), and its BN-key tiles of the latent cache.
#pragma once

#include "attnc/features/block_range.cuh"
#include "attnc/features/kv_source.cuh"
#include "attnc/features/mask.cuh"
#include "attnc/params/params.h"

namespace attnc {

template <int BM, int BN, int H, MaskKind MASK>
struct MlaBlock {
  int seq, split, m0, rows_here, sq, sk, q_begin;
  int t0, t1;  // the block's tokens [t0, t1)
  int n_begin, n_tiles;
  const int* pages;
  int page_size;

  // False when the row block lies past the request's rows (nothing to do).
  __device__ bool setup(const AttentionParams& p) {
    const int splits = p.num_splits;
    seq = blockIdx.z / splits;
    split = blockIdx.z % splits;
    q_begin = p.cu_seqlens_q ? p.cu_seqlens_q[seq] : seq;
    sq = p.cu_seqlens_q ? p.cu_seqlens_q[seq + 1] - q_begin : 1;
    m0 = blockIdx.x * BM;
    if (m0 >= sq * H) return false;
    rows_here = min(BM, sq * H - m0);
    const KvSource<true> kv(p, seq, 0);
    sk = kv.sk;
    pages = kv.pages;
    page_size = kv.page_size;
    const Mask<MASK> mask(sq, sk, p.window_left, p.window_right);
    t0 = m0 / H;
    t1 = (m0 + rows_here - 1) / H + 1;
    const BlockRange r = block_range<BN>(mask, t0, t1, sk, split, splits);
    n_begin = r.n_begin;
    n_tiles = r.n_tiles;
    return true;
  }

  // Tile i's page and first slot (page sizes are multiples of BN: a tile lies inside one page).
  __device__ void tile_at(int i, int& page, int& slot) const {
    const int n0 = n_begin + i * BN, lp = n0 / page_size;
    page = pages[lp];
    slot = n0 - lp * page_size;
  }
};

}  // namespace attnc
