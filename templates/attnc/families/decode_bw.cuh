// decode_bw: paged decode built for memory bandwidth (docs/kernels-decode.md). A block serves one
// (request, kv head, split) and 16 packed rows (the group's q heads x the query tokens, RowMap), so
// each KV head is read once. Unlike decode_split, the warps do not share K/V tiles: the block's key
// range is cut into one run of tiles per warp, and every warp streams its run through its own
// STAGES-deep cp.async pipeline with no block barrier in the loop, running the sm80 tile compute
// (AttentionSm80<one warp>::compute_tile: S = QK^T, score and mask, online softmax, O += PV) on
// its own 16 x BN tile. At the end the warps' softmax states and O accumulators are merged in
// shared memory (features/lse.cuh), then stored as the output, or as a split's partial that
// SplitCombine (combine.cuh) merges.
//
// K/V load with one page-table read per 16 keys (KvSource::group): page sizes are multiples of 16 and
// tiles start at multiples of 16, so 16 keys never cross a page. An fp8 cache (kKvCache) stages
// as fp8 bytes in the warp's stages; where D and Dv are multiples of 64 (up to 192) each warp reads
// them straight into mma fragments and converts them there (features/kv_fp8_regs.cuh), otherwise
// it converts its tile into its one fp16 K/V buffer before computing it (features/kv_fp8.cuh).
// int8 (kInt8, D and Dv multiples of 64 up to 192) stages its K bytes (and int8_qkv's V bytes, or
// int8_qk's 16-bit V rows) with the keys' k_token_scale, and reads them straight into an s8 mma for
// Q·Kᵀ and an fp16 P·V (features/kv_int8_regs.cuh).
//
// Traits: as attention_sm80.cuh's, with kBlockM = 16 (the rows of a block), kWarps (warps on
// separate keys), kBlockN (the keys of one warp's tile), kPaged, kPackGqa and kSplitKv true.
#pragma once

#include "attnc/families/attention_sm80.cuh"
#include "attnc/features/kv_fp8_regs.cuh"
#include "attnc/features/kv_int8_regs.cuh"

namespace attnc {

// The sm80 tile compute run by one warp on 16 rows.
template <class T>
struct OneWarp : T {
  static constexpr int kBlockM = 16;
  static constexpr int kWarps = 1;
};

template <class T>
struct DecodeBw {
  using Tile = AttentionSm80<OneWarp<T>>;
  using E = typename T::Element;
  static constexpr int W = T::kWarps, BN = T::kBlockN, STAGES = T::kStages, DV = T::kHeadDimV;
  static constexpr int NTHREADS = 32 * W;
  static constexpr int KSTEPS = Tile::KSTEPS, DP = Tile::DP, DVP = Tile::DVP;
  static_assert(T::kBlockM == 16, "a block holds 16 rows; warps split the keys");
  static_assert(T::kPaged && T::kPackGqa, "decode reads a paged cache with the group packed");
  static_assert(BN % 16 == 0, "tiles are whole 16-key page groups");

