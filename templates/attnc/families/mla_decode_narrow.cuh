// mla_decode_narrow: MLA absorbed decode over an fp8 latent cache for few query rows (block_m 16:
// H = 16 with one token, the memory-bound shape), attention-semantics.md §7.3. The same product as
// mla_decode.cuh, transposed so that the keys are the wgmma's M and the 16 packed rows its N:
//
//   S^T[64 keys, 16 rows] = K Q^T     A = K from registers: each thread loads its keys' fp8 bytes
//                                     and converts them in registers (no fp16 K tile, no padded
//                                     rows: m64n16 instead of 64 padded rows by 32 keys)
//   O^T[512, 16] += V^T P^T           A = V^T from an fp16 tile (MN-major), which the same
//                                     conversion writes (V is the first 512 columns of the key)
//
// The A fragment of a k16 step wants each thread's 2 + 2 columns 8 apart; a 16-byte load gives
// the thread 16 consecutive bytes of a row instead, so Q's columns are permuted to match (the dot
// product does not care about order): logical column 64 g + 16 j + e of Q holds physical column
// 64 g + 16 ((e % 8) / 2) + 4 j + 2 (e / 8) + e % 2, and thread quad q's 16-byte chunk at physical
// 64 g + 16 q feeds the four k16 steps 4 g + j of group g.
//
// Warpgroups: a producer (one thread issues each 64-key tile's bytes by TMA into a STAGES-deep
// ring) and NC = kConsumerGroups consumers (1 or 2; config warps 8 or 12) that own alternate tiles
// (consumer c: tiles c, c + NC, ...), each with its own V tile, P tile, running max and O^T; two
// meet once, at the end, to join their partial softmax states. Shared memory holds two byte stages
// beside two consumers' V tiles, three beside one (two consumers measured faster: 140 vs 180 us,
// docs/kernels-mla-decode.md). Within a consumer the 16 columns' maxima cross its four warps
// through shared memory each tile (S^T's rows, the keys, are spread over the warps).
//
// Traits: Element (the queries' dtype; the products run in fp16), kHeadDim (576), kHeadDimV (512),
// kGroup (H), kMask, kLse, kStages, kKvCache (fp8 e4m3 or e5m2), kConsumerGroups.
#pragma once

#include "attnc/core/ptx.cuh"
#include "attnc/features/lse.cuh"
#include "attnc/features/mla_block.cuh"
#include "attnc/features/mask.cuh"
#include "attnc/features/mla_fp8.cuh"
#include "attnc/params/params.h"
#include "attnc/sm90/fence.cuh"
#include "attnc/sm90/mbarrier.cuh"
#include "attnc/sm90/tma.cuh"
#include "attnc/sm90/warpgroup.cuh"
#include "attnc/sm90/wgmma.cuh"

namespace attnc {

// D[64 x 16] += A[64 x 16] * B[16 x 16] in fp16 with A MN-major (transposed: V^T read from a
// row-major V tile) and B K-major, both from shared memory.
__device__ __forceinline__ void wgmma_m64n16_f16_tnsp_a(float (&d)[2][4], u64 a, u64 b) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, 1, 1, 1, 1, 0;\n"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]),
        "+f"(d[1][3])
      : "l"(a), "l"(b));
}

template <class T>
struct MlaDecodeNarrow {
  using E = typename T::Element;
  static constexpr int D = T::kHeadDim, DV = T::kHeadDimV, H = T::kGroup, STAGES = T::kStages;
  static constexpr int BM = 16, BN = 64, KSTEPS = D / 16, kGroups = D / 64, kVGroups = DV / 64;
  // Consumer warpgroups (1 or 2), plus a producer warpgroup: 256 or 384 threads.
  static constexpr int NC = T::kConsumerGroups, kConsumers = NC * kWarpgroupThreads;
  static_assert(NC == 1 || NC == 2, "one or two consumer warpgroups");
  static constexpr int kProducerRegs = 24, kConsumerRegs = 240;
  static_assert(D == 576 && DV == 512, "the DeepSeek latent cache: 512 + 64 columns, V the first 512");
  static_assert(!T::kSinks, "sinks are refused for mla_decode by the planner");
  static_assert(T::kKvCache != kCacheSame, "the narrow layout converts fp8 keys in registers: fp8 caches only");
  static_assert(STAGES >= 2, "at least double buffering");

