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
// The kernel is four phases (run() below): setup (which rows and key tiles this block owns),
// the pipeline (load_kv), compute_tile (S = QK^T, score and mask, softmax update with the O
// rescale, O += PV) and finish (store the output or a split's partial).
//
// Block-sparse traits (`Sparse`, features/block_sparse.cuh): a key tile no row of the block sees is
// neither loaded nor computed (a test per tile, so the pipeline keeps its shape), and the pattern
// masks the tiles it cuts.
//
// Traits (written by the emitter) supply:
//   Element (bf16_t | fp16_t), kHeadDim, kHeadDimV, kBlockM, kBlockN, kWarps, kStages,
//   kGroup (q heads per kv head), kMask (MaskKind), kSoftcap, kAlibi (Alibi), kSinks,
//   kLse (LseOut), kPaged, kPackGqa, kSplitKv, kKvCache (kCacheSame, or an fp8 paged cache: tiles
//   stage as fp8 bytes and convert into one fp16 K/V buffer before the compute, and the mma runs in
//   fp16 with bf16 Q converted once; features/kv_fp8.cuh); int8 kernels also kInt8 (Int8Mode: int8
//   Q/K[/V] widened to 16 bits on their way into shared memory, scales on scores and output;
//   features/int8_scales.cuh).
#pragma once

