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

  // The block's Q rows as 16-byte chunks (8 columns, D / 8 a row): chunk i + j * NT into thread i's
  // v[j], zeros past rows_here; every load issued before any use (one memory latency a block). The
  // last 64 columns come from q_pe when q and q_pe are given apart.
  template <int D, int NT, int N>
  __device__ void load_q_chunks(const AttentionParams& p, uint4 (&v)[N]) const {
    constexpr int kChunks = D / 8;
    const int dn = p.q_pe ? D - 64 : D;  // columns that come from q
#pragma unroll
    for (int j = 0; j < N; ++j) {
      const int i = threadIdx.x + j * NT, r = i / kChunks, col = (i % kChunks) * 8;
      v[j] = make_uint4(0, 0, 0, 0);
      if (r < rows_here) {
        const long long tok = q_begin + (m0 + r) / H, head = (m0 + r) % H;
        const unsigned short* src =
            col < dn ? static_cast<const unsigned short*>(p.q) + tok * p.q_row_stride + head * p.q_head_stride + col
                     : static_cast<const unsigned short*>(p.q_pe) + tok * p.q_pe_row_stride +
                           head * p.q_pe_head_stride + (col - dn);
        v[j] = *reinterpret_cast<const uint4*>(src);
      }
    }
  }

  // Tile i's page and first slot (page sizes are multiples of BN: a tile lies inside one page).
  __device__ void tile_at(int i, int& page, int& slot) const {
    const int n0 = n_begin + i * BN, lp = n0 / page_size;
    page = pages[lp];
    slot = n0 - lp * page_size;
  }
};

}  // namespace attnc