  using QTile = SwizzledTile<BM, D>;   // Q with permuted columns (B of S^T, K-major)
  using VTile = SwizzledTile<BN, DV>;  // one consumer's fp16 V (A of O^T, MN-major)
  using PTile = SwizzledTile<BM, BN>;  // P^T stored [row][key] (B of O^T, K-major)
  using Fp8Tile = MlaFp8Tile<BN, D>;   // a tile's bytes as TMA lands them
  static constexpr int kOutStride = DV + 4;  // floats per row of the joined output (bank spread)
  static_assert(BM * kOutStride * 4 <= VTile::kBytes, "the joined output reuses consumer 0's V tile");

  struct Shared {
    float warp_max[NC][4][BM];  // [consumer][warp][row]: a tile's maxima (and at the end the sums)
    float final_max[NC][BM], final_sum[NC][BM];  // each consumer's softmax state, joined at the end
    u64 full[STAGES], empty[STAGES];
    float q_amax[kConsumers / 32];  // bf16 queries: each warp's largest |q|
  };
  static constexpr int kTileBytes = QTile::kBytes + NC * (VTile::kBytes + PTile::kBytes) + STAGES * Fp8Tile::kBytes;
  static constexpr int kSmemBytes = 1024 + kTileBytes + int(sizeof(Shared));

  // Named barriers (0 is __syncthreads): consumer c's warpgroup (kOwnBarrier + c); both consumers.
  static constexpr int kOwnBarrier = 1, kBothBarrier = 3;

  struct Smem {
    u16* q;
    u16* v0;  // consumer c's V tile is v(c), its P tile p(c)
    u16* p0;
    u8* ring;
    Shared* sh;
    __device__ u16* v(int c) const { return v0 + c * VTile::kElems; }
    __device__ u16* p(int c) const { return p0 + c * PTile::kElems; }
    __device__ const u8* stage(int s) const { return ring + s * Fp8Tile::kBytes; }
  };

  using Block = MlaBlock<BM, BN, H, T::kMask>;

  __device__ static int token_of(int r, const Block& b) { return (b.m0 + r) / H; }
  __device__ static int head_of(int r, const Block& b) { return (b.m0 + r) % H; }

  __device__ static void run(const AttentionParams& p, const AttentionTensorMaps& maps, unsigned char* smem_raw) {
    Block b;
    if (!b.setup(p)) return;
    unsigned char* base = reinterpret_cast<unsigned char*>(tma_aligned_smem(smem_raw));
    Smem sm;
    sm.q = reinterpret_cast<u16*>(base);
    sm.v0 = reinterpret_cast<u16*>(base + QTile::kBytes);
    sm.p0 = sm.v(NC);
    sm.ring = reinterpret_cast<u8*>(sm.p(NC));
    sm.sh = reinterpret_cast<Shared*>(base + kTileBytes);
    if (threadIdx.x == 0) {
      for (int s = 0; s < STAGES; ++s) {
        mbar_init(&sm.sh->full[s], 1);
        mbar_init(&sm.sh->empty[s], kWarpgroupThreads / 32);  // one arrival per warp of the tile's owner
      }
      mbar_fence_init();
    }
    __syncthreads();
    const int wg = warpgroup_index();
    if (wg == NC) {
      warpgroup_reg_dealloc<kProducerRegs>();
      if (threadIdx.x == kConsumers) load(maps, b, sm);
    } else {
      warpgroup_reg_alloc<kConsumerRegs>();
      compute(p, b, sm, wg);
    }
  }

  // ---- producer -----------------------------------------------------------------------------

  // Tile i's bytes (two boxes of half a row, one barrier) into stage i % STAGES.
  __device__ static void load(const AttentionTensorMaps& maps, const Block& b, const Smem& sm) {
    tma_prefetch_descriptor(&maps.k);
    for (int i = 0; i < b.n_tiles; ++i) {
      const int s = i % STAGES;
      int page, slot;
      b.tile_at(i, page, slot);
      mbar_wait(&sm.sh->empty[s], ((i / STAGES) & 1) ^ 1);
      u8* dst = const_cast<u8*>(sm.stage(s));
      mbar_arrive_expect_tx(&sm.sh->full[s], Fp8Tile::kBytes);
      tma_load_3d(dst, &maps.k, &sm.sh->full[s], 0, slot, page);
      tma_load_3d(dst + BN * Fp8Tile::kHalf, &maps.k, &sm.sh->full[s], Fp8Tile::kBoxCols16, slot, page);
    }
  }