  using QTile = typename Tile::QTile;
  using KTile = typename Tile::KTile;
  using VTile = typename Tile::VTile;
  using KGroup = SmemTile<16, DP>;  // 16 rows of a K tile: same swizzle, rows 16 * g on
  using VGroup = SmemTile<16, DVP>;
  static constexpr bool FP8 = Tile::FP8;
  static constexpr int CSTAGES = Tile::CSTAGES;
  using KStage = typename Tile::KStage;  // fp8: one warp's staged tile (16-key groups 16 * D bytes apart)
  using VStage = typename Tile::VStage;
  // fp8 converted in registers (no 16-bit K/V buffers; Q's fragments in registers, permuted).
  static constexpr bool FP8_REGS = FP8 && Tile::QREG && T::kHeadDim % 64 == 0 && DV % 64 == 0;
  using RegTile = Fp8RegTile<T::kHeadDim, DV, BN, Tile::CACHE>;
  // int8: K bytes into s8 fragments; int8_qkv's V bytes through Fp8RegTile's P·V (int8 -> fp16).
  static constexpr Int8Mode I8 = Tile::I8;
  static constexpr bool INT8 = I8 != Int8Mode::none, V8 = I8 == Int8Mode::qkv;
  using Int8Qk = Int8RegQk<T::kHeadDim, BN>;
  static constexpr int I8STEPS = INT8 ? Int8Qk::KSTEPS : 1;  // (Q's s8 fragments: none without int8)
  using Int8V = Fp8RegTile<T::kHeadDim, DV, BN, kCacheInt8Qkv>;
  static_assert(!INT8 || (T::kHeadDim % 64 == 0 && DV % 64 == 0), "int8 rows are read in whole 16-byte pieces");
  // int8: a warp's STAGES stages of K bytes, then of V bytes (int8_qkv) or 16-bit V tiles (int8_qk),
  // then of the keys' scales.
  static constexpr int kI8K = BN * T::kHeadDim, kI8V = V8 ? BN * DV : 2 * VTile::kElems;
  static constexpr int kI8Stage = kI8K + kI8V + 4 * BN;
  // One warp's part: its 16-bit K/V buffers (the stages, or fp8's converted tile), then fp8 stages.
  static constexpr int kWarpBytes = INT8 ? STAGES * kI8Stage
                                         : 2 * (FP8_REGS ? 0 : CSTAGES) * (KTile::kElems + VTile::kElems) +
                                               (FP8 ? STAGES * (KStage::kBytes + VStage::kBytes) : 0);
  // The merge overlays the pipeline: each warp's O [16][OS] fp32 (rows padded by 8 floats, so a
  // quad's rows fall in different banks), then its row max and sum [16] apart from it.
  static constexpr int OS = DV + 8;
  static constexpr int kMergeBytes = 4 * W * 16 * OS;
  // (fp8 stages may be smaller than the merge: the area takes the larger)
  static constexpr int kPipeBytes =
      2 * QTile::kElems + W * kWarpBytes > kMergeBytes ? 2 * QTile::kElems + W * kWarpBytes : kMergeBytes;
  static constexpr int kStatsOffset = kPipeBytes;
  static constexpr int kSmemBytes = kStatsOffset + 4 * 2 * W * 16;

  using Work = typename Tile::Work;
  using State = typename Tile::State;
  using Kv = typename Tile::Kv;
  using MaskT = typename Tile::MaskT;

  __device__ static void run(const AttentionParams& p, u16* smem) {
    Work w;
    if (!Tile::setup(p, smem, w)) return;
    const int warp = w.tid / 32;
    const Kv kv(p, w.seq, blockIdx.y);
    const MaskT mask(w.sq, kv.sk, p.window_left, p.window_right);
    const BlockRange block = block_range_even_parts<BN>(mask, MaskT(w.sq, p.max_seqlen_k, p.window_left, p.window_right),
                                                        w.t0, w.t1, kv.sk, p.max_seqlen_k, w.split,
                                                        T::kSplitKv ? p.num_splits : 1);
    if (T::kSplitKv && p.num_splits > 1 && block.n_tiles == 0) {  // a part past a short request's keys
      store_empty_partial(p, w);
      return;
    }

    load_q(p, w);
    Work mine = w;  // this warp's keys, stages and lanes
    mine.keys = warp_range(block, warp);
    mine.sK = reinterpret_cast<u16*>(reinterpret_cast<char*>(w.sQ + QTile::kElems) + warp * kWarpBytes);
    mine.sV = mine.sK + CSTAGES * KTile::kElems;  // (FP8_REGS: no 16-bit buffers, the stages start at sK)
    mine.sK8 = FP8_REGS ? reinterpret_cast<u8*>(mine.sK) : reinterpret_cast<u8*>(mine.sV + CSTAGES * VTile::kElems);
    mine.sV8 = mine.sK8 + STAGES * KStage::kBytes;
    if constexpr (INT8) {
      mine.sK8 = reinterpret_cast<u8*>(mine.sK);
      mine.sV8 = mine.sK8 + STAGES * kI8K;
      mine.sV = reinterpret_cast<u16*>(mine.sV8);  // (int8_qk: Tile::mma_pv's V tiles)
    }
    mine.tid = w.tid % 32;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < mine.keys.n_tiles && visible(mine, kv, s)) load_kv(p, mine, kv, s);
      cp_async_commit();
    }
    cp_async_wait<STAGES - 1>();  // Q (the oldest group) has landed for this thread
    __syncthreads();              // and for every thread

