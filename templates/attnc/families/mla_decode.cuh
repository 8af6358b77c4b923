// mla_decode: DeepSeek MLA absorbed decode on Hopper (sm_90a), attention-semantics.md §7.3. MQA
// over the latent cache: every query head attends to one 576-wide cache row per key (512 latent +
// 64 RoPE columns); V is the first 512 columns of the same row, so each key tile is read from
// global memory once and serves both products from shared memory.
//
// A block serves 64 packed rows (q head x query token, RowMap: row R is token R / H, head R % H)
// of one (request, split); a 64-key tile is one TMA box of 64 rows from one page (page sizes are
// multiples of 64). Three warpgroups:
//
//   producer (setmaxnreg down)  one thread issues TMA: a tile's 9 column blocks of 64 into a
//                               STAGES-deep ring; a full mbarrier per block (S starts on the
//                               first block landed) and an empty one per stage.
//   consumer c = 0, 1           S_c = Q K^T for keys [32c, 32c + 32) of the tile (m64n32, 36 k16
//                               steps over 576, the first kQRegSteps with Q from registers); the
//                               two halves' row maxima meet in shared memory so both keep one
//                               running max (moved only by more than kMaxSlack, so O is rescaled
//                               on few tiles); P (bf16) goes to shared memory, and
//                               O_c += P V over V columns [256c, 256c + 256) (m64n256): each
//                               warpgroup's O is 128 fp32 registers, the whole 64 x 512 output
//                               split between the two.
//
// Keys past a request's end (the tail of its last page) are masked, and their V rows zeroed in
// shared memory, since a cache slot nobody wrote may hold NaN. Output: normalised O and LSE, or a
// split's fp32 partial and base-2 LSE for SplitCombine (combine.cuh).
//
// An fp8 cache (kKvCache, features/mla_fp8.cuh): the ring holds each tile's bytes (36 KiB), and
// each consumer converts its own 32 keys into one fp16 tile before its S; both products run in
// fp16 (bf16 Q becomes fp16 scaled by a power of two per 16-row slab, QToF16). The cache's scale
// (k_scale and / or k_descale: one for K and V, one latent cache) multiplies scores and output.
//
// Traits: Element, kHeadDim (576), kHeadDimV (512), kGroup (H, the q heads sharing the latent
// head), kMask, kLse, kSinks (false), kStages, kKvCache.
#pragma once

#include "attnc/core/ptx.cuh"
#include "attnc/features/block_range.cuh"
#include "attnc/features/kv_source.cuh"
#include "attnc/features/lse.cuh"
#include "attnc/features/mla_block.cuh"
#include "attnc/features/mla_fp8.cuh"
#include "attnc/features/mask.cuh"
#include "attnc/features/online_softmax.cuh"
#include "attnc/params/params.h"
#include "attnc/sm90/fence.cuh"
#include "attnc/sm90/mbarrier.cuh"
#include "attnc/sm90/tma.cuh"
#include "attnc/sm90/warpgroup.cuh"
#include "attnc/sm90/wgmma.cuh"

namespace attnc {

template <class T>
struct MlaDecode {
  using E = typename T::Element;
  static constexpr int D = T::kHeadDim, DV = T::kHeadDimV, H = T::kGroup, STAGES = T::kStages;
  static constexpr int BM = 64, BN = 64, KSTEPS = D / 16;
  static constexpr int kConsumers = 2 * kWarpgroupThreads;  // plus a producer warpgroup: 384 threads
  static constexpr int NH = BN / 2, DVH = DV / 2;  // each consumer's keys of S and columns of O
  static constexpr int kProducerRegs = 24, kConsumerRegs = 240;
  // The running max moves only when a tile's exceeds it by more than kMaxSlack (base 2): P stays
  // below 2^kMaxSlack, and O (128 registers a thread) is rescaled only on tiles that move it.
  static constexpr float kMaxSlack = 8.f;
  static_assert(D == 576 && DV == 512, "the DeepSeek latent cache: 512 + 64 columns, V the first 512");
  static_assert(!T::kSinks, "sinks are refused for mla_decode by the planner");
  static_assert(STAGES >= 2, "at least double buffering");
  static_assert(kProducerRegs * kWarpgroupThreads + 2 * kConsumerRegs * kWarpgroupThreads <= 65536, "registers");
  static constexpr bool kFp8 = T::kKvCache != kCacheSame;
  using M = typename MmaElemOf<kFp8, E>::type;  // what the products read: fp16 over an fp8 cache
  // S's first kQRegSteps k16 steps take Q from registers (wgmma RS, loaded once per block): an
  // m64n32k16 step reading both operands from shared memory needs 192 B/clk at the tensor rate
  // against the 128 it gives, so each register step saves a third of a step's reads. 16 steps
  // (64 registers) fit the consumers' 240; an fp8 cache's conversion needs more of its own (8).
  static constexpr int kQRegSteps = kFp8 ? 8 : 16;
  static_assert(kQRegSteps > 0 && kQRegSteps <= KSTEPS, "register steps among S's 36");
  using Fp8Tile = MlaFp8Tile<BN, D>;

