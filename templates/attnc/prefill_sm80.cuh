// prefill_sm80: FlashAttention-2-style forward for varlen Q/K/V (mma.sync m16n8k16, ldmatrix,
// cp.async multi-stage K/V pipeline, online softmax). Runs on sm_80 and later.
//
// One block computes BLOCK_M query rows of one (sequence, q head); each warp owns 16 rows.
// K/V tiles of BLOCK_N keys stream through STAGES shared-memory buffers, so tile i+STAGES-1
// loads while tile i is computed. Q stays in shared memory and is re-read with ldmatrix per tile.
//
// Traits (written by the emitter) supply:
//   Element (bf16_t | fp16_t), kHeadDim, kHeadDimV, kBlockM, kBlockN, kWarps, kStages,
//   kGroup (q heads per kv head), kMask (MaskKind), kSoftcap, kLse (0 none, 1 base e, 2 base 2).
#pragma once

#include "attnc/features/mask.cuh"
#include "attnc/features/online_softmax.cuh"
#include "attnc/features/score.cuh"
#include "attnc/params.h"
#include "attnc/ptx.cuh"
#include "attnc/smem_tile.cuh"

namespace attnc {

template <class T>
struct PrefillSm80 {
  using E = typename T::Element;
  static constexpr int D = T::kHeadDim, DV = T::kHeadDimV;
  static constexpr int BM = T::kBlockM, BN = T::kBlockN, STAGES = T::kStages;
  static constexpr int NTHREADS = T::kWarps * 32;
  static constexpr int DQO = D > DV ? D : DV;  // the Q tile is reused to stage the output
  static_assert(BM == 16 * T::kWarps, "each warp owns 16 query rows");
  static_assert(BN % 16 == 0 && D % 16 == 0 && DV % 16 == 0, "mma tiles are 16 wide");
  static_assert(STAGES >= 2, "at least double buffering");

  using QTile = SmemTile<BM, DQO>;
  using KTile = SmemTile<BN, D>;
  using VTile = SmemTile<BN, DV>;
  static constexpr int kSmemBytes = 2 * (QTile::kElems + STAGES * (KTile::kElems + VTile::kElems));

  __device__ static void run(const PrefillParams& p, u16* smem) {
    const int m_block = blockIdx.x, head = blockIdx.y, seq = blockIdx.z;
    const int q_begin = p.cu_seqlens_q[seq], sq = p.cu_seqlens_q[seq + 1] - q_begin;
    const int k_begin = p.cu_seqlens_k[seq], sk = p.cu_seqlens_k[seq + 1] - k_begin;
    const int m0 = m_block * BM;
    if (m0 >= sq) return;
    const int kv_head = head / T::kGroup;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int rows_here = min(BM, sq - m0);

    u16* sQ = smem;
    u16* sK = sQ + QTile::kElems;
    u16* sV = sK + STAGES * KTile::kElems;

    const Mask<T::kMask> mask(sq, sk, p.window_left, p.window_right);
    int n_begin, n_end;
    mask.key_range(m0, m0 + BM, sk, n_begin, n_end);
    n_begin = n_begin / BN * BN;
    const int n_tiles = n_end > n_begin ? (n_end - n_begin + BN - 1) / BN : 0;

    const u16* q = static_cast<const u16*>(p.q) + (q_begin + m0) * p.q_row_stride + head * p.q_head_stride;
    const u16* k = static_cast<const u16*>(p.k) + k_begin * p.k_row_stride + kv_head * p.k_head_stride;
    const u16* v = static_cast<const u16*>(p.v) + k_begin * p.v_row_stride + kv_head * p.v_head_stride;

    auto load_kv = [&](int tile) {
      const int n0 = n_begin + tile * BN, stage = tile % STAGES;
      KTile::template load_async<NTHREADS>(sK + stage * KTile::kElems, k + n0 * p.k_row_stride,
                                           p.k_row_stride, sk - n0, tid);
      VTile::template load_async<NTHREADS>(sV + stage * VTile::kElems, v + n0 * p.v_row_stride,
                                           p.v_row_stride, sk - n0, tid);
    };

    // Prologue: Q with the first tile, then the rest of the pipeline's depth, one group each.
    QTile::template load_async<NTHREADS>(sQ, q, p.q_row_stride, rows_here, tid);
    if (n_tiles > 0) load_kv(0);
    cp_async_commit();
#pragma unroll
    for (int s = 1; s < STAGES - 1; ++s) {
      if (s < n_tiles) load_kv(s);
      cp_async_commit();
    }

    float acc_o[DV / 8][4];
#pragma unroll
    for (int i = 0; i < DV / 8; ++i)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc_o[i][c] = 0.f;
    OnlineSoftmax<2> softmax;
    const ScoreTransform<T::kSoftcap> score(p);

    // Rows and columns of this thread's accumulator elements (mma C layout).
    const int row0 = warp * 16 + lane / 4;  // and row0 + 8
    const int col0 = (lane % 4) * 2;        // and col0 + 1, per 8-wide n tile

    // Per-thread ldmatrix bases and swizzle keys (see SmemTile::frag_addr). Q and V fragments:
    // rows lane % 16, chunk half lane / 16. K fragments: rows lane % 8 + 8 * (lane / 16), chunk
    // half (lane / 8) % 2.
    const int xq = (lane / 16) ^ (lane % 8), xk = ((lane / 8) % 2) ^ (lane % 8);
    const u32 q_base = QTile::row_base(sQ, warp * 16 + lane % 16);
    const u32 k_base0 = KTile::row_base(sK, lane % 8 + (lane / 16) * 8);
    const u32 v_base0 = VTile::row_base(sV, lane % 16);

    for (int it = 0; it < n_tiles; ++it) {
      __syncthreads();  // every warp is done with the stage the next load overwrites
      if (it + STAGES - 1 < n_tiles) load_kv(it + STAGES - 1);
      cp_async_commit();
      cp_async_wait<STAGES - 1>();
      __syncthreads();

      const int n0 = n_begin + it * BN, stage = it % STAGES;
      const u32 v_base = v_base0 + stage * (2u * VTile::kElems);

      // S = Q K^T for this warp's 16 rows and BN keys.
      float acc_s[BN / 8][4];
#pragma unroll
      for (int i = 0; i < BN / 8; ++i)
#pragma unroll
        for (int c = 0; c < 4; ++c) acc_s[i][c] = 0.f;
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        u32 a[4];
        ldmatrix_x4(a, QTile::frag_addr(q_base, 0, 2 * kk, xq));
        const u32 k_base = k_base0 + stage * (2u * KTile::kElems);
#pragma unroll
        for (int nn = 0; nn < BN / 16; ++nn) {
          u32 b[4];
          ldmatrix_x4(b, KTile::frag_addr(k_base, nn * 16, 2 * kk, xk));
          mma_16816<E>(acc_s[2 * nn], a, b[0], b[1]);
          mma_16816<E>(acc_s[2 * nn + 1], a, b[2], b[3]);
        }
      }

      // Logits in base 2, masked where the tile crosses a boundary.
      const bool need_mask = mask.tile_needs_mask(m0, m0 + BM, n0, n0 + BN, sk);
#pragma unroll
      for (int nt = 0; nt < BN / 8; ++nt)
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          float x = score(acc_s[nt][c]);
          if (need_mask) {
            const int i = m0 + row0 + (c / 2) * 8, j = n0 + nt * 8 + col0 + (c % 2);
            if (j >= sk || !mask.allowed(i, j)) x = neg_inf();
          }
          acc_s[nt][c] = x;
        }

