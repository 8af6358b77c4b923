// attention_sm80: FlashAttention-2-style forward (mma.sync m16n8k16, ldmatrix, cp.async multi-stage
// K/V pipeline, online softmax) for sm_80 and later. Two families instantiate it:
//   prefill_sm80   one q head per block, K/V contiguous (varlen) or paged;
//   decode_split   paged K/V, the G q heads of a kv head packed into the rows of one tile, and a
//                  runtime split of the KV range whose partial results SplitCombine merges.
//
// A block computes BLOCK_M rows (see RowMap) of one (request, head[, split]); each warp owns 16
// rows. K/V tiles of BLOCK_N keys stream through STAGES shared-memory buffers, so tile i+STAGES-1
// loads while tile i is computed. Q stays in shared memory and is re-read with ldmatrix per tile.
// Head dims are any multiple of 8: shared-memory rows are padded to 64 columns, the mma steps
// cover ceil(D / 16) * 16 columns and the padding is zero-filled.
//
// Traits (written by the emitter) supply:
//   Element (bf16_t | fp16_t), kHeadDim, kHeadDimV, kBlockM, kBlockN, kWarps, kStages,
//   kGroup (q heads per kv head), kMask (MaskKind), kSoftcap, kAlibi (0 none, 1 linear, 2 sqrt),
//   kSinks, kLse (0 none, 1 base e, 2 base 2), kPaged, kPackGqa, kSplitKv.
#pragma once

#include "attnc/features/kv_source.cuh"
#include "attnc/features/mask.cuh"
#include "attnc/features/online_softmax.cuh"
#include "attnc/features/row_map.cuh"
#include "attnc/features/score.cuh"
#include "attnc/families/combine.cuh"
#include "attnc/params/params.h"
#include "attnc/core/ptx.cuh"
#include "attnc/core/smem_tile.cuh"

namespace attnc {

template <class T>
struct AttentionSm80 {
  using E = typename T::Element;
  static constexpr int D = T::kHeadDim, DV = T::kHeadDimV, G = T::kGroup;
  static constexpr int BM = T::kBlockM, BN = T::kBlockN, STAGES = T::kStages;
  static constexpr int NTHREADS = T::kWarps * 32;
  static constexpr int DP = (D + 63) / 64 * 64, DVP = (DV + 63) / 64 * 64;  // shared-memory row widths
  static constexpr int KSTEPS = (D + 15) / 16;    // mma k steps of S = Q K^T
  static constexpr int DV16 = (DV + 15) / 16;     // 16-wide column blocks of O
  static constexpr int DQO = DP > DVP ? DP : DVP;  // the Q tile is reused to stage the output
  static_assert(BM == 16 * T::kWarps, "each warp owns 16 query rows");
  static_assert(BN % 16 == 0 && D % 8 == 0 && DV % 8 == 0, "mma tiles are 16 wide, rows whole 16-byte chunks");
  static_assert(STAGES >= 2, "at least double buffering");

  using QTile = SmemTile<BM, DQO>;
  using KTile = SmemTile<BN, DP>;
  using VTile = SmemTile<BN, DVP>;
  static constexpr int kSmemBytes = 2 * (QTile::kElems + STAGES * (KTile::kElems + VTile::kElems));