  using QTile = SwizzledTile<BM, D>;
  using KTile = SwizzledTile<BN, D>;
  using PTile = SwizzledTile<BM, BN>;
  static constexpr int kVBlocks = DV / 64;  // column blocks that are V

  struct Shared {
    float row_max[2][BM];  // each consumer's tile maxima, exchanged every tile
    float row_sum[2][BM];  // each consumer's sums, joined at the end
    u64 full[STAGES][KTile::kBlocks];  // per 64-column block, so S starts on the first one landed
    u64 empty[STAGES];
    int q_exp[BM / 16];  // fp8: each 16-row slab's fp16 exponent (QToF16)
  };
  // fp8: one 16-bit tile, then the ring of byte tiles after P.
  static constexpr int kRingBytes = kFp8 ? KTile::kBytes + STAGES * Fp8Tile::kBytes : STAGES * KTile::kBytes;
  static constexpr int kTileBytes = QTile::kBytes + kRingBytes + PTile::kBytes;
  static constexpr int kSmemBytes = 1024 + kTileBytes + int(sizeof(Shared));

  // Named barriers (0 is __syncthreads): both consumers, after writing maxima / P; fp8: one
  // consumer's warps after converting its keys (kConvertBarrier + consumer).
  static constexpr int kMaxBarrier = 1, kPBarrier = 2, kConvertBarrier = 3;

  struct Smem {
    u16* q;
    u16* k;
    u16* p;
    Shared* sh;
    u8* fp8;  // the byte ring (fp8 caches)
    // The 16-bit tile the products read for tile i's stage s (fp8: the one converted tile).
    __device__ u16* stage(int s) const { return kFp8 ? k : k + s * KTile::kElems; }
    __device__ u8* fp8_stage(int s) const { return fp8 + s * Fp8Tile::kBytes; }
  };

  using Block = MlaBlock<BM, BN, H, T::kMask>;

  __device__ static int token_of(int r, const Block& b) { return (b.m0 + r) / H; }
  __device__ static int head_of(int r, const Block& b) { return (b.m0 + r) % H; }

  __device__ static void run(const AttentionParams& p, const AttentionTensorMaps& maps, unsigned char* smem_raw) {
    Block b;
    if (!b.setup(p)) return;
    u16* tiles = reinterpret_cast<u16*>(tma_aligned_smem(smem_raw));
    u16* p_tile = tiles + QTile::kElems + (kFp8 ? KTile::kElems : STAGES * KTile::kElems);
    Smem sm{tiles, tiles + QTile::kElems, p_tile,
            reinterpret_cast<Shared*>(reinterpret_cast<unsigned char*>(tiles) + kTileBytes),
            reinterpret_cast<u8*>(p_tile + PTile::kElems)};
    if (threadIdx.x == 0) {
      for (int s = 0; s < STAGES; ++s) {
        for (int c = 0; c < KTile::kBlocks; ++c) mbar_init(&sm.sh->full[s][c], 1);
        mbar_init(&sm.sh->empty[s], kConsumers / 32);  // one arrival per consumer warp
      }
      mbar_fence_init();
    }
    __syncthreads();
    const int wg = warpgroup_index();
    if (wg == 2) {
      warpgroup_reg_dealloc<kProducerRegs>();
      if (threadIdx.x == 2 * kWarpgroupThreads) load(maps, b, sm);
    } else {
      warpgroup_reg_alloc<kConsumerRegs>();
      compute(p, b, sm, wg);
    }
  }

  // ---- producer -----------------------------------------------------------------------------