    State st;
    Tile::init_state(p, mine, st);
    if constexpr (Tile::QF16) st.dequant.k *= q_to_f16(w);
    u32 qf8[I8STEPS][4];  // int8: Q's s8 fragments
    if constexpr (INT8) {
      const int rows[2] = {st.row0, st.row0 + 8};
      st.int8.init(p, kv, w.seq, blockIdx.y, DV, rows, w.rows_here,
                   [&](int r) { return w.q_begin + w.rows.token(r); }, [&](int r) { return w.rows.head(r); });
      Int8Qk::q_frags(reinterpret_cast<const u8*>(w.sQ), mine.tid, qf8);
    } else if constexpr (FP8_REGS) {
      RegTile::template q_frags<QTile>(w.sQ, mine.tid, st.qf);
    } else {
      Tile::load_q_frags(st);  // (fp8: Q's fragments stay in registers)
    }
    for (int it = 0; it < mine.keys.n_tiles; ++it) {
      __syncwarp();  // the stage refilled next was read by every lane at it - 1
      if (it + STAGES - 1 < mine.keys.n_tiles && visible(mine, kv, it + STAGES - 1))
        load_kv(p, mine, kv, it + STAGES - 1);
      cp_async_commit();
      cp_async_wait<STAGES - 1>();
      __syncwarp();  // every lane's copies of tile it are visible to the warp
      if constexpr (INT8) {
        compute_tile_int8(p, mine, mask, kv.sk, it, qf8, st);
      } else if constexpr (FP8_REGS) {
        compute_tile_fp8(p, mine, mask, kv.sk, it, st);
      } else {
        if constexpr (FP8) {  // the 16-bit buffer was last read at it - 1, before the first __syncwarp
          Tile::template convert_stage<32>(mine, it % STAGES, mine.tid);
          __syncwarp();
        }
        Tile::compute_tile(p, mine, mask, kv.sk, it, st);
      }
    }
    cp_async_wait<0>();
    merge_and_store(p, mine, st);
  }

  // Tile::compute_tile on a staged fp8 tile, the fragments converted in registers.
  __device__ static void compute_tile_fp8(const AttentionParams& p, const Work& w, const MaskT& mask, int sk, int it,
                                          State& st) {
    const int n0 = w.keys.n_begin + it * BN, stage = it % STAGES;
    if (Tile::Sparse::kEnabled && !Tile::tile_visible(w, sk - w.sq, n0)) return;
    float acc_s[BN / 8][4];
    RegTile::mma_qk(w.sK8 + stage * KStage::kBytes, w.tid, st.qf, acc_s);
    Tile::score_and_mask(p, w, mask, sk, n0, st, acc_s);
    float rescale[2];
    st.softmax.update(acc_s, rescale);
    st.softmax.rescale_o(st.acc_o, rescale);
    RegTile::mma_pv(w.sV8 + stage * VStage::kBytes, w.tid, acc_s, st.acc_o);
  }

  // Tile::compute_tile on a staged int8 tile: s8 Q·Kᵀ, the scales on the scores, then P·V on int8
  // V bytes converted in registers (int8_qkv) or on the 16-bit V tile (int8_qk).
  __device__ static void compute_tile_int8(const AttentionParams& p, const Work& w, const MaskT& mask, int sk, int it,
                                           const u32 (&qf)[I8STEPS][4], State& st) {
    const int n0 = w.keys.n_begin + it * BN, stage = it % STAGES;
    if (Tile::Sparse::kEnabled && !Tile::tile_visible(w, sk - w.sq, n0)) return;
    float acc_s[BN / 8][4];
    Int8Qk::mma_qk(w.sK8 + stage * kI8K, w.tid, qf, acc_s);
    Int8Qk::scale_scores(acc_s, key_scales(w, stage), w.tid, st.int8.qs);
    Tile::score_and_mask(p, w, mask, sk, n0, st, acc_s);
    float rescale[2];
    st.softmax.update(acc_s, rescale);
    st.softmax.rescale_o(st.acc_o, rescale);
    if constexpr (V8) Int8V::mma_pv(w.sV8 + stage * kI8V, w.tid, acc_s, st.acc_o);
    else Tile::mma_pv(st, stage, acc_s);
  }

  // int8: the key scales of a warp's stage.
  __device__ static float* key_scales(const Work& w, int stage) {
    return reinterpret_cast<float*>(w.sV8 + STAGES * kI8V + stage * 4 * BN);
  }

  // bf16 Q against an fp8 cache: the block's Q tile (landed) into fp16 in place, the warps' maxima
  // met in the stats area (free until the merge); returns the power of two the scores take back.
  __device__ static float q_to_f16(const Work& w) {
    using Q16 = QToF16<QTile, T::kHeadDim>;
    float* s_max = reinterpret_cast<float*>(reinterpret_cast<char*>(w.sQ) + kStatsOffset);
    const float m = warp_max(Q16::amax(w.sQ, 0, w.tid, NTHREADS));
    if (w.tid % 32 == 0) s_max[w.tid / 32] = m;
    __syncthreads();
    float all = 0.f;
#pragma unroll
    for (int i = 0; i < W; ++i) all = fmaxf(all, s_max[i]);
    const int s = Q16::exponent(all);
    __syncthreads();  // every warp read the maxima and Q before any thread writes Q
    Q16::convert(w.sQ, 0, w.tid, NTHREADS, s);
    __syncthreads();
    return Q16::pow2(s);
  }

  // Block-sparse: a tile no row sees is not loaded (compute_tile skips it too).
  __device__ static bool visible(const Work& w, const Kv& kv, int tile) {
    return Tile::tile_visible(w, kv.sk - w.sq, w.keys.n_begin + tile * BN);
  }

  // Warp `warp`'s run of the block's tiles: W contiguous runs whose lengths differ by at most one.
  __device__ static BlockRange warp_range(const BlockRange& b, int warp) {
    const int first = b.n_tiles * warp / W, last = b.n_tiles * (warp + 1) / W;
    return {b.n_begin + first * BN, last - first};
  }

  // The block's 16 rows of Q, one cp.async group of its own (the oldest).
  __device__ static void load_q(const AttentionParams& p, const Work& w) {
    const u16* q = static_cast<const u16*>(p.q);
    const auto q_row = [&](int r) {
      return q + (w.q_begin + w.rows.token(r)) * p.q_row_stride + w.rows.head(r) * p.q_head_stride;
    };
    if constexpr (INT8)  // (synchronous: its group is empty)
      Int8Qk::template load_q<NTHREADS>(reinterpret_cast<u8*>(w.sQ), q_row, w.rows_here, w.tid);
    else
      QTile::template load_rows_async<NTHREADS, 2 * KSTEPS, T::kHeadDim / 8>(w.sQ, q_row, w.rows_here, w.tid);
    cp_async_commit();
  }

  // One warp's tile `tile` into its stage, 16 keys (one page-table read) at a time. A group past
  // the KV length is zero-filled; its copies name the tile's first group, which exists.
  __device__ static void load_kv(const AttentionParams& p, const Work& w, const Kv& kv, int tile) {
    const int n0 = w.keys.n_begin + tile * BN, stage = tile % STAGES;
#pragma unroll
    for (int g = 0; g < BN / 16; ++g) {
      const int n = n0 + 16 * g, valid = kv.sk - n;
      const auto rows = kv.group(valid > 0 ? n : n0);
      if constexpr (INT8) {  // int8 rows in AttentionParams' 2-byte units (int8_args.cpp), as bytes
        const StridedRows<u8> k8{reinterpret_cast<const u8*>(rows.k.base), 2 * rows.k.stride};
        Int8Qk::KGroup::template load_rows_async<32>(w.sK8 + stage * kI8K + 16 * g * T::kHeadDim, k8, valid, w.tid);
        if constexpr (V8) {
          const StridedRows<u8> v8{reinterpret_cast<const u8*>(rows.v.base), 2 * rows.v.stride};
          Int8V::VGroup::template load_rows_async<32>(w.sV8 + stage * kI8V + 16 * g * DV, v8, valid, w.tid);
        } else {
          VGroup::template load_rows_async<32, 2 * Tile::DV16, DV / 8>(
              w.sV + stage * VTile::kElems + 16 * g * DVP, rows.v, valid, w.tid);
        }
        Int8Qk::load_key_scales(key_scales(w, stage) + 16 * g, p, kv, blockIdx.y, valid > 0 ? n : n0, valid, w.tid);
      } else if constexpr (FP8_REGS) {  // (16-row groups: the swizzle's row bits are the tile's)
        u8* sk = w.sK8 + stage * KStage::kBytes + 16 * g * T::kHeadDim;
        u8* sv = w.sV8 + stage * VStage::kBytes + 16 * g * DV;
        RegTile::KGroup::template load_rows_async<32>(sk, rows.k, valid, w.tid);
        RegTile::VGroup::template load_rows_async<32>(sv, rows.v, valid, w.tid);
      } else if constexpr (FP8) {
        u8* sk = w.sK8 + stage * KStage::kBytes + 16 * g * T::kHeadDim;
        u8* sv = w.sV8 + stage * VStage::kBytes + 16 * g * DV;
        Fp8Stage<16, T::kHeadDim>::template load_rows_async<32>(sk, rows.k, valid, w.tid);
        Fp8Stage<16, DV>::template load_rows_async<32>(sv, rows.v, valid, w.tid);
      } else {
        u16* sk = w.sK + stage * KTile::kElems;
        u16* sv = w.sV + stage * VTile::kElems;
        KGroup::template load_rows_async<32, 2 * KSTEPS, T::kHeadDim / 8>(sk + 16 * g * DP, rows.k, valid, w.tid);
        VGroup::template load_rows_async<32, 2 * Tile::DV16, DV / 8>(sv + 16 * g * DVP, rows.v, valid, w.tid);
      }
    }
  }

  // A split part with no keys: LSE -inf for its rows, which the combine weighs 0 without reading
  // their O (so the block writes 64 bytes, not 16 x Dv floats).
  __device__ static void store_empty_partial(const AttentionParams& p, const Work& w) {
    const int row = threadIdx.x;
    if (row >= w.rows_here) return;
    const int token = w.q_begin + w.rows.token(row), head = w.rows.head(row);
    p.lse_partial[((long long)w.split * p.total_q + token) * p.num_q_heads + head] = neg_inf();
  }

  // Merge the W warps' states and store the rows: the output and LSE (the sink joins here), or the
  // split's normalised partial and base-2 LSE (the combine adds the sink once). `w` is this warp's
  // Work (its rows are the block's); the thread index is read again here rather than kept live
  // through the loop (d256 is at the register limit).
  __device__ static void merge_and_store(const AttentionParams& p, const Work& w, State& st) {
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    float* s_o = reinterpret_cast<float*>(w.sQ);
    float* s_max = reinterpret_cast<float*>(reinterpret_cast<char*>(w.sQ) + kStatsOffset);
    float* s_sum = s_max + W * 16;
    __syncthreads();  // every warp is done with Q and its stages: the merge overlays them
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = st.row0 + 8 * r;
      const float sum = quad_sum(st.softmax.row_sum[r]);
      if (lane % 4 == 0) {
        s_max[warp * 16 + row] = st.softmax.row_max[r];
        s_sum[warp * 16 + row] = sum;
      }
#pragma unroll
      for (int i = 0; i < 2 * Tile::DV16; ++i) {
        const int col = i * 8 + st.col0;
        if constexpr (FP8_REGS || V8) {  // columns permuted (Fp8RegTile::mma_pv)
          s_o[(warp * 16 + row) * OS + RegTile::out_col(st.col0, i, 0)] = st.acc_o[i][2 * r];
          s_o[(warp * 16 + row) * OS + RegTile::out_col(st.col0, i, 1)] = st.acc_o[i][2 * r + 1];
        } else if (col < DV) {  // DV is a multiple of 8 and col0 even: col + 1 < DV too
          *reinterpret_cast<float2*>(s_o + (warp * 16 + row) * OS + col) =
              make_float2(st.acc_o[i][2 * r], st.acc_o[i][2 * r + 1]);
        }
      }
    }
    __syncthreads();

    const bool partial = T::kSplitKv && p.num_splits > 1;
    constexpr int kChunks = DV / 8;
    float v_factor = 1.f;  // fp8: V's dequantisation factor, on the output rows
    if constexpr (FP8) v_factor = KvDequant(p, w.seq, blockIdx.y).v;
    for (int task = tid; task < 16 * kChunks; task += NTHREADS) {
      const int row = task / kChunks, c = (task % kChunks) * 8;
      if (row >= w.rows_here) break;  // tasks go row by row
      float mx[W], sm[W], weight[W];
#pragma unroll
      for (int i = 0; i < W; ++i) {
        mx[i] = s_max[i * 16 + row];
        sm[i] = s_sum[i * 16 + row];
      }
      Lse2 total = lse2_union(mx, sm, weight);
      float out_scale = 1.f;
      if constexpr (T::kSinks)
        if (!partial) out_scale = total.join(p.sinks[w.rows.head(row)] * kLog2e);
      if constexpr (FP8) out_scale *= v_factor;
      const float inv = total.sum > 0.f ? out_scale / total.sum : 0.f;
      float acc[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) acc[j] = 0.f;
#pragma unroll
      for (int i = 0; i < W; ++i) {
        const float4* src = reinterpret_cast<const float4*>(s_o + (i * 16 + row) * OS + c);
        const float4 a = src[0], b = src[1];
        const float f = weight[i] * inv;
        acc[0] += f * a.x; acc[1] += f * a.y; acc[2] += f * a.z; acc[3] += f * a.w;
        acc[4] += f * b.x; acc[5] += f * b.y; acc[6] += f * b.z; acc[7] += f * b.w;
      }
      if constexpr (V8)  // int8_qkv: the per-channel V scales (they factor out of the sum over keys)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[j] *= p.v_channel_scale[blockIdx.y * DV + c + j];
      const int token = w.q_begin + w.rows.token(row), head = w.rows.head(row);
      if (partial) {
        const long long slot = ((long long)w.split * p.total_q + token) * p.num_q_heads + head;
        float4* out = reinterpret_cast<float4*>(p.o_partial + slot * DV + c);
        out[0] = make_float4(acc[0], acc[1], acc[2], acc[3]);
        out[1] = make_float4(acc[4], acc[5], acc[6], acc[7]);
        if (c == 0) p.lse_partial[slot] = total.value();
      } else {
        uint4 v;
        v.x = pack2<E>(acc[0], acc[1]);
        v.y = pack2<E>(acc[2], acc[3]);
        v.z = pack2<E>(acc[4], acc[5]);
        v.w = pack2<E>(acc[6], acc[7]);
        *reinterpret_cast<uint4*>(static_cast<u16*>(p.o) + token * p.o_row_stride + head * p.o_head_stride + c) = v;
        if constexpr (T::kLse != LseOut::none)
          if (c == 0) p.lse[token * p.lse_row_stride + head * p.lse_head_stride] = lse_out<T::kLse>(total.value());
      }
    }
  }
};

}  // namespace attnc