  // ---- consumers ----------------------------------------------------------------------------

  // The logical column of the permuted tile that holds physical Q column `col`: physical 64 g + 16 q +
  // 4 j + 2 k + e is logical 64 g + 16 j + 8 k + 2 q + e (e = col % 2), the order the S^T steps read.
  __device__ static int logical_col(int col) {
    const int g = col / 64, q = (col % 64) / 16, j = (col % 16) / 4, k = (col % 4) / 2;
    return 64 * g + 16 * j + 8 * k + 2 * q + col % 2;
  }

  // Q rows into the permuted tile as 16-byte chunks (8 physical columns), every load of a thread
  // issued before its first store: one global-memory latency per block instead of one per pair.
  // A chunk's four column pairs land at four logical columns (4-byte stores); rows past the block's
  // are zero.
  __device__ static void load_q_chunks(const AttentionParams& p, const Block& b, const Smem& sm) {
    constexpr int kChunks = D / 8, kAll = BM * kChunks, kPerThread = (kAll + kConsumers - 1) / kConsumers;
    uint4 v[kPerThread];
    b.template load_q_chunks<D, kConsumers>(p, v);  // rows past BM are past rows_here: zeros
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const int i = threadIdx.x + j * kConsumers, r = i / kChunks, col = (i % kChunks) * 8;
      if (kAll % kConsumers != 0 && r >= BM) break;
      const u32 w[4] = {v[j].x, v[j].y, v[j].z, v[j].w};
#pragma unroll
      for (int k = 0; k < 4; ++k) *reinterpret_cast<u32*>(sm.q + QTile::offset(r, logical_col(col + 2 * k))) = w[k];
    }
  }

  // Q rows into the permuted tile (load_q_chunks), by the consumers; rows past the block's are zero.
  // bf16 queries then become fp16 scaled by 2^-s (one s for the block, from the largest |q|); returns
  // the factor 2^s the scores take back (1 for fp16).
  __device__ static float load_q(const AttentionParams& p, const Block& b, const Smem& sm) {
    const int tid = threadIdx.x;
    load_q_chunks(p, b, sm);
    if constexpr (is_same<E, fp16_t>::value) {
      return 1.f;
    } else {
      using Q16 = QToF16<QTile, D>;
      named_barrier_sync(kBothBarrier, kConsumers);
      const float m = warp_max(Q16::amax(sm.q, 0, tid, kConsumers));
      if (tid % 32 == 0) sm.sh->q_amax[tid / 32] = m;
      named_barrier_sync(kBothBarrier, kConsumers);
      float amax = 0.f;
#pragma unroll
      for (int w = 0; w < kConsumers / 32; ++w) amax = fmaxf(amax, sm.sh->q_amax[w]);
      const int e = Q16::exponent(amax);
      Q16::convert(sm.q, 0, tid, kConsumers, e);
      return Q16::pow2(e);
    }
  }

  // What one consumer thread holds across its tiles: S^T's keys key0 and key0 + 8 of each tile,
  // columns (rows of the block) 8 n + col0 + {0, 1}; O^T's dims 64 m + 16 warp + lane / 4 (+ 8).
  struct Consumer {
    int c, warp, lane, key0, col0;
    u32 q_addr, v_addr, p_addr;
    float o[DV / 64][BM / 8][4];
    float run_max[BM / 8][2], run_sum[BM / 8][2];  // per column; the sums are this thread's keys' only
    float score_mul, out_mul;
  };

  // Tile i's bytes for this thread's two keys: chunk (4 g + quad) of each, converted to fp16 pairs
  // in registers; V's groups also go to the V tile. Zeros for keys past the request's end.
  __device__ static void convert_group(const u8* stage, const Consumer& t, int g, bool keep0, bool keep1,
                                       u32 (&h0)[8], u32 (&h1)[8], u16* v_tile) {
    const int chunk = 4 * g + t.col0 / 2, half = chunk / Fp8Tile::kChunks, c16 = chunk % Fp8Tile::kChunks;
    const u8* src = stage + half * BN * Fp8Tile::kHalf + t.key0 * Fp8Tile::kHalf + 16 * c16;
    const uint4 z = make_uint4(0, 0, 0, 0);
    const uint4 w0 = keep0 ? *reinterpret_cast<const uint4*>(src) : z;
    const uint4 w1 = keep1 ? *reinterpret_cast<const uint4*>(src + 8 * Fp8Tile::kHalf) : z;
    fp8x4_to_f16<T::kKvCache>(w0.x, h0[0], h0[1]);
    fp8x4_to_f16<T::kKvCache>(w0.y, h0[2], h0[3]);
    fp8x4_to_f16<T::kKvCache>(w0.z, h0[4], h0[5]);
    fp8x4_to_f16<T::kKvCache>(w0.w, h0[6], h0[7]);
    fp8x4_to_f16<T::kKvCache>(w1.x, h1[0], h1[1]);
    fp8x4_to_f16<T::kKvCache>(w1.y, h1[2], h1[3]);
    fp8x4_to_f16<T::kKvCache>(w1.z, h1[4], h1[5]);
    fp8x4_to_f16<T::kKvCache>(w1.w, h1[6], h1[7]);
    if (g < kVGroups) {
      const int col = 64 * g + 8 * t.col0;  // the chunk's physical column: 16 per quad
      *reinterpret_cast<uint4*>(v_tile + VTile::offset(t.key0, col)) = make_uint4(h0[0], h0[1], h0[2], h0[3]);
      *reinterpret_cast<uint4*>(v_tile + VTile::offset(t.key0, col + 8)) = make_uint4(h0[4], h0[5], h0[6], h0[7]);
      *reinterpret_cast<uint4*>(v_tile + VTile::offset(t.key0 + 8, col)) = make_uint4(h1[0], h1[1], h1[2], h1[3]);
      *reinterpret_cast<uint4*>(v_tile + VTile::offset(t.key0 + 8, col + 8)) = make_uint4(h1[4], h1[5], h1[6], h1[7]);
    }
  }

  // S^T of tile i (issued and committed, not waited), each group's four k16 steps right behind its
  // conversion; the byte stage goes back to the producer once read.
  __device__ static void issue_s(float (&s)[BM / 8][4], const Block& b, const Smem& sm, const Consumer& t, int i) {
    const int st = i % STAGES, n0 = b.n_begin + i * BN;
    const bool keep0 = n0 + t.key0 < b.sk, keep1 = n0 + t.key0 + 8 < b.sk;
    const u8* stage = sm.stage(st);
    mbar_wait(&sm.sh->full[st], (i / STAGES) & 1);
#pragma unroll
    for (int g = 0; g < kGroups; ++g) {
      u32 h0[8], h1[8];
      convert_group(stage, t, g, keep0, keep1, h0, h1, sm.v(t.c));
      wgmma_fence();
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const u32 a[4] = {h0[2 * j], h1[2 * j], h0[2 * j + 1], h1[2 * j + 1]};
        wgmma_rs<fp16_t, BM, 0>(s, a, QTile::desc_k_major(t.q_addr, 0, 4 * g + j), g + j > 0);
      }
      wgmma_commit();
      // One group in flight under the next conversion: the registers of the one before are free
      // (more in flight and ptxas, capped at 168 registers by the 384-thread launch, serialises).
      wgmma_wait<1>();
    }
    __syncwarp();
    if (t.lane == 0) mbar_arrive(&sm.sh->empty[st]);
  }

  // Softmax of tile i over its keys for each of the 16 columns: the maxima cross the warpgroup's
  // warps in shared memory; P^T (fp16) to this consumer's P tile, O^T rescaled.
  __device__ static void softmax_to_p(const AttentionParams& p, const Block& b, const Smem& sm, Consumer& t,
                                      const float (&s)[BM / 8][4], int i) {
    const int n0 = b.n_begin + i * BN;
    const Mask<T::kMask> mask(b.sq, b.sk, p.window_left, p.window_right);
    const bool needs_mask = mask.tile_needs_mask(b.t0, b.t1, n0, n0 + BN, b.sk);
    float x[BM / 8][4];
    float mx[BM / 8][2];
#pragma unroll
    for (int n = 0; n < BM / 8; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = n0 + t.key0 + 8 * (e / 2), col = 8 * n + t.col0 + (e & 1);
        x[n][e] = s[n][e] * t.score_mul;
        if (needs_mask && (key >= b.sk || !mask.allowed(token_of(col, b), key))) x[n][e] = neg_inf();
      }
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float m = fmaxf(x[n][e], x[n][e + 2]);
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 4));
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 8));
        mx[n][e] = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 16));
        if (t.lane < 4) sm.sh->warp_max[t.c][t.warp][8 * n + t.col0 + e] = mx[n][e];
      }
    }
    named_barrier_sync(kOwnBarrier + t.c, kWarpgroupThreads);
    float rescale[BM / 8][2];