  // The cache as a tensor map over (576 columns, page_size slots, pages): tile i is 64 slots of
  // one page.
  __device__ static void load(const AttentionTensorMaps& maps, const Block& b, const Smem& sm) {
    tma_prefetch_descriptor(&maps.k);
    for (int i = 0; i < b.n_tiles; ++i) {
      const int s = i % STAGES;
      int page, slot;
      b.tile_at(i, page, slot);
      mbar_wait(&sm.sh->empty[s], ((i / STAGES) & 1) ^ 1);
      if constexpr (kFp8) {  // the tile's bytes: two boxes of half a row, one barrier
        u8* dst = sm.fp8_stage(s);
        mbar_arrive_expect_tx(&sm.sh->full[s][0], Fp8Tile::kBytes);
        tma_load_3d(dst, &maps.k, &sm.sh->full[s][0], 0, slot, page);
        tma_load_3d(dst + BN * Fp8Tile::kHalf, &maps.k, &sm.sh->full[s][0], Fp8Tile::kBoxCols16, slot, page);
      } else {
#pragma unroll
        for (int c = 0; c < KTile::kBlocks; ++c) {
          mbar_arrive_expect_tx(&sm.sh->full[s][c], KTile::kBlockBytes);
          tma_load_3d(sm.stage(s) + c * BN * 64, &maps.k, &sm.sh->full[s][c], c * 64, slot, page);
        }
      }
    }
  }

  // ---- consumers ----------------------------------------------------------------------------

  // Q rows into the swizzled tile by ordinary 16-byte loads (rows are (token, head) pairs with
  // any strides; q_pe may come apart); rows past the block's are zero. All of a thread's loads are
  // issued before the first store: one memory latency per block, not one per load (18 in a row).
  __device__ static void load_q(const AttentionParams& p, const Block& b, const Smem& sm) {
    constexpr int kChunks = D / 8, kPerThread = BM * kChunks / kConsumers;
    static_assert(BM * kChunks % kConsumers == 0, "Q's 16-byte chunks spread evenly over the consumers");
    uint4 v[kPerThread];
    b.template load_q_chunks<D, kConsumers>(p, v);
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const int i = threadIdx.x + j * kConsumers;
      *reinterpret_cast<uint4*>(sm.q + QTile::offset(i / kChunks, (i % kChunks) * 8)) = v[j];
    }
  }

  // Zero the V part of the rows of a stage from `valid` on (slots past the request's end).
  __device__ static void zero_tail(u16* stage, int valid) {
    const int n = (BN - valid) * kVBlocks * 8;  // 16-byte pieces
    for (int i = threadIdx.x; i < n; i += kConsumers) {
      const int piece = i % 8, rest = i / 8, blk = rest % kVBlocks, row = valid + rest / kVBlocks;
      reinterpret_cast<uint4*>(stage + blk * BN * 64 + row * 64)[piece] = make_uint4(0, 0, 0, 0);
    }
  }

  // What one consumer thread holds across tiles: its rows, O half, softmax state.
  struct Consumer {
    int c, lane, row0, col0;  // consumer index; rows row0 and row0 + 8; columns col0, col0 + 1 of each n8
    int tok[2];
    u32 q_addr, p_addr;
    u32 qf[kQRegSteps][4];  // Q's A fragments of S's first k16 steps (warp w: rows 16w .. 16w + 15)
    float o[DVH / 8][4];
    float row_max[2], row_sum[2];
    float score_mul, out_mul;  // scale_log2 (times the fp8 dequantisation and Q's 2^s); the output's factor
  };

  // One k16 step of S_c, Q from registers (the first kQRegSteps) or shared memory.
  __device__ __forceinline__ static void qk_step(float (&s)[NH / 8][4], const Consumer& t, u32 k_addr, int kk) {
    const u64 k = KTile::desc_k_major(k_addr, NH * t.c, kk);
    if (kk < kQRegSteps) wgmma_rs<M, NH, 0>(s, t.qf[kk < kQRegSteps ? kk : 0], k, kk > 0);
    else wgmma_ss<M, NH, 0>(s, QTile::desc_k_major(t.q_addr, 0, kk), k, kk > 0);
  }