      float rescale[2];
      softmax.update(acc_s, rescale);
#pragma unroll
      for (int i = 0; i < DV / 8; ++i) {
        acc_o[i][0] *= rescale[0];
        acc_o[i][1] *= rescale[0];
        acc_o[i][2] *= rescale[1];
        acc_o[i][3] *= rescale[1];
      }

      // O += P V: P's accumulator fragments become mma A fragments without leaving registers.
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk) {
        u32 a[4];
        a[0] = pack2<E>(acc_s[2 * kk][0], acc_s[2 * kk][1]);
        a[1] = pack2<E>(acc_s[2 * kk][2], acc_s[2 * kk][3]);
        a[2] = pack2<E>(acc_s[2 * kk + 1][0], acc_s[2 * kk + 1][1]);
        a[3] = pack2<E>(acc_s[2 * kk + 1][2], acc_s[2 * kk + 1][3]);
#pragma unroll
        for (int dd = 0; dd < DV / 16; ++dd) {
          u32 b[4];
          ldmatrix_x4_trans(b, VTile::frag_addr(v_base, kk * 16, 2 * dd, xq));
          mma_16816<E>(acc_o[2 * dd], a, b[0], b[1]);
          mma_16816<E>(acc_o[2 * dd + 1], a, b[2], b[3]);
        }
      }
    }

    // Epilogue: normalise, stage through the Q tile, store 16-byte pieces; LSE per row.
    float inv_sum[2], lse2[2];
    softmax.finish(inv_sum, lse2);
    cp_async_wait<0>();
    __syncthreads();  // Q is dead in every warp before it becomes the output buffer
#pragma unroll
    for (int i = 0; i < DV / 8; ++i) {
      *reinterpret_cast<u32*>(sQ + QTile::offset(row0, i * 8 + col0)) =
          pack2<E>(acc_o[i][0] * inv_sum[0], acc_o[i][1] * inv_sum[0]);
      *reinterpret_cast<u32*>(sQ + QTile::offset(row0 + 8, i * 8 + col0)) =
          pack2<E>(acc_o[i][2] * inv_sum[1], acc_o[i][3] * inv_sum[1]);
    }
    if constexpr (T::kLse != 0) {
      if (lane % 4 == 0) {
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const int i = m0 + row0 + r * 8;
          if (i < sq)
            p.lse[(q_begin + i) * p.lse_row_stride + head * p.lse_head_stride] =
                T::kLse == 1 ? lse2[r] * kLn2 : lse2[r];
        }
      }
    }
    __syncthreads();
    u16* o = static_cast<u16*>(p.o) + (q_begin + m0) * p.o_row_stride + head * p.o_head_stride;
    QTile::template store<NTHREADS, DV>(sQ, o, p.o_row_stride, rows_here, tid);
  }
};

}  // namespace attnc