#pragma unroll
    for (int n = 0; n < BM / 8; ++n)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int col = 8 * n + t.col0 + e;
        float m = t.run_max[n][e];
#pragma unroll
        for (int w = 0; w < 4; ++w) m = fmaxf(m, sm.sh->warp_max[t.c][w][col]);
        const float base = m == neg_inf() ? 0.f : m;  // no key yet: exp2(-inf - 0) = 0
        rescale[n][e] = fast_exp2(t.run_max[n][e] - base);
        t.run_max[n][e] = m;
        const float p0 = fast_exp2(x[n][e] - base), p1 = fast_exp2(x[n][e + 2] - base);
        t.run_sum[n][e] = t.run_sum[n][e] * rescale[n][e] + p0 + p1;
        u16* pt = sm.p(t.c);
        pt[PTile::offset(col, t.key0)] = f16_bits(p0);
        pt[PTile::offset(col, t.key0 + 8)] = f16_bits(p1);
      }
#pragma unroll
    for (int m = 0; m < DV / 64; ++m)
#pragma unroll
      for (int n = 0; n < BM / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) t.o[m][n][e] *= rescale[n][e & 1];
    fence_proxy_async_shared();
    named_barrier_sync(kOwnBarrier + t.c, kWarpgroupThreads);
  }

  __device__ static u16 f16_bits(float x) { return static_cast<u16>(pack2<fp16_t>(x, 0.f) & 0xffffu); }

  // O^T += V^T P^T for the tile just converted: eight m64 blocks of dims by four k16 steps of keys.
  __device__ static void issue_pv(Consumer& t) {
#pragma unroll
    for (int m = 0; m < DV / 64; ++m) fence_operand(t.o[m]);
    wgmma_fence();
#pragma unroll
    for (int m = 0; m < DV / 64; ++m)
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk)
        wgmma_m64n16_f16_tnsp_a(t.o[m], VTile::desc_mn_major(t.v_addr + m * VTile::kBlockBytes, kk),
                                PTile::desc_k_major(t.p_addr, 0, kk));
    wgmma_commit();
  }

  __device__ static void compute(const AttentionParams& p, const Block& b, const Smem& sm, int c) {
    Consumer t;
    const int tid = threadIdx.x % kWarpgroupThreads;
    t.c = c;
    t.warp = tid / 32;
    t.lane = tid % 32;
    t.key0 = 16 * t.warp + t.lane / 4;
    t.col0 = (t.lane % 4) * 2;
    t.q_addr = smem_u32(sm.q);
    t.v_addr = smem_u32(sm.v(c));
    t.p_addr = smem_u32(sm.p(c));
    const KvDequant dq(p, b.seq, 0);  // one latent cache: K's factor serves V
    t.out_mul = dq.k;
#pragma unroll
    for (int m = 0; m < DV / 64; ++m)
#pragma unroll
      for (int n = 0; n < BM / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) t.o[m][n][e] = 0.f;
#pragma unroll
    for (int n = 0; n < BM / 8; ++n)
#pragma unroll
      for (int e = 0; e < 2; ++e) t.run_max[n][e] = neg_inf(), t.run_sum[n][e] = 0.f;

    t.score_mul = p.scale_log2 * dq.k * load_q(p, b, sm);
    fence_proxy_async_shared();
    named_barrier_sync(kBothBarrier, kConsumers);

    float s[BM / 8][4];
    for (int i = c; i < b.n_tiles; i += NC) {
      // The V and P tiles are free once every warp of this consumer has waited its last P V.
      if (i >= NC) named_barrier_sync(kOwnBarrier + c, kWarpgroupThreads);
      issue_s(s, b, sm, t, i);
      wgmma_wait<0>();
      fence_operand(s);
      softmax_to_p(p, b, sm, t, s, i);
      issue_pv(t);
      wgmma_wait<0>();
#pragma unroll
      for (int m = 0; m < DV / 64; ++m) fence_operand(t.o[m]);
    }
    store(p, b, sm, t);
  }

  // ---- epilogue -----------------------------------------------------------------------------

  // Each consumer's sums cross its warps; the two consumers' states join (lse2_union); consumer 0's
  // scaled O^T, then consumer 1's, go to a [row][dim] fp32 buffer in consumer 0's V tile, which all
  // 256 threads write out by rows: the normalised output (or the split's fp32 partial) and the LSE.
  __device__ static void store(const AttentionParams& p, const Block& b, const Smem& sm, Consumer& t) {
#pragma unroll
    for (int n = 0; n < BM / 8; ++n)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float v = t.run_sum[n][e];
        v += __shfl_xor_sync(0xffffffffu, v, 4);
        v += __shfl_xor_sync(0xffffffffu, v, 8);
        v += __shfl_xor_sync(0xffffffffu, v, 16);
        t.run_sum[n][e] = v;
      }
    // (Every warp read the last tile's maxima before its P barrier: warp_max is free for the sums.)