  // Q's fragments for qk_step, once Q is in shared memory (fp8: after its fp16 conversion).
  __device__ static void load_q_frags(const Smem& sm, Consumer& t) {
#pragma unroll
    for (int kk = 0; kk < kQRegSteps; ++kk)
#pragma unroll
      for (int j = 0; j < 4; ++j)
        t.qf[kk][j] = *reinterpret_cast<const u32*>(sm.q + QTile::offset(t.row0 + 8 * (j & 1), kk * 16 + 8 * (j / 2) + t.col0));
  }

  // S_c = Q K[32c .. 32c + 32)^T of tile i, each 64-column block as soon as it has landed;
  // issued and committed, not waited. The request's last tile first has its V tail cleared by both
  // consumers (which meet at a named barrier).
  __device__ static void issue_qk(float (&s)[NH / 8][4], const Block& b, const Smem& sm, const Consumer& t, int i) {
    const int st = i % STAGES, n0 = b.n_begin + i * BN, parity = (i / STAGES) & 1;
    if (!kFp8 && n0 + BN > b.sk) {
      for (int blk = 0; blk < kVBlocks; ++blk) mbar_wait(&sm.sh->full[st][blk], parity);
      zero_tail(sm.stage(st), b.sk - n0);
      fence_proxy_async_shared();
      named_barrier_sync(kPBarrier, kConsumers);
    }
    const u32 k_addr = smem_u32(sm.stage(st));
    wgmma_fence();
    if constexpr (kFp8) {
      issue_qk_fp8(s, b, sm, t, i, k_addr);
    } else {
#pragma unroll
      for (int kk = 0; kk < KSTEPS; ++kk) {
        if (kk % 4 == 0) mbar_wait(&sm.sh->full[st][kk / 4], parity);  // at once where the tail waited
        qk_step(s, t, k_addr, kk);
      }
    }
    wgmma_commit();
  }

  // Logits of tile i (base 2, masked keys -inf), the running max shared by both consumers, P (bf16)
  // to shared memory, O rescaled; returns once both halves of P are in shared memory. S is only
  // read: registers a wgmma accumulates into are written by nothing else, or ptxas serialises the
  // wgmmas (C7515).
  __device__ static void softmax_to_p(const AttentionParams& p, const Block& b, const Smem& sm, Consumer& t,
                                      const float (&s)[NH / 8][4], int i) {
    const int n0 = b.n_begin + i * BN;
    const Mask<T::kMask> mask(b.sq, b.sk, p.window_left, p.window_right);
    const bool needs_mask = mask.tile_needs_mask(t.tok[0], t.tok[1] + 1, n0, n0 + BN, b.sk);
    float x[NH / 8][4];
    float mx[2] = {neg_inf(), neg_inf()};
#pragma unroll
    for (int n = 0; n < NH / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = e / 2, key = n0 + NH * t.c + n * 8 + t.col0 + (e & 1);
        x[n][e] = s[n][e] * t.score_mul;
        if (needs_mask && (key >= b.sk || !mask.allowed(t.tok[r], key))) x[n][e] = neg_inf();
        mx[r] = fmaxf(mx[r], x[n][e]);
      }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      mx[r] = quad_max(mx[r]);
      if (t.lane % 4 == 0) sm.sh->row_max[t.c][t.row0 + 8 * r] = mx[r];
    }
    named_barrier_sync(kMaxBarrier, kConsumers);

    float rescale[2];
    bool moved = false;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float tile = fmaxf(mx[r], sm.sh->row_max[t.c ^ 1][t.row0 + 8 * r]);
      const bool up = tile > t.row_max[r] + kMaxSlack;  // from -inf: any finite tile maximum
      const float m = up ? tile : t.row_max[r];
      const float base = m == neg_inf() ? 0.f : m;  // a row with no keys yet: exp2(-inf - 0) = 0
      rescale[r] = up ? fast_exp2(t.row_max[r] - base) : 1.f;
      moved |= up;
      t.row_max[r] = m;
      float sum = 0.f;
#pragma unroll
      for (int n = 0; n < NH / 8; ++n) {
        x[n][2 * r] = fast_exp2(x[n][2 * r] - base);
        x[n][2 * r + 1] = fast_exp2(x[n][2 * r + 1] - base);
        sum += x[n][2 * r] + x[n][2 * r + 1];
      }
      t.row_sum[r] = t.row_sum[r] * rescale[r] + sum;
    }