  __device__ static void run(const AttentionParams& p, u16* smem) {
    const int m_block = blockIdx.x, block_head = blockIdx.y;
    const int seq = blockIdx.z / p.num_splits, split = blockIdx.z % p.num_splits;
    const int q_begin = p.cu_seqlens_q ? p.cu_seqlens_q[seq] : seq;
    const int sq = p.cu_seqlens_q ? p.cu_seqlens_q[seq + 1] - q_begin : 1;
    const int m0 = m_block * BM;
    const int rows_total = RowMap<T::kPackGqa, G>::rows_of(sq);
    if (m0 >= rows_total) return;
    const RowMap<T::kPackGqa, G> rows(m0, block_head);
    const int kv_head = T::kPackGqa ? block_head : block_head / G;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int rows_here = min(BM, rows_total - m0);
    const KvSource<T::kPaged> kv(p, seq, kv_head);
    const int sk = kv.sk;

    u16* sQ = smem;
    u16* sK = sQ + QTile::kElems;
    u16* sV = sK + STAGES * KTile::kElems;

    // Key tiles this block visits: the mask's key range over its tokens, cut into splits.
    const Mask<T::kMask> mask(sq, sk, p.window_left, p.window_right);
    const int t0 = rows.token(0), t1 = rows.token(rows_here - 1) + 1;
    int n_begin, n_end;
    mask.key_range(t0, t1, sk, n_begin, n_end);
    n_begin = n_begin / BN * BN;
    int n_tiles = n_end > n_begin ? (n_end - n_begin + BN - 1) / BN : 0;
    if (T::kSplitKv && p.num_splits > 1) {
      const int per_split = (n_tiles + p.num_splits - 1) / p.num_splits;
      const int first = min(n_tiles, split * per_split);
      n_begin += first * BN;
      n_tiles = min(n_tiles, first + per_split) - first;
    }

    const u16* q = static_cast<const u16*>(p.q);
    auto q_row = [&](int r) {
      return q + (q_begin + rows.token(r)) * p.q_row_stride + rows.head(r) * p.q_head_stride;
    };
    auto load_kv = [&](int tile) {
      const int n0 = n_begin + tile * BN, stage = tile % STAGES;
      KTile::template load_rows_async<NTHREADS, 2 * KSTEPS, D / 8>(
          sK + stage * KTile::kElems, kv.k_rows(n0), sk - n0, tid);
      VTile::template load_rows_async<NTHREADS, 2 * DV16, DV / 8>(
          sV + stage * VTile::kElems, kv.v_rows(n0), sk - n0, tid);
    };

    // Prologue: Q with the first tile, then the rest of the pipeline's depth, one group each.
    QTile::template load_rows_async<NTHREADS, 2 * KSTEPS, D / 8>(sQ, q_row, rows_here, tid);
    if (n_tiles > 0) load_kv(0);
    cp_async_commit();
#pragma unroll
    for (int s = 1; s < STAGES - 1; ++s) {
      if (s < n_tiles) load_kv(s);
      cp_async_commit();
    }

    float acc_o[2 * DV16][4];
#pragma unroll
    for (int i = 0; i < 2 * DV16; ++i)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc_o[i][c] = 0.f;
    OnlineSoftmax<2> softmax;
    const ScoreTransform<T::kSoftcap> score(p);

    // Rows and columns of this thread's accumulator elements (mma C layout).
    const int row0 = warp * 16 + lane / 4;  // and row0 + 8
    const int col0 = (lane % 4) * 2;        // and col0 + 1, per 8-wide n tile
    const int tok[2] = {rows.token(row0), rows.token(row0 + 8)};
    const AlibiBias<T::kAlibi> alibi[2] = {AlibiBias<T::kAlibi>(p, seq, rows.head(row0)),
                                           AlibiBias<T::kAlibi>(p, seq, rows.head(row0 + 8))};
    const int shift = sk - sq;

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
      for (int kk = 0; kk < KSTEPS; ++kk) {
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

      // Logits in base 2: softcap, ALiBi, then the mask where the tile crosses a boundary.
      const bool need_mask = mask.tile_needs_mask(t0, t1, n0, n0 + BN, sk);
#pragma unroll
      for (int nt = 0; nt < BN / 8; ++nt)
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const int i = tok[c / 2], j = n0 + nt * 8 + col0 + (c % 2);
          float x = alibi[c / 2](score(acc_s[nt][c]), i + shift - j);
          if (need_mask && (j >= sk || !mask.allowed(i, j))) x = neg_inf();
          acc_s[nt][c] = x;
        }

      float rescale[2];
      softmax.update(acc_s, rescale);
#pragma unroll
      for (int i = 0; i < 2 * DV16; ++i) {
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
        for (int dd = 0; dd < DV16; ++dd) {
          u32 b[4];
          ldmatrix_x4_trans(b, VTile::frag_addr(v_base, kk * 16, 2 * dd, xq));
          mma_16816<E>(acc_o[2 * dd], a, b[0], b[1]);
          mma_16816<E>(acc_o[2 * dd + 1], a, b[2], b[3]);
        }
      }
    }