#include "attnc/core/ptx.cuh"
#include "attnc/core/smem_tile.cuh"
#include "attnc/families/combine.cuh"
#include "attnc/features/alibi.cuh"
#include "attnc/features/block_range.cuh"
#include "attnc/features/block_sparse.cuh"
#include "attnc/features/int8_scales.cuh"
#include "attnc/features/kv_fp8.cuh"
#include "attnc/features/kv_source.cuh"
#include "attnc/features/lse.cuh"
#include "attnc/features/mask.cuh"
#include "attnc/features/online_softmax.cuh"
#include "attnc/features/row_map.cuh"
#include "attnc/features/score.cuh"
#include "attnc/params/params.h"

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
  static constexpr int CACHE = T::kKvCache;
  static constexpr bool FP8 = CACHE != kCacheSame;
  static_assert(!FP8 || (T::kPaged && D % 16 == 0 && DV % 16 == 0), "fp8 caches are paged, rows whole 16-byte chunks");
  // 16-bit K/V buffers the mma reads: the pipeline's stages, or with fp8 the one converted tile
  // (the stages hold fp8 bytes).
  static constexpr int CSTAGES = FP8 ? 1 : STAGES;
  using ME = typename MmaElemOf<FP8, E>::type;           // the mma's element: fp16 against fp8 caches
  static constexpr bool QF16 = FP8 && is_same<E, bf16_t>::value;  // bf16 Q converted to fp16 (QToF16)
  // With fp8 the conversion's shared-memory traffic makes shared memory the limit: each warp keeps
  // its Q fragments in registers (KSTEPS x 4) instead of re-reading them for every tile (up to
  // d192: at d256 the 64 registers would spill).
  static constexpr bool QREG = FP8 && KSTEPS <= 12;

  using QTile = SmemTile<BM, DQO>;
  using KTile = SmemTile<BN, DP>;
  using VTile = SmemTile<BN, DVP>;
  using KStage = Fp8Stage<BN, D>;
  using VStage = Fp8Stage<BN, DV>;
  static constexpr int kStageBytes = FP8 ? STAGES * (KStage::kBytes + VStage::kBytes) : 0;
  // int8: K (and V with Int8Mode::qkv) also stage raw, STAGES deep, before widening.
  using RawK = Int8RawTile<BN, D>;
  using RawV = Int8RawTile<BN, DV>;
  static constexpr int kRawStageBytes = (Int8ModeOf<T>::value != Int8Mode::none ? RawK::kBytes : 0) +
                                        (Int8ModeOf<T>::value == Int8Mode::qkv ? RawV::kBytes : 0);
  static constexpr int kSmemBytes = 2 * (QTile::kElems + CSTAGES * (KTile::kElems + VTile::kElems)) + kStageBytes +
                                    STAGES * kRawStageBytes;

  using Rows = RowMap<T::kPackGqa, G>;
  using Kv = KvSource<T::kPaged, typename KvElemOf<FP8>::type>;
  using MaskT = Mask<T::kMask>;
  using AlibiT = AlibiBias<T::kAlibi>;
  using Sparse = typename SparseOf<T>::type;
  static constexpr Int8Mode I8 = Int8ModeOf<T>::value;
  using Int8T = Int8Scales<I8, T::kPaged>;

  // What one block works on, fixed by setup().
  struct Work {
    int seq, split;     // request, and KV part (split-KV)
    int q_begin, sq;    // the request's first row of q, and its query tokens
    int rows_here;      // rows of this block that exist
    int tid;            // this thread (read once: kept in a register, not re-read per load)
    int t0, t1;         // the query tokens its rows cover
    Rows rows;
    BlockRange keys;
    u16* sQ;
    u16* sK;
    u16* sV;
    unsigned char* sRaw;  // int8: STAGES raw stages of K (then V)
    u8* sK8;  // fp8: the staged stages
    u8* sV8;
  };

  // One thread's part of the compute: its two accumulator rows (mma C layout), O and the softmax.
  struct State {
    int row0, col0;  // rows row0 and row0 + 8; columns col0 and col0 + 1 of every 8-wide n tile
    int tok[2];
    AlibiT alibi[2];
    float acc_o[2 * DV16][4];
    OnlineSoftmax<2> softmax;
    Int8T int8;
    u32 q_base, k_base0, v_base0;  // ldmatrix row bases (SmemTile::frag_addr)
    int xq, xk;                    // and their swizzle keys
    KvDequant dequant;             // fp8: K's factor on the scores, V's on the output
    u32 qf[QREG ? KSTEPS : 1][4];  // QREG: this warp's Q fragments
  };

  __device__ static void run(const AttentionParams& p, u16* smem) {
    Work w;
    if (!setup(p, smem, w)) return;
    const int kv_head = T::kPackGqa ? blockIdx.y : blockIdx.y / G;
    const Kv kv(p, w.seq, kv_head);
    const MaskT mask(w.sq, kv.sk, p.window_left, p.window_right);
    w.keys = block_range<BN>(mask, w.t0, w.t1, kv.sk, w.split, T::kSplitKv ? p.num_splits : 1);

    start_pipeline(p, w, kv);
    State st;
    init_state(p, w, st);
    if constexpr (I8 != Int8Mode::none) {
      const int rows[2] = {st.row0, st.row0 + 8};
      st.int8.init(p, kv, w.seq, kv_head, DV, rows, w.rows_here,
                   [&](int r) { return w.q_begin + w.rows.token(r); }, [&](int r) { return w.rows.head(r); });
    }
    if constexpr (FP8) prepare_q(w, st);
    for (int it = 0; it < w.keys.n_tiles; ++it) {
      advance_pipeline(w, kv, it);
      compute_tile(p, w, mask, kv.sk, it, st);
    }
    finish(p, w, st);
  }

  // --- setup: the request, rows and split of this block; false when its rows do not exist (the
  // grid is sized for the longest request).
  __device__ static bool setup(const AttentionParams& p, u16* smem, Work& w) {
    w.seq = blockIdx.z / p.num_splits;
    w.split = blockIdx.z % p.num_splits;
    w.q_begin = p.cu_seqlens_q ? p.cu_seqlens_q[w.seq] : w.seq;
    w.sq = p.cu_seqlens_q ? p.cu_seqlens_q[w.seq + 1] - w.q_begin : 1;
    const int m0 = blockIdx.x * BM, rows_total = Rows::rows_of(w.sq);
    if (m0 >= rows_total) return false;
    w.rows = Rows(m0, blockIdx.y);
    w.rows_here = min(BM, rows_total - m0);
    w.t0 = w.rows.token(0);
    w.t1 = w.rows.token(w.rows_here - 1) + 1;
    w.sQ = smem;
    w.sK = w.sQ + QTile::kElems;
    w.sV = w.sK + CSTAGES * KTile::kElems;
    w.sK8 = reinterpret_cast<u8*>(w.sV + CSTAGES * VTile::kElems);
    w.sV8 = w.sK8 + STAGES * KStage::kBytes;
    w.sRaw = w.sK8 + kStageBytes;
    w.tid = threadIdx.x;
    return true;
  }

  __device__ static void init_state(const AttentionParams& p, const Work& w, State& st) {
    const int warp = w.tid / 32, lane = w.tid % 32;
    st.row0 = warp * 16 + lane / 4;
    st.col0 = (lane % 4) * 2;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      st.tok[r] = w.rows.token(st.row0 + 8 * r);
      st.alibi[r] = AlibiT(p, w.seq, w.rows.head(st.row0 + 8 * r));
    }