#pragma unroll
    for (int n = 0; n < NH / 8; ++n) {
      const int col = NH * t.c + n * 8 + t.col0;
      *reinterpret_cast<u32*>(sm.p + PTile::offset(t.row0, col)) = pack2<M>(x[n][0], x[n][1]);
      *reinterpret_cast<u32*>(sm.p + PTile::offset(t.row0 + 8, col)) = pack2<M>(x[n][2], x[n][3]);
    }
    fence_proxy_async_shared();
    if (__any_sync(0xffffffffu, moved)) OnlineSoftmax<2>::rescale_o(t.o, rescale);
    named_barrier_sync(kPBarrier, kConsumers);
  }

  // O_c += P V[:, 256c .. 256c + 256) for tile i; issued and committed, not waited.
  __device__ static void issue_pv(const Smem& sm, Consumer& t, int i) {
    const u32 v_addr = smem_u32(sm.stage(i % STAGES)) + t.c * (DVH / 64) * KTile::kBlockBytes;
    fence_operand(t.o);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk)
      wgmma_ss<M, DVH, 1>(t.o, PTile::desc_k_major(t.p_addr, 0, kk), KTile::desc_mn_major(v_addr, kk), true);
    wgmma_commit();
  }

  __device__ static void release(const Smem& sm, const Consumer& t, int i) {
    if (t.lane == 0) mbar_arrive(&sm.sh->empty[i % STAGES]);
  }

  // fp8: S_c of tile i. Once both consumers are done with tile i - 1 (their P V waited: the fp16
  // tile is free), consumer c converts its own keys [32c, 32c + 32) (S_c reads no others): nine
  // independent 16-byte chunks per thread, then one barrier of its warpgroup and the 36 k16 steps.
  // (Converting a 64-column block at a time with its steps behind it was slower: the conversion is
  // bound by its own cvt and shared-memory throughput, kernels-mla-decode.md.) The byte stage goes
  // back to the producer at once; the other consumer's keys (V rows for P V) are converted by the
  // time both meet at the P barrier.
  __device__ static void issue_qk_fp8(float (&s)[NH / 8][4], const Block& b, const Smem& sm, const Consumer& t,
                                      int i, u32 k_addr) {
    const int st = i % STAGES, n0 = b.n_begin + i * BN, tid = threadIdx.x % kWarpgroupThreads;
    const int row = NH * t.c + tid / 4, group = tid % 4;  // the thread's key and 16-column group of a block
    const bool keep = n0 + row < b.sk;
    const u8* stage = sm.fp8_stage(st);
    mbar_wait(&sm.sh->full[st][0], (i / STAGES) & 1);
#pragma unroll
    for (int blk = 0; blk < KTile::kBlocks; ++blk)
      Fp8Tile::template convert_chunk<KTile, T::kKvCache>(stage, sm.k, row, 4 * blk + group, keep);
    fence_proxy_async_shared();
    named_barrier_sync(kConvertBarrier + t.c, kWarpgroupThreads);
#pragma unroll
    for (int kk = 0; kk < KSTEPS; ++kk) qk_step(s, t, k_addr, kk);
    __syncwarp();
    release(sm, t, i);
  }

  // fp8 with bf16 queries: Q to fp16, each 16-row slab scaled by its own 2^-s (warp w of consumer 0
  // takes slab w); every thread's rows lie in its warp's slab, so 2^s joins its score factor.
  // Called between two consumer barriers.
  __device__ static void q_to_f16(const Smem& sm, const Consumer& t) {
    using Q16 = QToF16<QTile, D>;
    const int warp = (threadIdx.x / 32) % 4;
    if (t.c == 0) {
      const int e = Q16::exponent(warp_max(Q16::amax(sm.q, 16 * warp, t.lane, 32)));
      Q16::convert(sm.q, 16 * warp, t.lane, 32, e);
      if (t.lane == 0) sm.sh->q_exp[warp] = e;
    }
  }

  __device__ static void compute(const AttentionParams& p, const Block& b, const Smem& sm, int c) {
    Consumer t;
    const int tid = threadIdx.x % kWarpgroupThreads;
    t.c = c;
    t.lane = tid % 32;
    t.row0 = (tid / 32) * 16 + t.lane / 4;
    t.col0 = (t.lane % 4) * 2;
    t.tok[0] = token_of(t.row0, b);
    t.tok[1] = token_of(t.row0 + 8, b);
    t.q_addr = smem_u32(sm.q);
    t.p_addr = smem_u32(sm.p);
    const KvDequant dq = kFp8 ? KvDequant(p, b.seq, 0) : KvDequant();  // one latent cache: K's factor serves V
    t.score_mul = p.scale_log2 * dq.k;
    t.out_mul = dq.k;
#pragma unroll
    for (int i = 0; i < DVH / 8; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) t.o[i][j] = 0.f;
    for (int r = 0; r < 2; ++r) t.row_max[r] = neg_inf(), t.row_sum[r] = 0.f;

    load_q(p, b, sm);
    if constexpr (kFp8 && !is_same<E, fp16_t>::value) {
      named_barrier_sync(kPBarrier, kConsumers);
      q_to_f16(sm, t);
    }
    fence_proxy_async_shared();
    named_barrier_sync(kPBarrier, kConsumers);
    if constexpr (kFp8 && !is_same<E, fp16_t>::value)
      t.score_mul *= QToF16<QTile, D>::pow2(sm.sh->q_exp[(threadIdx.x / 32) % 4]);
    load_q_frags(sm, t);

    float s[NH / 8][4];
    const int n = b.n_tiles;
    // One product at a time, each waited: a wgmma group in flight across the softmax or the next
    // tile's mbarrier waits makes ptxas serialise every wgmma (C7514 / C7515; kernels-mla-decode.md).
    for (int i = 0; i < b.n_tiles; ++i) {
      if (kFp8 && i > 0) named_barrier_sync(kMaxBarrier, kConsumers);  // fp8: the fp16 tile is free
      issue_qk(s, b, sm, t, i);
      wgmma_wait<0>();
      fence_operand(s);
      softmax_to_p(p, b, sm, t, s, i);
      issue_pv(sm, t, i);
      wgmma_wait<0>();
      fence_operand(t.o);
      if constexpr (!kFp8) release(sm, t, i);
    }
    store(p, b, sm, t);
  }

  // ---- epilogue -----------------------------------------------------------------------------

  // The two consumers' sums meet; each writes its 256 columns: normalised output (or the split's
  // fp32 partial) and, from consumer 0, the LSE.
  __device__ static void store(const AttentionParams& p, const Block& b, const Smem& sm, const Consumer& t) {
    const int lane = t.lane, c = t.c, row0 = t.row0, col0 = t.col0;
    const auto& o = t.o;
    const auto& row_max = t.row_max;
    const auto& row_sum = t.row_sum;
    float sum[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      sum[r] = quad_sum(row_sum[r]);
      if (lane % 4 == 0) sm.sh->row_sum[c][row0 + 8 * r] = sum[r];
    }
    named_barrier_sync(kMaxBarrier, kConsumers);
    const bool partial = p.num_splits > 1;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = row0 + 8 * r;
      if (row >= b.rows_here) continue;
      const Lse2 total{row_max[r], sum[r] + sm.sh->row_sum[c ^ 1][row]};
      const float inv = total.sum > 0.f ? t.out_mul / total.sum : 0.f;
      const long long token = b.q_begin + token_of(row, b);
      const int head = head_of(row, b);
      if (partial) {
        const long long slot = ((long long)b.split * p.total_q + token) * p.num_q_heads + head;
        float* out = p.o_partial + slot * DV + c * DVH;
#pragma unroll
        for (int n = 0; n < DVH / 8; ++n)
          *reinterpret_cast<float2*>(out + n * 8 + col0) = make_float2(o[n][2 * r] * inv, o[n][2 * r + 1] * inv);
        if (c == 0 && lane % 4 == 0) p.lse_partial[slot] = total.value();
      } else {
        u16* out = static_cast<u16*>(p.o) + token * p.o_row_stride + head * p.o_head_stride + c * DVH;
#pragma unroll
        for (int n = 0; n < DVH / 8; ++n)
          *reinterpret_cast<u32*>(out + n * 8 + col0) = pack2<E>(o[n][2 * r] * inv, o[n][2 * r + 1] * inv);
        if constexpr (T::kLse != LseOut::none)
          if (c == 0 && lane % 4 == 0)
            p.lse[token * p.lse_row_stride + head * p.lse_head_stride] = lse_out<T::kLse>(total.value());
      }
    }
  }
};

}  // namespace attnc