#pragma unroll
    for (int n = 0; n < BM / 8; ++n)
#pragma unroll
      for (int e = 0; e < 2; ++e)
        if (t.lane < 4) sm.sh->warp_max[t.c][t.warp][8 * n + t.col0 + e] = t.run_sum[n][e];
    named_barrier_sync(kOwnBarrier + t.c, kWarpgroupThreads);
    if (t.warp == 0 && t.lane < 4)
#pragma unroll
      for (int n = 0; n < BM / 8; ++n)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int col = 8 * n + t.col0 + e;
          float sum = 0.f;
#pragma unroll
          for (int w = 0; w < 4; ++w) sum += sm.sh->warp_max[t.c][w][col];
          sm.sh->final_max[t.c][col] = t.run_max[n][e];
          sm.sh->final_sum[t.c][col] = sum;
        }
    named_barrier_sync(kBothBarrier, kConsumers);

    float* out = reinterpret_cast<float*>(sm.v(0));
    for (int turn = 0; turn < NC; ++turn) {
      if (turn == t.c) {
#pragma unroll
        for (int n = 0; n < BM / 8; ++n)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int col = 8 * n + t.col0 + e;
            float mx[NC], sum[NC], w[NC];
#pragma unroll
            for (int k = 0; k < NC; ++k) mx[k] = sm.sh->final_max[k][col], sum[k] = sm.sh->final_sum[k][col];
            lse2_union<NC>(mx, sum, w);
#pragma unroll
            for (int m = 0; m < DV / 64; ++m)
#pragma unroll
              for (int r = 0; r < 2; ++r) {
                float* dst = out + col * kOutStride + 64 * m + t.key0 + 8 * r;
                *dst = (turn == 0 ? 0.f : *dst) + t.o[m][n][2 * r + e] * (t.c == 0 ? w[0] : w[NC - 1]);
              }
          }
      }
      named_barrier_sync(kBothBarrier, kConsumers);
    }

    const bool partial = p.num_splits > 1;
    constexpr int kQuads = DV / 4;  // four columns per thread and step
    for (int i = threadIdx.x; i < b.rows_here * kQuads; i += kConsumers) {
      const int row = i / kQuads, col = 4 * (i % kQuads);
      float mx[NC], sum[NC], w[NC];
#pragma unroll
      for (int k = 0; k < NC; ++k) mx[k] = sm.sh->final_max[k][row], sum[k] = sm.sh->final_sum[k][row];
      const Lse2 total = lse2_union<NC>(mx, sum, w);
      const float inv = total.sum > 0.f ? t.out_mul / total.sum : 0.f;
      const float4 v = *reinterpret_cast<const float4*>(out + row * kOutStride + col);
      const long long token = b.q_begin + token_of(row, b);
      const int head = head_of(row, b);
      if (partial) {
        const long long slot = ((long long)b.split * p.total_q + token) * p.num_q_heads + head;
        *reinterpret_cast<float4*>(p.o_partial + slot * DV + col) = make_float4(v.x * inv, v.y * inv, v.z * inv, v.w * inv);
        if (col == 0) p.lse_partial[slot] = total.value();
      } else {
        u16* o = static_cast<u16*>(p.o) + token * p.o_row_stride + head * p.o_head_stride + col;
        reinterpret_cast<u32*>(o)[0] = pack2<E>(v.x * inv, v.y * inv);  // even strides: 4-byte stores
        reinterpret_cast<u32*>(o)[1] = pack2<E>(v.z * inv, v.w * inv);
        if constexpr (T::kLse != LseOut::none)
          if (col == 0) p.lse[token * p.lse_row_stride + head * p.lse_head_stride] = lse_out<T::kLse>(total.value());
      }
    }
  }
};

}  // namespace attnc