#pragma unroll
    for (int i = 0; i < 2 * DV16; ++i)
#pragma unroll
      for (int c = 0; c < 4; ++c) st.acc_o[i][c] = 0.f;
    // Q and V fragments: rows lane % 16, chunk half lane / 16. K fragments: rows lane % 8 +
    // 8 * (lane / 16), chunk half (lane / 8) % 2.
    st.xq = (lane / 16) ^ (lane % 8);
    st.xk = ((lane / 8) % 2) ^ (lane % 8);
    st.q_base = QTile::row_base(w.sQ, warp * 16 + lane % 16);
    st.k_base0 = KTile::row_base(w.sK, lane % 8 + (lane / 16) * 8);
    st.v_base0 = VTile::row_base(w.sV, lane % 16);
    if constexpr (FP8) st.dequant = KvDequant(p, w.seq, T::kPackGqa ? blockIdx.y : blockIdx.y / G);
  }

  // fp8: once Q has landed, each warp turns its 16 rows into fp16 if they are bf16 (its scores take
  // the power of two back), then holds their fragments in registers.
  __device__ static void prepare_q(const Work& w, State& st) {
    cp_async_wait<STAGES - 2>();  // the first group (Q and tile 0) has landed for this thread
    __syncthreads();              // and for every thread
    if constexpr (QF16) {
      using Q16 = QToF16<QTile, D>;
      const int warp = w.tid / 32, lane = w.tid % 32;
      const int s = Q16::exponent(warp_max(Q16::amax(w.sQ, 16 * warp, lane, 32)));
      Q16::convert(w.sQ, 16 * warp, lane, 32, s);
      __syncwarp();
      st.dequant.k *= Q16::pow2(s);
    }
    load_q_frags(st);
  }

  __device__ static void load_q_frags(State& st) {
    if constexpr (QREG)
#pragma unroll
      for (int kk = 0; kk < KSTEPS; ++kk) ldmatrix_x4(st.qf[kk], QTile::frag_addr(st.q_base, 0, 2 * kk, st.xq));
  }

  // Whether any row of the block sees a key of [n0, n0 + BN) under the block-sparse pattern (the
  // heads of a packed block: its kv head's group). `shift` is sk - sq.
  __device__ static bool tile_visible(const Work& w, int shift, int n0) {
    const int h0 = w.rows.head_base, h1 = T::kPackGqa ? h0 + G - 1 : h0;
    return Sparse::tile_visible(w.t0 + shift, w.t1 - 1 + shift, n0, n0 + BN, h0, h1);
  }

  // --- the pipeline: K/V tile `tile` into its stage, one cp.async group per tile.
  __device__ static void load_kv(const Work& w, const Kv& kv, int tile) {
    const int n0 = w.keys.n_begin + tile * BN, stage = tile % STAGES;
    if (Sparse::kEnabled && !tile_visible(w, kv.sk - w.sq, n0)) return;
    if constexpr (FP8) {
      KStage::template load_rows_async<NTHREADS>(w.sK8 + stage * KStage::kBytes, kv.k_rows(n0), kv.sk - n0, w.tid);
      VStage::template load_rows_async<NTHREADS>(w.sV8 + stage * VStage::kBytes, kv.v_rows(n0), kv.sk - n0, w.tid);
    } else {
      unsigned char* raw = w.sRaw + stage * kRawStageBytes;
      if constexpr (I8 != Int8Mode::none)
        RawK::template load_async<NTHREADS>(raw, kv.k_rows(n0), kv.sk - n0, w.tid);
      else
        KTile::template load_rows_async<NTHREADS, 2 * KSTEPS, D / 8>(w.sK + stage * KTile::kElems, kv.k_rows(n0),
                                                                      kv.sk - n0, w.tid);
      if constexpr (I8 == Int8Mode::qkv)
        RawV::template load_async<NTHREADS>(raw + RawK::kBytes, kv.v_rows(n0), kv.sk - n0, w.tid);
      else
        VTile::template load_rows_async<NTHREADS, 2 * DV16, DV / 8>(w.sV + stage * VTile::kElems, kv.v_rows(n0),
                                                                     kv.sk - n0, w.tid);
    }
  }

  // Q with the first tile, then the rest of the pipeline's depth.
  __device__ static void start_pipeline(const AttentionParams& p, const Work& w, const Kv& kv) {
    const u16* q = static_cast<const u16*>(p.q);
    const auto q_row = [&](int r) {
      return q + (w.q_begin + w.rows.token(r)) * p.q_row_stride + w.rows.head(r) * p.q_head_stride;
    };
    if constexpr (I8 != Int8Mode::none)
      load_int8_rows_widened<QTile, E, NTHREADS, 2 * KSTEPS, D / 8>(w.sQ, q_row, w.rows_here, w.tid);
    else
      QTile::template load_rows_async<NTHREADS, 2 * KSTEPS, D / 8>(w.sQ, q_row, w.rows_here, w.tid);
    if (w.keys.n_tiles > 0) load_kv(w, kv, 0);
    cp_async_commit();
#pragma unroll
    for (int s = 1; s < STAGES - 1; ++s) {
      if (s < w.keys.n_tiles) load_kv(w, kv, s);
      cp_async_commit();
    }
  }

  // Queue tile it + STAGES - 1 into the stage every warp has finished with, and wait for tile it
  // (fp8: and convert it into the 16-bit buffer, which every warp finished with before the first
  // barrier).
  __device__ static void advance_pipeline(const Work& w, const Kv& kv, int it) {
    __syncthreads();
    if (it + STAGES - 1 < w.keys.n_tiles) load_kv(w, kv, it + STAGES - 1);
    cp_async_commit();
    cp_async_wait<STAGES - 1>();
    __syncthreads();
    if constexpr (I8 != Int8Mode::none) {  // the raw int8 stage into the 16-bit tiles the mma steps read
      const int stage = it % STAGES;
      const unsigned char* raw = w.sRaw + stage * kRawStageBytes;
      RawK::template widen<KTile, E, NTHREADS, 2 * KSTEPS>(w.sK + stage * KTile::kElems, raw, w.tid);
      if constexpr (I8 == Int8Mode::qkv)
        RawV::template widen<VTile, E, NTHREADS, 2 * DV16>(w.sV + stage * VTile::kElems, raw + RawK::kBytes, w.tid);
      __syncthreads();
    }
    if constexpr (FP8) {
      convert_stage<NTHREADS>(w, it % STAGES, w.tid);
      __syncthreads();
    }
  }

  // fp8: stage `stage` of the staged K/V into the 16-bit buffer, by NT threads from `tid`.
  template <int NT>
  __device__ static void convert_stage(const Work& w, int stage, int tid) {
    KStage::template convert<NT, KTile, CACHE>(w.sK8 + stage * KStage::kBytes, w.sK, tid);
    VStage::template convert<NT, VTile, CACHE>(w.sV8 + stage * VStage::kBytes, w.sV, tid);
  }

  // --- compute_tile: one K/V tile of keys [n0, n0 + BN) for this warp's 16 rows.
  __device__ static void compute_tile(const AttentionParams& p, const Work& w, const MaskT& mask, int sk, int it,
                                      State& st) {
    const int n0 = w.keys.n_begin + it * BN, stage = it % CSTAGES;
    if (Sparse::kEnabled && !tile_visible(w, sk - w.sq, n0)) return;
    float acc_s[BN / 8][4];
    mma_qk(st, stage, acc_s);
    st.int8.scale_scores(acc_s, n0, st.col0, sk);
    score_and_mask(p, w, mask, sk, n0, st, acc_s);
    float rescale[2];
    st.softmax.update(acc_s, rescale);
    st.softmax.rescale_o(st.acc_o, rescale);
    mma_pv(st, stage, acc_s);
  }

  // S = Q K^T.
  __device__ static void mma_qk(const State& st, int stage, float (&acc_s)[BN / 8][4]) {
#pragma unroll
    for (int i = 0; i < BN / 8; ++i)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc_s[i][c] = 0.f;
    const u32 k_base = st.k_base0 + stage * (2u * KTile::kElems);
#pragma unroll
    for (int kk = 0; kk < KSTEPS; ++kk) {
      u32 a[4];
      if constexpr (QREG) {
#pragma unroll
        for (int j = 0; j < 4; ++j) a[j] = st.qf[kk][j];
      } else {
        ldmatrix_x4(a, QTile::frag_addr(st.q_base, 0, 2 * kk, st.xq));
      }
#pragma unroll
      for (int nn = 0; nn < BN / 16; ++nn) {
        u32 b[4];
        ldmatrix_x4(b, KTile::frag_addr(k_base, nn * 16, 2 * kk, st.xk));
        mma_16816<ME>(acc_s[2 * nn], a, b[0], b[1]);
        mma_16816<ME>(acc_s[2 * nn + 1], a, b[2], b[3]);
      }
    }
  }

  // Logits in base 2: softcap, ALiBi, then the mask where the tile crosses a boundary.
  __device__ static void score_and_mask(const AttentionParams& p, const Work& w, const MaskT& mask, int sk, int n0,
                                        const State& st, float (&acc_s)[BN / 8][4]) {
    ScoreTransform<T::kSoftcap> score(p);
    if constexpr (FP8) score.mul *= st.dequant.k;  // (q . k_stored) * k factor: the true q . k
    const int shift = sk - w.sq, h0 = w.rows.head_base;
    const bool need_mask = mask.tile_needs_mask(w.t0, w.t1, n0, n0 + BN, sk) ||
                           !Sparse::tile_full(w.t0 + shift, w.t1 - 1 + shift, n0, n0 + BN, h0,
                                              T::kPackGqa ? h0 + G - 1 : h0);
    const typename Sparse::Row rows[2] = {typename Sparse::Row(w.rows.head(st.row0)),
                                          typename Sparse::Row(w.rows.head(st.row0 + 8))};
#pragma unroll
    for (int nt = 0; nt < BN / 8; ++nt)
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int i = st.tok[c / 2], j = n0 + nt * 8 + st.col0 + (c % 2);
        float x = st.alibi[c / 2](score(acc_s[nt][c]), i + shift - j);
        if (need_mask && (j >= sk || !mask.allowed(i, j) || !rows[c / 2].allowed(i + shift, j))) x = neg_inf();
        acc_s[nt][c] = x;
      }
  }

  // O += P V: P's accumulator fragments become mma A fragments without leaving registers.
  __device__ static void mma_pv(State& st, int stage, const float (&acc_s)[BN / 8][4]) {
    const u32 v_base = st.v_base0 + stage * (2u * VTile::kElems);
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      u32 a[4];
      a[0] = pack2<ME>(acc_s[2 * kk][0], acc_s[2 * kk][1]);
      a[1] = pack2<ME>(acc_s[2 * kk][2], acc_s[2 * kk][3]);
      a[2] = pack2<ME>(acc_s[2 * kk + 1][0], acc_s[2 * kk + 1][1]);
      a[3] = pack2<ME>(acc_s[2 * kk + 1][2], acc_s[2 * kk + 1][3]);
#pragma unroll
      for (int dd = 0; dd < DV16; ++dd) {
        u32 b[4];
        ldmatrix_x4_trans(b, VTile::frag_addr(v_base, kk * 16, 2 * dd, st.xq));
        mma_16816<ME>(st.acc_o[2 * dd], a, b[0], b[1]);
        mma_16816<ME>(st.acc_o[2 * dd + 1], a, b[2], b[3]);
      }
    }
  }

  // --- finish: normalise, then the output (and LSE), or a split's partial. Split parts leave the
  // sink to the combine pass, which sees every part.
  __device__ static void finish(const AttentionParams& p, const Work& w, State& st) {
    const bool partial = T::kSplitKv && p.num_splits > 1;
    float inv_sum[2], lse2[2];
    if constexpr (T::kSinks) {
      const float sink2[2] = {p.sinks[w.rows.head(st.row0)] * kLog2e, p.sinks[w.rows.head(st.row0 + 8)] * kLog2e};
      if (partial) st.softmax.finish(inv_sum, lse2);
      else st.softmax.template finish<true>(inv_sum, lse2, sink2);
    } else {
      st.softmax.finish(inv_sum, lse2);
    }
    if constexpr (FP8) {
      inv_sum[0] *= st.dequant.v;
      inv_sum[1] *= st.dequant.v;
    }
    cp_async_wait<0>();
    st.int8.template scale_output<2 * DV16, DV>(st.acc_o, st.col0);
    if (partial) store_partial(p, w, st, inv_sum, lse2);
    else store_output(p, w, st, inv_sum, lse2);
  }

  // Stage the normalised rows through the Q tile and store them in 16-byte pieces; LSE per row.
  __device__ static void store_output(const AttentionParams& p, const Work& w, const State& st,
                                      const float (&inv_sum)[2], const float (&lse2)[2]) {
    __syncthreads();  // Q is dead in every warp before it becomes the output buffer
#pragma unroll
    for (int i = 0; i < 2 * DV16; ++i)
#pragma unroll
      for (int r = 0; r < 2; ++r)
        *reinterpret_cast<u32*>(w.sQ + QTile::offset(st.row0 + 8 * r, i * 8 + st.col0)) =
            pack2<E>(st.acc_o[i][2 * r] * inv_sum[r], st.acc_o[i][2 * r + 1] * inv_sum[r]);
    if constexpr (T::kLse != LseOut::none) {
      if (w.tid % 4 == 0) {
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const int row = st.row0 + r * 8;
          if (row < w.rows_here)
            p.lse[(w.q_begin + w.rows.token(row)) * p.lse_row_stride + w.rows.head(row) * p.lse_head_stride] =
                lse_out<T::kLse>(lse2[r]);
        }
      }
    }
    __syncthreads();
    u16* o = static_cast<u16*>(p.o);
    QTile::template store_rows<NTHREADS, DV>(
        w.sQ,
        [&](int r) { return o + (w.q_begin + w.rows.token(r)) * p.o_row_stride + w.rows.head(r) * p.o_head_stride; },
        w.rows_here, w.tid);
  }

  // One split's normalised partial output (fp32) and base-2 LSE, straight from registers.
  __device__ static void store_partial(const AttentionParams& p, const Work& w, const State& st,
                                       const float (&inv_sum)[2], const float (&lse2)[2]) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = st.row0 + r * 8;
      if (row >= w.rows_here) continue;
      const long long slot =
          ((long long)w.split * p.total_q + w.q_begin + w.rows.token(row)) * p.num_q_heads + w.rows.head(row);
      float* out = p.o_partial + slot * DV;
#pragma unroll
      for (int i = 0; i < 2 * DV16; ++i) {
        const int col = i * 8 + st.col0;
        if (col < DV)  // DV is a multiple of 8 and col0 even: col < DV implies col + 1 < DV
          *reinterpret_cast<float2*>(out + col) =
              make_float2(st.acc_o[i][2 * r] * inv_sum[r], st.acc_o[i][2 * r + 1] * inv_sum[r]);
      }
      if (w.tid % 4 == 0) p.lse_partial[slot] = lse2[r];
    }
  }
};

}  // namespace attnc