    // Split parts leave the sink to the combine pass, which sees every part.
    const bool partial = T::kSplitKv && p.num_splits > 1;
    float inv_sum[2], lse2[2];
    if constexpr (T::kSinks) {
      const float sink2[2] = {p.sinks[rows.head(row0)] * kLog2e, p.sinks[rows.head(row0 + 8)] * kLog2e};
      if (partial) softmax.finish(inv_sum, lse2);
      else softmax.template finish<true>(inv_sum, lse2, sink2);
    } else {
      softmax.finish(inv_sum, lse2);
    }
    cp_async_wait<0>();

    if (partial) {
      store_partial(p, split, q_begin, rows, row0, col0, rows_here, acc_o, inv_sum, lse2);
      return;
    }

    // Epilogue: normalise, stage through the Q tile, store 16-byte pieces; LSE per row.
    __syncthreads();  // Q is dead in every warp before it becomes the output buffer
#pragma unroll
    for (int i = 0; i < 2 * DV16; ++i) {
      *reinterpret_cast<u32*>(sQ + QTile::offset(row0, i * 8 + col0)) =
          pack2<E>(acc_o[i][0] * inv_sum[0], acc_o[i][1] * inv_sum[0]);
      *reinterpret_cast<u32*>(sQ + QTile::offset(row0 + 8, i * 8 + col0)) =
          pack2<E>(acc_o[i][2] * inv_sum[1], acc_o[i][3] * inv_sum[1]);
    }
    if constexpr (T::kLse != 0) {
      if (lane % 4 == 0) {
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const int row = row0 + r * 8;
          if (row < rows_here)
            p.lse[(q_begin + rows.token(row)) * p.lse_row_stride + rows.head(row) * p.lse_head_stride] =
                T::kLse == 1 ? lse2[r] * kLn2 : lse2[r];
        }
      }
    }
    __syncthreads();
    u16* o = static_cast<u16*>(p.o);
    QTile::template store_rows<NTHREADS, DV>(
        sQ, [&](int r) { return o + (q_begin + rows.token(r)) * p.o_row_stride + rows.head(r) * p.o_head_stride; },
        rows_here, tid);
  }

  // One split's normalised partial output (fp32) and base-2 LSE, straight from registers.
  template <class Rows>
  __device__ __forceinline__ static void store_partial(const AttentionParams& p, int split, int q_begin, const Rows& rows, int row0,
                                       int col0, int rows_here, const float (&acc_o)[2 * DV16][4],
                                       const float (&inv_sum)[2], const float (&lse2)[2]) {
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = row0 + r * 8;
      if (row >= rows_here) continue;
      const long long slot =
          ((long long)split * p.total_q + q_begin + rows.token(row)) * p.num_q_heads + rows.head(row);
      float* out = p.o_partial + slot * DV;
#pragma unroll
      for (int i = 0; i < 2 * DV16; ++i) {
        const int col = i * 8 + col0;
        if (col < DV)  // DV is a multiple of 8 and col0 even: col < DV implies col + 1 < DV
          *reinterpret_cast<float2*>(out + col) =
              make_float2(acc_o[i][2 * r] * inv_sum[r], acc_o[i][2 * r + 1] * inv_sum[r]);
      }
      if (lane % 4 == 0) p.lse_partial[slot] = lse2[r];
    }
  }
};

}  // namespace attnc
