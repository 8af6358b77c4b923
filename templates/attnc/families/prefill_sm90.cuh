// prefill_sm90: FlashAttention-3-style forward for Hopper (sm_90a). One block computes BLOCK_M =
// 64 * W query rows of one (request, q head); W consumer warpgroups own 64 rows each, and one
// producer warpgroup feeds them:
//
//   producer (setmaxnreg down)  one thread issues TMA: the Q tile once, then K and V tiles into
//                               STAGES-deep rings (K of tile i+1 ahead of V of tile i, the order
//                               the consumers use them), each stage an mbarrier pair full/empty.
//   consumers (setmaxnreg up)   S = Q K^T by wgmma from shared memory; logits, mask and online
//                               softmax in registers (features/); O += P V by wgmma with P in
//                               registers. Inside a warpgroup the softmax of tile i overlaps the
//                               Q K^T of tile i+1; across warpgroups a named-barrier token makes
//                               them issue their GEMMs in turn (ping-pong), so one's softmax runs
//                               under the other's tensor-core work.
//   epilogue                    O / rowsum -> shared memory (each warpgroup's own Q rows, dead by
//                               then) -> 16-byte stores; LSE per row.
//
// Tiles are SwizzledTile (128-byte swizzle): TMA writes them, wgmma reads them, no thread touches
// them on the way. K/V rows past a request's end come from the next request (or zero fill past the
// tensor) and are masked; query rows past it are computed and not stored.
//
// Block-sparse traits (`Sparse`, features/block_sparse.cuh): the producer and the consumers walk the
// same list of visible key tiles (Sparse::Tiles), so a skipped tile is never loaded nor computed.
//
// Paged K/V (kPaged, prefill_sm90_paged.cuh): a producer warp loads each tile as one TMA box per
// page (or part of a page), and the last tile's V rows past the request's end are zeroed before
// the consumers read it (barrier v_tail). int8: K (with its key scales, by bulk copy) and V by a
// warp each; int8_qkv with kVPrewiden reads V from the workspace its widening pass gathered the
// pages into, as contiguous rows (load_wide_v). kPagedGather (16-bit,
// prefill_sm90_paged_gather.cuh): the producer warpgroup gathers the tiles by cp.async instead,
// zero-filling rows past the end (no v_tail).
//
// Work order (core/work_order.cuh): causal items run longest first. Persistent blocks (kPersistent,
// one per SM, contiguous K/V) walk several items: the K/V rings run on across items, the output is
// staged in its own tile, and the consumers hand Q back (barrier q_empty) once their last Q K^T has
// read it, so the producer loads the next item's Q and first K/V tiles while the consumers finish
// and store this one.
//
// Traits (written by the emitter) supply:
//   Element (bf16_t | fp16_t), kHeadDim, kHeadDimV (multiples of 8, <= 256, Dv's 64-column blocks
//   no more than D's), kGroup, kBlockM (= 64 * kConsumerWarpgroups), kBlockN, kStages,
//   kConsumerWarpgroups (2 or 3), kPingpong, kMask (MaskKind), kSoftcap, kAlibi (Alibi), kSinks,
//   kLse (LseOut), kPaged, kPersistent, kMixedTiles, kPairedTiles, kPagedGather, kVPrewiden; int8 kernels also kInt8 (Q·Kᵀ
//   on s8 wgmma; int8_qkv's V widened by the producer, or with kVPrewiden once per call by
//   prefill_sm90_widen_v.cuh: prefill_sm90_int8.cuh).
#pragma once

#include "attnc/features/alibi.cuh"
#include "attnc/features/block_range.cuh"
#include "attnc/features/block_sparse.cuh"
#include "attnc/features/logits.cuh"
#include "attnc/features/lse.cuh"
#include "attnc/features/mask.cuh"
#include "attnc/features/online_softmax.cuh"
#include "attnc/features/score.cuh"
#include "attnc/families/prefill_sm90_int8.cuh"
#include "attnc/families/prefill_sm90_paged.cuh"
#include "attnc/families/prefill_sm90_paged_gather.cuh"
#include "attnc/families/prefill_sm90_stamps.cuh"
#include "attnc/params/params.h"
#include "attnc/core/ptx.cuh"
#include "attnc/core/work_order.cuh"
#include "attnc/sm90/mbarrier.cuh"
#include "attnc/sm90/tma.cuh"
#include "attnc/sm90/warpgroup.cuh"
#include "attnc/sm90/wgmma.cuh"

namespace attnc {

template <class T>
struct PrefillSm90 {
  using E = typename T::Element;
  static constexpr int D = T::kHeadDim, DV = T::kHeadDimV;
  // Products run over whole k16 steps and n16 columns; TMA zero-fills the columns past D and Dv,
  // so the padding adds nothing.
  static constexpr int KSTEPS = (D + 15) / 16, DVN = (DV + 15) / 16 * 16;
  static constexpr int W = T::kConsumerWarpgroups, BM = 64 * W, BN = T::kBlockN, STAGES = T::kStages;
  static constexpr int kThreads = (W + 1) * kWarpgroupThreads;
  static constexpr bool kPingpong = T::kPingpong && W > 1;
  static constexpr bool kPaged = T::kPaged;
  static constexpr bool kPersistent = T::kPersistent;
  static_assert(!(kPersistent && kPaged), "persistent blocks read contiguous K/V");
  // Mixed tiles (block-sparse, contiguous, 16-bit): the local band in tiles of BN keys, the vertical
  // blocks in tiles of BN / 2 (one sparse block) filling half a stage (Sparse::MixedTiles).
  static constexpr bool kMixed = T::kMixedTiles;
  static_assert(!(kMixed && kPaged), "mixed tiles read contiguous K/V");
  // Paired tiles (block-sparse, contiguous, 16-bit): every tile two sparse blocks of the visible
  // list, adjacent or not, in two TMA boxes (Sparse::PairedTiles); one width, BN keys.
  static constexpr bool kPaired = T::kPairedTiles;
  static_assert(!(kPaired && (kPaged || kMixed)), "paired tiles read contiguous K/V, in tiles of one width");
  // Paged K/V gathered by cp.async (prefill_sm90_paged_gather.cuh) instead of TMA boxes.
  static constexpr bool kGather = T::kPagedGather;
  static_assert(!kGather || kPaged, "the gather reads a paged cache");
  // Registers per thread after setmaxnreg: the producer keeps few, the consumers take the rest of
  // what the block was launched with (kLaunchRegs: setmaxnreg.inc draws on the block's own
  // registers, so a sum above it never completes). The paged producer warp holds its boxes' pages
  // and spills in 24, so at W = 2 it takes 32 and its consumers 232.
  static constexpr int kProducerRegs = W == 2 && !kPaged ? 24 : 32;
  static constexpr int kConsumerRegs = W == 2 ? (kPaged ? 232 : 240) : 160;
  static_assert(T::kBlockM == BM, "each consumer warpgroup owns 64 rows");
  static_assert(W == 2 || W == 3, "two or three consumer warpgroups");
  static_assert(D % 8 == 0 && DV % 8 == 0 && D <= 256 && DV <= 256, "rows of whole 16-byte chunks, n <= 256");
  static_assert(BN % 16 == 0 && BN <= 256, "key tiles of whole k16 steps");
  static_assert(STAGES >= 2, "at least double buffering");
  // The block's registers at launch (__launch_bounds__(kThreads, 1): 65536 / kThreads per thread,
  // rounded down to a multiple of 8).
  static constexpr int kLaunchRegs = 65536 / kThreads / 8 * 8 * kThreads;
  static_assert(kProducerRegs * kWarpgroupThreads + kConsumerRegs * W * kWarpgroupThreads <= kLaunchRegs,
                "setmaxnreg: the warpgroups share the registers the block was launched with");

  using Int8 = PrefillInt8<T, BN, D, STAGES>;  // int8 Q and K: tiles of D bytes per row
  static_assert(!(Int8::kOn && kGather), "the gather copies 16-bit caches (int8 keeps TMA)");
  static_assert(!(Int8::kOn && kPersistent),
                "persistent int8 blocks are not verified on a GPU (the planner refuses persistent for int8)");
  using PE = typename conditional<Int8::kFp16V, fp16_t, E>::type;  // P·V's element type: fp16 over widened V
  using QTile = SwizzledTile<BM, Int8::kQkCols>;
  using KTile = SwizzledTile<BN, Int8::kQkCols>;
  using VTile = SwizzledTile<BN, DV>;
  // The output is staged over the Q tile's space, which is made to fit it (persistent: in a tile of
  // its own, after the others).
  using OTile = SwizzledTile<BM, DV>;
  static constexpr int kQBytes = QTile::kBytes > OTile::kBytes ? QTile::kBytes : OTile::kBytes;
  using Order = WorkOrder<T::kMask == MaskKind::causal>;
  using Gather = PagedGather<BN>;

  using Sparse = typename SparseOf<T>::type;
  // The key tiles a block visits, in order: all of the mask's range, or the visible ones.
  template <class S, bool = S::kEnabled>
  struct TileListOf {
    using type = DenseTiles<BN>;
  };
  template <class S>
  struct TileListOf<S, true> {
    using type = typename S::template Tiles<BN>;
  };
  template <class S>
  struct MixedListOf {
    static_assert(S::kEnabled && S::kBlock * 2 == BN, "mixed tiles: BN keys are two sparse blocks");
    using type = typename S::MixedTiles;
  };
  template <class S>
  struct PairedListOf {
    static_assert(S::kEnabled && S::kBlock * 2 == BN, "paired tiles: BN keys are two sparse blocks");
    using type = typename S::PairedTiles;
  };
  using OneWidthList = typename conditional<kPaired, PairedListOf<Sparse>, TileListOf<Sparse>>::type;
  using TileList = typename conditional<kMixed, MixedListOf<Sparse>, OneWidthList>::type::type;
  // K/V tiles land in TMA boxes of kBoxRows rows (mixed: one narrow tile; paired: one sparse
  // block); a stage holds BN rows.
  static constexpr int kBoxRows = kMixed || kPaired ? BN / 2 : BN;

  // Shared memory: Q, the K ring, the V ring, (int8_qkv) the raw V ring, (int8) the key-scale ring,
  // (persistent) O, then the barriers; 1 KiB of slack aligns the tiles.
  struct Barriers {
    u64 q_full;
    u64 k_full[STAGES], k_empty[STAGES], v_full[STAGES], v_empty[STAGES];
  };
  using RawVTile = typename Int8::template RawVTile<DV>;  // int8_qkv: raw V before widening
  static constexpr int kTileBytes = kQBytes + STAGES * (KTile::kBytes + VTile::kBytes) +
                                    Int8::template kRawVBytes<DV> + Int8::kScaleBytes +
                                    (kPersistent ? OTile::kBytes : 0);
  // One more barrier after them: paged, v_tail (the last V tile with its rows past the end zeroed);
  // persistent, q_empty (the consumers are done with Q). int8_qkv: raw_full and raw_empty.
  static constexpr int kSmemBytes =
      1024 + kTileBytes + int(sizeof(Barriers)) + (kPaged || kPersistent ? 8 : 0) + Int8::kRawBarrierBytes;

  // Named barriers: 0 is __syncthreads; 1..W pass the GEMM-issue token; W+1..2W are each consumer
  // warpgroup's own.
  static constexpr int kTokenBarrier = 1, kWarpgroupBarrier = 1 + W;

  struct Smem {
    u16* q;
    u16* k;
    u16* v;
    u16* o;  // the output's staging tile: q, or (persistent) its own
    Barriers* bar;
    __device__ u64* v_tail() const { return reinterpret_cast<u64*>(bar + 1); }   // paged
    __device__ u64* q_empty() const { return reinterpret_cast<u64*>(bar + 1); }  // persistent (never paged)
    __device__ u16* k_stage(int s) const { return k + s * KTile::kElems; }
    __device__ u16* v_stage(int s) const { return v + s * VTile::kElems; }
    // int8_qkv: stage s of the raw V ring, after the V ring; int8: the key-scale ring after that.
    __device__ u16* raw_v(int s) const { return v + STAGES * VTile::kElems + s * RawVTile::kElems; }
    __device__ float* key_scales(int s) const {
      return reinterpret_cast<float*>(v + STAGES * VTile::kElems + Int8::template kRawVBytes<DV> / 2) + s * BN;
    }
    // int8_qkv's raw-ring barriers, after v_tail (paged) or q_empty (persistent) where there is one.
    static constexpr int kOneMoreBarrier = kPaged || kPersistent ? 1 : 0;
    __device__ u64* raw_full(int s) const { return reinterpret_cast<u64*>(bar + 1) + kOneMoreBarrier + s; }
    __device__ u64* raw_empty(int s) const {
      return reinterpret_cast<u64*>(bar + 1) + kOneMoreBarrier + STAGES + s;
    }
  };

  // What every thread knows about its block: the rows, the key tiles, where the request lives.
  struct Block {
    int seq, head, kv_head, m0, rows_here, sq, sk, q_begin, k_begin;
    int n_tiles;     // key tiles visited
    TileList tiles;  // which: tile t holds keys [t * BN, t * BN + BN)
  };

  // Where a block is in its walk over items: key tiles visited (the K/V rings' position) and items
  // computed (the phase of the Q barriers), both counted over the block's earlier items.
  struct Progress {
    int tiles, items;
  };

  __device__ static bool setup(const AttentionParams& p, const WorkItem& item, Block& b) {
    b.seq = item.seq;
    b.head = item.head;
    b.kv_head = b.head / T::kGroup;
    const int m_block = item.m_block;
    b.q_begin = p.cu_seqlens_q[b.seq];
    b.sq = p.cu_seqlens_q[b.seq + 1] - b.q_begin;
    if constexpr (kPaged) {
      b.k_begin = 0;
      b.sk = PagedKvBoxes<BN>(p, b.seq).sk;
    } else {
      b.k_begin = p.cu_seqlens_k[b.seq];
      b.sk = p.cu_seqlens_k[b.seq + 1] - b.k_begin;
    }
    b.m0 = m_block * BM;
    if (b.m0 >= b.sq) return false;
    b.rows_here = min(BM, b.sq - b.m0);
    const Mask<T::kMask> mask(b.sq, b.sk, p.window_left, p.window_right);
    const BlockRange r = block_range<BN>(mask, b.m0, b.m0 + b.rows_here, b.sk, 0, 1);
    if constexpr (kMixed || kPaired) {
      const BlockRange rb = block_range<kBoxRows>(mask, b.m0, b.m0 + b.rows_here, b.sk, 0, 1);
      b.tiles = TileList(b.m0 + mask.shift, b.m0 + b.rows_here - 1 + mask.shift, rb.n_begin / kBoxRows,
                         rb.n_begin / kBoxRows + rb.n_tiles, b.head);
    } else if constexpr (Sparse::kEnabled)
      b.tiles = TileList(b.m0 + mask.shift, b.m0 + b.rows_here - 1 + mask.shift, r.n_begin / BN,
                         r.n_begin / BN + r.n_tiles, b.head);
    else
      b.tiles = TileList{r.n_begin / BN, r.n_begin / BN + r.n_tiles};
    b.n_tiles = b.tiles.count();
    return true;
  }

  // f(block, progress) for each item of this block: its one item (a grid of tiles x heads x
  // requests), or (persistent) its rounds over all items.
  template <class F>
  __device__ static void for_each_item(const AttentionParams& p, F&& f) {
    Progress pr{0, 0};
    Block b;
    if constexpr (kPersistent) {
      const Order order{max(1, (p.max_seqlen_q + BM - 1) / BM), p.num_q_heads, p.batch};
      const int c = linear_block_index(), g = grid_blocks(), n = order.count();
      for (int r = 0;; ++r) {
        const int w = Order::persistent_item(r, c, g);
        if (w >= n) break;  // later rounds' items are further still
        if (!setup(p, order.at(w), b)) continue;
        f(b, pr);
        pr.tiles += b.n_tiles;
        ++pr.items;
      }
    } else {
      const Order order{int(gridDim.x), int(gridDim.y), int(gridDim.z)};
      if (setup(p, order.at(linear_block_index()), b)) f(b, pr);
    }
  }

  __device__ static void run(const AttentionParams& p, const AttentionTensorMaps& maps, unsigned char* smem_raw) {
    u16* tiles = reinterpret_cast<u16*>(tma_aligned_smem(smem_raw));
    u16* const kv = tiles + kQBytes / 2;
    u16* const o = kPersistent ? tiles + (kTileBytes - OTile::kBytes) / 2 : tiles;  // the last tile
    Smem sm{tiles, kv, kv + STAGES * KTile::kElems, o,
            reinterpret_cast<Barriers*>(reinterpret_cast<unsigned char*>(tiles) + kTileBytes)};
    if (threadIdx.x == 0) {
      mbar_init(&sm.bar->q_full, 1);
      for (int s = 0; s < STAGES; ++s) {
        // int8: the TMA bytes and the scales; the gather: every producer thread's copies.
        mbar_init(&sm.bar->k_full[s], kGather ? Gather::kThreads : Int8::kKeyFullArrivals);
        mbar_init(&sm.bar->v_full[s], kGather ? Gather::kThreads : Int8::kValueFullArrivals);
        mbar_init(&sm.bar->k_empty[s], 4 * W);  // one arrival per consumer warp
        mbar_init(&sm.bar->v_empty[s], 4 * W);
      }
      if constexpr (kPaged) mbar_init(sm.v_tail(), 1);
      if constexpr (Int8::kWidenV)
        for (int s = 0; s < STAGES; ++s) {
          mbar_init(sm.raw_full(s), 1);
          mbar_init(sm.raw_empty(s), Int8::kWidenWarps);
        }
      if constexpr (kPersistent) mbar_init(sm.q_empty(), 4 * W);
      mbar_fence_init();
    }
    __syncthreads();

    const int wg = warpgroup_index();
    if (wg == 0) {
      warpgroup_reg_dealloc<kProducerRegs>();
      if constexpr (kPaged && Int8::kOn) {  // K (with its key scales) and V by warps of their own
        if (threadIdx.x < 32)
          for_each_item(p, [&](const Block& b, const Progress&) { load_paged<true, false>(p, maps, b, sm); });
        else if (threadIdx.x < 64) {
          if constexpr (T::kVPrewiden)
            for_each_item(p, [&](const Block& b, const Progress&) { load_wide_v(p, maps, b, sm); });
          else
            for_each_item(p, [&](const Block& b, const Progress&) { load_paged<false, true>(p, maps, b, sm); });
        }
      } else if constexpr (kGather) {
        for_each_item(p, [&](const Block& b, const Progress&) { gather_paged(p, maps, b, sm); });
      } else if constexpr (kPaged) {
        if (threadIdx.x < 32)
          for_each_item(p, [&](const Block& b, const Progress&) { load_paged<true, true>(p, maps, b, sm); });
      } else {
        if (threadIdx.x == 0) for_each_item(p, [&](const Block& b, const Progress& pr) { load(maps, b, sm, pr); });
        if constexpr (Int8::kOn)
          if (threadIdx.x / 32 == 1)
            for_each_item(p, [&](const Block& b, const Progress& pr) { load_key_scales(p, b, sm, pr); });
      }
      if constexpr (Int8::kWidenV)
        if (threadIdx.x / 32 >= 2) {
          const int w = threadIdx.x / 32 - 2;
          for_each_item(p, [&](const Block& b, const Progress& pr) { widen_values(b, sm, w, pr); });
        }
    } else {
      warpgroup_reg_alloc<kConsumerRegs>();
      ChainStamps st;
      for_each_item(p, [&](const Block& b, const Progress& pr) { compute(p, b, sm, wg - 1, pr, st); });
      st.add();
    }
  }

  // The i-th key tile visited, given the (i-1)-th: dense blocks index their range (no register
  // carried through the loop), sparse ones walk the list.
  __device__ static int tile_at(const Block& b, int i, int prev) {
    if constexpr (Sparse::kEnabled) return i == 0 ? b.tiles.first() : b.tiles.next(prev);
    else return b.tiles.first() + i;
  }
  // Tile t's first key and whether it is BN keys wide (mixed: else BN / 2).
  __device__ static int tile_key0(int t) {
    if constexpr (kMixed) return TileList::block(t) * kBoxRows;
    else if constexpr (kPaired) return TileList::first_block(t) * kBoxRows;
    else return t * BN;
  }
  // The first key of a wide tile's second box (paired: the second block, the first again if single).
  __device__ static int tile_key1(int t) {
    if constexpr (kPaired) return TileList::second_block(t) * kBoxRows;
    else return tile_key0(t) + kBoxRows;
  }
  __device__ static bool tile_wide(int t) {
    if constexpr (kMixed) return TileList::wide(t);
    else return true;
  }

  // ---- producer -----------------------------------------------------------------------------

  // The Q tile, by one thread.
  __device__ static void load_q(const AttentionTensorMaps& maps, const Block& b, const Smem& sm) {
    tma_prefetch_descriptor(&maps.q);
    tma_prefetch_descriptor(&maps.k);
    tma_prefetch_descriptor(&maps.v);
    mbar_arrive_expect_tx(&sm.bar->q_full, QTile::kBytes);
#pragma unroll
    for (int c = 0; c < QTile::kBlocks; ++c)
      tma_load_3d(sm.q + c * BM * 64, &maps.q, &sm.bar->q_full, c * 64, b.head, b.q_begin + b.m0);
  }

  __device__ static void load(const AttentionTensorMaps& maps, const Block& b, const Smem& sm, const Progress& pr) {
    if constexpr (kPersistent) mbar_wait(sm.q_empty(), (pr.items & 1) ^ 1);  // the last item's Q is read
    load_q(maps, b, sm);

    auto load_tile = [&](const TmaDescriptor* map, u16* dst, u64* full, u64* empty, int blocks, int tile_elems,
                         int tile_bytes, int rows, int i, int tile) {
      const int j = pr.tiles + i, s = j % STAGES;  // the rings run on across a block's items
      mbar_wait(&empty[s], ((j / STAGES) & 1) ^ 1);  // the consumers have released this stage
      const bool wide = tile_wide(tile);  // mixed: a narrow tile fills half the stage
      mbar_arrive_expect_tx(&full[s], wide ? tile_bytes : tile_bytes / 2);
      const int row = b.k_begin + tile_key0(tile), row1 = b.k_begin + tile_key1(tile);
      for (int c = 0; c < blocks; ++c) {
        u16* box = dst + s * tile_elems + c * rows * 64;
        tma_load_3d(box, map, &full[s], c * 64, b.kv_head, row);
        if (kBoxRows < BN && wide) tma_load_3d(box + kBoxRows * 64, map, &full[s], c * 64, b.kv_head, row1);
      }
    };
    auto load_k = [&](int i, int tile) {
      load_tile(&maps.k, sm.k, sm.bar->k_full, sm.bar->k_empty, KTile::kBlocks, KTile::kElems, KTile::kBytes, BN, i,
                tile);
    };
    auto load_v = [&](int i, int tile) {
      if constexpr (Int8::kWidenV)  // the raw int8 tile, for the widening warps
        load_tile(&maps.v, sm.raw_v(0), sm.raw_full(0), sm.raw_empty(0), RawVTile::kBlocks, RawVTile::kElems,
                  RawVTile::kBytes, BN, i, tile);
      else
        load_tile(&maps.v, sm.v, sm.bar->v_full, sm.bar->v_empty, VTile::kBlocks, VTile::kElems, VTile::kBytes, BN, i,
                  tile);
    };
    int k_tile = tile_at(b, 0, 0), v_tile = k_tile;  // K runs one tile ahead of V
    if (b.n_tiles > 0) load_k(0, k_tile);
    for (int i = 0; i < b.n_tiles; ++i) {
      if (i + 1 < b.n_tiles) load_k(i + 1, k_tile = tile_at(b, i + 1, k_tile));
      load_v(i, v_tile);
      v_tile = k_tile;
    }
  }

  // int8: the key scales of each K tile, by the producer's second warp, into the stage K uses (the
  // rings' position j runs on across a block's items, as load()'s does).
  __device__ static void load_key_scales(const AttentionParams& p, const Block& b, const Smem& sm, const Progress& pr) {
    int tile = 0;
    for (int i = 0; i < b.n_tiles; ++i) {
      tile = tile_at(b, i, tile);
      const int j = pr.tiles + i, s = j % STAGES;
      Int8::load_scales(p, sm.key_scales(s), &sm.bar->k_full[s], &sm.bar->k_empty[s], b.kv_head, b.k_begin, b.sk,
                        tile * BN, j, threadIdx.x % 32);
    }
  }

  // int8_qkv: each raw V tile widened to fp16 by producer warps 2 and 3 (w = 0, 1) into the V ring.
  __device__ static void widen_values(const Block& b, const Smem& sm, int w, const Progress& pr) {
    for (int i = 0; i < b.n_tiles; ++i) {
      const int j = pr.tiles + i, s = j % STAGES;
      Int8::template widen_v<VTile, DV>(sm.v_stage(s), sm.raw_v(s), &sm.bar->v_full[s], &sm.bar->v_empty[s],
                                        sm.raw_full(s), sm.raw_empty(s), j, w, threadIdx.x % 32);
    }
  }

  // Paged K/V (kLoadK, kLoadV: which), by one warp: lane j issues box j of each tile (the pages of
  // a tile are read in one go, before the stage is free). 16-bit: one warp loads both, V of tile i
  // reusing the pages K of tile i found. int8: a warp each (one warp's 32 registers spilled holding
  // both walks with int8's rings); lane j also copies box j's key scales into the K stage's scale
  // ring, on the same barrier, and int8_qkv's V boxes land in the raw ring, for the widening warps.
  template <bool kLoadK, bool kLoadV>
  __device__ static void load_paged(const AttentionParams& p, const AttentionTensorMaps& maps, const Block& b,
                                    const Smem& sm) {
    const int lane = threadIdx.x % 32;
    if (kLoadK && lane == 0) load_q(maps, b, sm);
    if (b.n_tiles == 0) return;
    const PagedKvBoxes<BN> boxes(p, b.seq);
    // A ring's tiles and barriers as 32-bit shared addresses, one base plus offsets the compiler
    // folds (the generic pointers' two registers each, hoisted out of the loop, spilled the warp's
    // 32 once int8 added its rings).
    const u32 base = smem_u32(sm.q);
    auto addr = [&](const void* ptr) {
      return base + u32(static_cast<const char*>(ptr) - reinterpret_cast<const char*>(sm.q));
    };
    struct Ring {
      u32 tiles, full, empty;
    };
    const Ring k_ring{addr(sm.k), addr(sm.bar->k_full), addr(sm.bar->k_empty)};
    const Ring v_ring = Int8::kWidenV ? Ring{addr(sm.raw_v(0)), addr(sm.raw_full(0)), addr(sm.raw_empty(0))}
                                      : Ring{addr(sm.v), addr(sm.bar->v_full), addr(sm.bar->v_empty)};
    const u32 key_scales = addr(sm.key_scales(0));  // int8
    auto load_tile = [&](const TmaDescriptor* map, const Ring& ring, int blocks, int tile_bytes, int i, int tile,
                         int page, int slot, bool with_key_scales) {
      const int s = i % STAGES;
      const u32 full = ring.full + 8 * s;
      if (lane == 0) {
        mbar_wait(ring.empty + 8 * s, ((i / STAGES) & 1) ^ 1);
        const int scale_bytes = with_key_scales ? boxes.loaded(tile * BN) * boxes.rows * 4 : 0;  // int8
        mbar_arrive_expect_tx(full, boxes.loaded_bytes(tile * BN, blocks) + scale_bytes);
      }
      __syncwarp();
      load_paged_box<BN>(ring.tiles + s * tile_bytes, map, full, blocks, b.kv_head, boxes.rows, page, slot, lane);
      if (with_key_scales)
        load_paged_key_scales(p, key_scales + s * BN * 4, full, b.kv_head, boxes.rows, page, slot, lane);
    };
    constexpr int kVBlocks = Int8::kWidenV ? RawVTile::kBlocks : VTile::kBlocks;
    constexpr int kVBytes = Int8::kWidenV ? RawVTile::kBytes : VTile::kBytes;
    int k_tile = tile_at(b, 0, 0), k_page = -1, k_slot = 0;
    if constexpr (kLoadK) {
      boxes.locate(k_tile * BN, lane, k_page, k_slot);
      load_tile(&maps.k, k_ring, KTile::kBlocks, KTile::kBytes, 0, k_tile, k_page, k_slot, Int8::kOn);
    }
    for (int i = 0; i < b.n_tiles; ++i) {
      const int v_tile = k_tile;
      int v_page = k_page, v_slot = k_slot;
      if constexpr (!kLoadK) boxes.locate(v_tile * BN, lane, v_page, v_slot);  // V alone: its own page lookup
      if (i + 1 < b.n_tiles) {
        k_tile = tile_at(b, i + 1, k_tile);
        if constexpr (kLoadK) {
          boxes.locate(k_tile * BN, lane, k_page, k_slot);
          load_tile(&maps.k, k_ring, KTile::kBlocks, KTile::kBytes, i + 1, k_tile, k_page, k_slot, Int8::kOn);
        }
      }
      if constexpr (kLoadV) load_tile(&maps.v, v_ring, kVBlocks, kVBytes, i, v_tile, v_page, v_slot, false);
    }
    if constexpr (!kLoadV) return;
    // The last tile (k_tile now) is the only one that can reach past the request's end.
    if (tail_tile(b, k_tile)) {
      const int last = b.n_tiles - 1, s = last % STAGES;
      mbar_wait(&sm.bar->v_full[s], (last / STAGES) & 1);
      zero_tile_rows<BN>(sm.v_stage(s), VTile::kBlocks, b.sk - k_tile * BN, lane);
      fence_proxy_async_shared();  // the zeros, written by ordinary stores, are read by wgmma
      __syncwarp();
      if (lane == 0) mbar_arrive(sm.v_tail());
    }
  }

  // Paged int8_qkv with v_prewiden: V from the workspace `<entry>_widen_v` gathered it into, the
  // request's keys from row seq * v_wide_request_rows, rows past its end zeroed to its last tile's
  // end: one box per 64-column block, as contiguous V, by one lane of the V warp.
  __device__ static void load_wide_v(const AttentionParams& p, const AttentionTensorMaps& maps, const Block& b,
                                     const Smem& sm) {
    if (threadIdx.x % 32 != 0) return;
    const int row0 = b.seq * p.v_wide_request_rows;
    int tile = 0;
    for (int i = 0; i < b.n_tiles; ++i) {
      tile = tile_at(b, i, tile);
      const int s = i % STAGES;
      mbar_wait(&sm.bar->v_empty[s], ((i / STAGES) & 1) ^ 1);
      mbar_arrive_expect_tx(&sm.bar->v_full[s], VTile::kBytes);
      for (int c = 0; c < VTile::kBlocks; ++c)
        tma_load_3d(sm.v_stage(s) + c * BN * 64, &maps.v, &sm.bar->v_full[s], c * 64, b.kv_head, row0 + tile * BN);
    }
  }

  // Paged 16-bit K/V gathered by the producer warpgroup's 128 threads (prefill_sm90_paged_gather.cuh):
  // K of tile i + 1 before V of tile i, V reusing the pages K found, each stage's copies completing
  // on its full barrier by every thread's arrive.noinc.
  __device__ static void gather_paged(const AttentionParams& p, const AttentionTensorMaps& maps, const Block& b,
                                      const Smem& sm) {
    const int t = threadIdx.x, lane = t % 32;
    if (t == 0) load_q(maps, b, sm);
    if (b.n_tiles == 0) return;
    const Gather gather(p, b.seq);
    // Shared addresses as one 32-bit base plus offsets the compiler folds (as load_paged keeps them).
    const u32 base = smem_u32(sm.q);
    auto addr = [&](const void* ptr) {
      return base + u32(static_cast<const char*>(ptr) - reinterpret_cast<const char*>(sm.q));
    };
    auto copy_k = [&](int i, int tile, int page, int slot) {
      const int s = i % STAGES;
      mbar_wait(addr(&sm.bar->k_empty[s]), ((i / STAGES) & 1) ^ 1);
      gather.template copy<D>(addr(sm.k_stage(s)), static_cast<const u16*>(p.k) + b.kv_head * p.k_head_stride,
                              p.k_block_stride, int(p.k_row_stride), tile * BN, page, slot, t);
      cp_async_arrive_noinc(addr(&sm.bar->k_full[s]));
    };
    auto copy_v = [&](int i, int tile, int page, int slot) {
      const int s = i % STAGES;
      mbar_wait(addr(&sm.bar->v_empty[s]), ((i / STAGES) & 1) ^ 1);
      gather.template copy<DV>(addr(sm.v_stage(s)), static_cast<const u16*>(p.v) + b.kv_head * p.v_head_stride,
                               p.v_block_stride, int(p.v_row_stride), tile * BN, page, slot, t);
      cp_async_arrive_noinc(addr(&sm.bar->v_full[s]));
    };
    int k_tile = tile_at(b, 0, 0), k_page, k_slot;
    gather.locate(k_tile * BN, lane, k_page, k_slot);
    copy_k(0, k_tile, k_page, k_slot);
    for (int i = 0; i < b.n_tiles; ++i) {
      const int v_tile = k_tile, v_page = k_page, v_slot = k_slot;
      if (i + 1 < b.n_tiles) {
        k_tile = tile_at(b, i + 1, k_tile);
        gather.locate(k_tile * BN, lane, k_page, k_slot);
        copy_k(i + 1, k_tile, k_page, k_slot);
      }
      copy_v(i, v_tile, v_page, v_slot);
    }
    // No thread leaves with copies in flight (their arrivals are still owed to the barriers).
    cp_async_commit();
    cp_async_wait<0>();
  }

  // A consumer's wait for a K or V stage. Gathered tiles were written by cp.async, in the generic
  // proxy, and its writers cannot fence after their copies land, so each reader orders them before
  // its wgmma (the async proxy) reads them. ATTNC_GATHER_NO_FENCE drops it (a measurement's bound:
  // 1.1-1.5 % faster at page 16 d128; the PTX memory model asks for the fence, FlashAttention-3 has
  // none). One fence per step after V(i-1)'s barrier (which also covers K(i)) was 1.4-2.1 % slower
  // than two: QK(i) then waits for V(i-1) (docs/kernels-prefill-sm90.md).
  __device__ static void wait_full(u64* full, int parity) {
    mbar_wait(full, parity);
#ifndef ATTNC_GATHER_NO_FENCE
    if constexpr (kGather) fence_proxy_async_shared();
#endif
  }

  // Whether the block's last key tile reaches past the request's end (paged: its V rows there are
  // zeroed and handed over on v_tail; not int8_qkv's, whose widened int8 values are finite and
  // whose prewidened rows there the widening pass zeroed, nor the gather's, which zero-fills them).
  __device__ static bool tail_tile(const Block& b, int last_tile) {
    return kPaged && !kGather && !Int8::kFp16V && (last_tile + 1) * BN > b.sk;
  }

  // ---- consumers ----------------------------------------------------------------------------

  // Persistent blocks of two consumer warpgroups read Q into registers once per item (the A
  // operand of Q K^T, m16n8k16 fragments per warp: D / 4 registers, 32 at d128; three warpgroups'
  // 160 registers spill with them): Q K^T then reads only K from shared memory (a 64 x 64 x 16
  // product reading both operands there needs all of its bandwidth), and Q's tile is free for the
  // next item at once.
  static constexpr bool kQInRegisters = kPersistent && W == 2 && D <= 128;
  using QFrags = u32[kQInRegisters ? KSTEPS : 1][4];

  __device__ static void load_q_frags(QFrags& qf, const Smem& sm, int row0, int col0) {
#pragma unroll
    for (int kk = 0; kk < KSTEPS; ++kk) {
      qf[kk][0] = *reinterpret_cast<const u32*>(sm.q + QTile::offset(row0, kk * 16 + col0));
      qf[kk][1] = *reinterpret_cast<const u32*>(sm.q + QTile::offset(row0 + 8, kk * 16 + col0));
      qf[kk][2] = *reinterpret_cast<const u32*>(sm.q + QTile::offset(row0, kk * 16 + 8 + col0));
      qf[kk][3] = *reinterpret_cast<const u32*>(sm.q + QTile::offset(row0 + 8, kk * 16 + 8 + col0));
    }
  }

  // The first N / 8 column groups of a tile's S (or N / 16 k-steps of its P): a narrow tile's.
  template <int N>
  __device__ static float (&cols(float (&s)[BN / 8][4]))[N / 8][4] {
    return *reinterpret_cast<float(*)[N / 8][4]>(&s);
  }
  template <int N>
  __device__ static u32 (&ksteps(u32 (&pf)[BN / 16][4]))[N / 16][4] {
    return *reinterpret_cast<u32(*)[N / 16][4]>(&pf);
  }

  // S = Q K^T for this warpgroup's 64 rows and the N keys of the K tile in stage s (issued, not waited).
  template <int N>
  __device__ static void issue_qk(float (&s)[N / 8][4], const QFrags& qf, const Smem& sm, int cw, int stage) {
    const u32 q = smem_u32(sm.q), k = smem_u32(sm.k_stage(stage));
    if constexpr (Int8::kOn) {
      Int8::template issue_qk<QTile, KTile>(s, q, k, cw * 64);
    } else {
#pragma unroll
      for (int kk = 0; kk < KSTEPS; ++kk) {
        if constexpr (kQInRegisters) wgmma_rs<E, N, 0>(s, qf[kk], KTile::desc_k_major(k, 0, kk), kk > 0);
        else wgmma_ss<E, N, 0>(s, QTile::desc_k_major(q, cw * 64, kk), KTile::desc_k_major(k, 0, kk), kk > 0);
      }
    }
  }

  // O += P V with P in registers (m16n8k16 A fragments per warp) and the N rows of the V tile in stage s.
  template <int N>
  __device__ static void issue_pv(float (&o)[DVN / 8][4], const u32 (&pf)[N / 16][4], const Smem& sm, int stage) {
    const u32 v = smem_u32(sm.v_stage(stage));
#pragma unroll
    for (int kk = 0; kk < N / 16; ++kk) wgmma_rs<PE, DVN, 1>(o, pf[kk], VTile::desc_mn_major(v, kk), true);
  }

  // Probabilities (fp32 accumulator layout) -> the A operand of the next product.
  template <int N>
  __device__ static void to_operand(const float (&s)[N / 8][4], u32 (&pf)[N / 16][4]) {
#pragma unroll
    for (int kk = 0; kk < N / 16; ++kk) {
      pf[kk][0] = pack2<PE>(s[2 * kk][0], s[2 * kk][1]);
      pf[kk][1] = pack2<PE>(s[2 * kk][2], s[2 * kk][3]);
      pf[kk][2] = pack2<PE>(s[2 * kk + 1][0], s[2 * kk + 1][1]);
      pf[kk][3] = pack2<PE>(s[2 * kk + 1][2], s[2 * kk + 1][3]);
    }
  }

  // A stage is released by every consumer warp once its products have read it.
  __device__ static void release(u64* empty) {
    if (threadIdx.x % 32 == 0) mbar_arrive(empty);
  }

  // The GEMM-issue token (ping-pong): wait for this warpgroup's turn, pass it on.
  __device__ static void token_wait(int cw) {
    if constexpr (kPingpong) named_barrier_sync(kTokenBarrier + cw, 2 * kWarpgroupThreads);
  }
  __device__ static void token_pass(int cw) {
    if constexpr (kPingpong) named_barrier_arrive(kTokenBarrier + (cw + 1) % W, 2 * kWarpgroupThreads);
  }

  // One consumer warpgroup's work on one item: its registers (O, S, P, the softmax state) and the
  // steps of its key-tile loop as templates on the tile widths (NQ keys in the tile whose Q K^T is
  // issued, NP in the one whose P V is; mixed tiles mix BN and BN / 2). Every method inlines, so
  // the members stay in registers.
  struct Consumer {
    // int8: the transform's multiplier is folded into the q scales (PrefillInt8::FoldedScore).
    using Score = typename conditional<Int8::kOn || Int8::kFold16, typename Int8::FoldedScore,
                                       ScoreTransform<T::kSoftcap>>::type;
    const Block& b;
    const Smem& sm;
    const Progress& pr;
    ChainStamps& st;  // empty unless ATTNC_CHAIN_STAMPS
    const int cw, row0, col0, t1;  // row0 and row0 + 8: the thread's rows within the block
    const int tok[2];
    const Mask<T::kMask> mask;
    const Score score;
    const AlibiBias<T::kAlibi> alibi[2];
    const typename Sparse::Row rows[2];
    Int8 int8;
    float o[DVN / 8][4];
    OnlineSoftmax<2> softmax;
    u32 pf[BN / 16][4];
    float s[BN / 8][4];
    float rescale[2];
    QFrags qf;

    __device__ __forceinline__ Consumer(const AttentionParams& p, const Block& b_, const Smem& sm_, int cw_,
                                        const Progress& pr_, ChainStamps& st_)
        : b(b_), sm(sm_), pr(pr_), st(st_), cw(cw_), row0(cw_ * 64 + (threadIdx.x / 32) % 4 * 16 + threadIdx.x % 32 / 4),
          col0(threadIdx.x % 4 * 2), t1(b_.m0 + b_.rows_here), tok{b_.m0 + row0, b_.m0 + row0 + 8},
          mask(b_.sq, b_.sk, p.window_left, p.window_right), score(p),
          alibi{AlibiBias<T::kAlibi>(p, b_.seq, b_.head), AlibiBias<T::kAlibi>(p, b_.seq, b_.head)},
          rows{typename Sparse::Row(b_.head), typename Sparse::Row(b_.head)} {
      int8.init(p, b.head, b.q_begin, b.sq, tok);
#pragma unroll
      for (int i = 0; i < DVN / 8; ++i)
#pragma unroll
        for (int c = 0; c < 4; ++c) o[i][c] = 0.f;
    }

    // Stage and phase of the i-th tile of this item (the rings run on across a block's items).
    __device__ __forceinline__ int stage(int i) const { return (pr.tiles + i) % STAGES; }
    __device__ __forceinline__ int phase(int i) const { return ((pr.tiles + i) / STAGES) & 1; }
    __device__ __forceinline__ void q_read() const {  // persistent: the producer may load the next item's Q
      if constexpr (kPersistent) release(sm.q_empty());
    }

    template <int N>
    __device__ __forceinline__ void logits(float (&sq)[N / 8][4], int tile) {
      if constexpr (kPaired) {  // each half at its block's keys; a single tile's second half masked whole
        auto& halves = *reinterpret_cast<float(*)[2][kBoxRows / 8][4]>(&sq);
        half_logits(halves[0], tile_key0(tile));
        half_logits(halves[1], TileList::single(tile) ? b.sk : tile_key1(tile));
        return;
      }
      const int n0 = tile_key0(tile);
      const bool need_mask = mask.tile_needs_mask(b.m0, t1, n0, n0 + N, b.sk) ||
                             !Sparse::tile_full(b.m0 + mask.shift, t1 - 1 + mask.shift, n0, n0 + N, b.head, b.head);
      apply_logits(sq, score, alibi, mask, rows, tok, n0, col0, b.sk, need_mask);
    }

    // Paired tiles: one sparse block's columns at keys [n0, n0 + kBoxRows) (n0 = sk: none
    // visible), masked where this warpgroup's 64 rows need it: a block of the band is whole for
    // most, the diagonal block and the band's first (which a later q block no longer sees) are not.
    // The pattern is per block, so each of the thread's two rows sees the whole half or none of it:
    // tested once per row, not per element (the element test costs ~400 branchy instructions).
    struct BlockRow {
      bool visible;
      __device__ bool allowed(int, int) const { return visible; }
    };
    __device__ __forceinline__ void half_logits(float (&sh)[kBoxRows / 8][4], int n0) {
      const int i0 = b.m0 + cw * 64, i1 = i0 + 64;  // rows past the item's are not stored
      const bool need_mask =
          mask.tile_needs_mask(i0, i1, n0, n0 + kBoxRows, b.sk) ||
          !Sparse::tile_full(i0 + mask.shift, i1 - 1 + mask.shift, n0, n0 + kBoxRows, b.head, b.head);
      const BlockRow block[2] = {{rows[0].allowed(tok[0] + mask.shift, n0)},
                                 {rows[1].allowed(tok[1] + mask.shift, n0)}};
      apply_logits(sh, score, alibi, mask, block, tok, n0, col0, b.sk, need_mask);
    }

    // Tile 0: its Q K^T alone, then its softmax.
    template <int NQ>
    __device__ __forceinline__ void first(int tile) {
      auto& sq = cols<NQ>(s);
      wait_full(&sm.bar->k_full[stage(0)], phase(0));
      wgmma_fence();
      issue_qk<NQ>(sq, qf, sm, cw, stage(0));
      wgmma_commit();
      wgmma_wait<0>();
      fence_operand(sq);
      int8.scale(s, sm.key_scales(stage(0)), col0);
      release(&sm.bar->k_empty[stage(0)]);
      logits<NQ>(sq, tile);
      int8.softmax_update(softmax, sq, rescale, typename OnlineSoftmax<2>::NoHook{});
      to_operand<NQ>(sq, ksteps<NQ>(pf));
      st.begin();
    }

    // Tile i: Q K_i^T is issued before P_{i-1} V_{i-1}, so the softmax of tile i runs while the
    // second product is still on the tensor cores.
    template <int NQ, int NP>
    __device__ __forceinline__ void step(int i, int tile) {
      auto& sq = cols<NQ>(s);
      const int st = stage(i), prev = stage(i - 1);
      token_wait(cw);
      this->st.mark(kPhaseToken);
      wait_full(&sm.bar->k_full[st], phase(i));
      this->st.mark(kPhaseKFull);
      fence_operand(o);
      wgmma_fence();
      issue_qk<NQ>(sq, qf, sm, cw, st);
      wgmma_commit();
      wait_full(&sm.bar->v_full[prev], phase(i - 1));
      issue_pv<NP>(o, ksteps<NP>(pf), sm, prev);
      wgmma_commit();
      token_pass(cw);
      this->st.mark(kPhaseIssue);
      wgmma_wait<1>();
      fence_operand(sq);
      this->st.mark(kPhaseQkWait);
      int8.scale(s, sm.key_scales(st), col0);
      this->st.mark(kPhaseScale);
      release(&sm.bar->k_empty[st]);
      logits<NQ>(sq, tile);
      this->st.mark(kPhaseLogits);
      int8.softmax_update(softmax, sq, rescale, MaxDone{this->st});
      this->st.mark(kPhaseExp);
      wgmma_wait<0>();
      fence_operand(o);
      release(&sm.bar->v_empty[prev]);
      this->st.mark(kPhasePvWait);
      OnlineSoftmax<2>::rescale_o(o, rescale);
      this->st.mark(kPhaseRescale);
      to_operand<NQ>(sq, ksteps<NQ>(pf));
      this->st.mark(kPhasePack);
      this->st.step_done();
    }

    // The last tile's P V.
    template <int NP>
    __device__ __forceinline__ void last_pv(int last) {
      wgmma_fence();
      issue_pv<NP>(o, ksteps<NP>(pf), sm, last);
      wgmma_commit();
    }

    // The same at the widths of tile (and prev): one branch per pair of widths.
    __device__ __forceinline__ void first_at(int tile) {
      if (tile_wide(tile)) first<BN>(tile);
      else first<kBoxRows>(tile);
    }
    __device__ __forceinline__ void step_at(int i, int tile, int prev) {
      if (tile_wide(tile)) {
        if (tile_wide(prev)) step<BN, BN>(i, tile);
        else step<BN, kBoxRows>(i, tile);
      } else {
        if (tile_wide(prev)) step<kBoxRows, BN>(i, tile);
        else step<kBoxRows, kBoxRows>(i, tile);
      }
    }
    __device__ __forceinline__ void last_pv_at(int last, int tile) {
      if (tile_wide(tile)) last_pv<BN>(last);
      else last_pv<kBoxRows>(last);
    }
  };

  __device__ static void compute(const AttentionParams& p, const Block& b, const Smem& sm, int cw,
                                 const Progress& pr, ChainStamps& st) {
    Consumer c(p, b, sm, cw, pr, st);
    if (kPingpong && cw == 0) named_barrier_arrive(kTokenBarrier, 2 * kWarpgroupThreads);  // the first turn
    mbar_wait(&sm.bar->q_full, pr.items & 1);
    if constexpr (kQInRegisters) {
      load_q_frags(c.qf, sm, c.row0, c.col0);
      __syncwarp();
      c.q_read();
    }

    if (b.n_tiles > 0) {
      int tile = tile_at(b, 0, 0);
      c.first_at(tile);
      for (int i = 1; i < b.n_tiles; ++i) {
        const int prev = tile;
        tile = tile_at(b, i, tile);
        c.step_at(i, tile, prev);
      }

      if constexpr (!kQInRegisters) c.q_read();
      const int last = c.stage(b.n_tiles - 1);
      if (tail_tile(b, tile)) mbar_wait(sm.v_tail(), 0);
      else wait_full(&sm.bar->v_full[last], c.phase(b.n_tiles - 1));
      fence_operand(c.o);
      c.last_pv_at(last, tile);
      wgmma_wait<0>();
      fence_operand(c.o);
      release(&sm.bar->v_empty[last]);
    } else if constexpr (!kQInRegisters) {
      c.q_read();
    }
    // The first warpgroup's opening turn leaves one pass from the last warpgroup unclaimed.
    if (kPingpong && cw == 0) named_barrier_sync(kTokenBarrier, 2 * kWarpgroupThreads);

    float inv_sum[2], lse2[2];
    if constexpr (T::kSinks) {
      const float sink = p.sinks[b.head] * kLog2e;
      const float sink2[2] = {sink, sink};
      c.softmax.template finish<true>(inv_sum, lse2, sink2);
    } else {
      c.softmax.finish(inv_sum, lse2);
    }
    store(p, b, sm, cw, c.row0, c.col0, c.o, inv_sum, lse2);
  }

  // ---- epilogue -----------------------------------------------------------------------------

  __device__ static void store(const AttentionParams& p, const Block& b, const Smem& sm, int cw, int row0, int col0,
                               const float (&o)[DVN / 8][4], const float (&inv_sum)[2], const float (&lse2)[2]) {
    const int lane = threadIdx.x % 32;
    // Every warp's last Q K^T has read Q (persistent: every thread has stored the last item's rows).
    named_barrier_sync(kWarpgroupBarrier + cw, kWarpgroupThreads);
#pragma unroll
    for (int i = 0; i < DVN / 8; ++i) {  // columns past Dv land in the tile's padding
      const float2 vs = Int8::template v_scale<DV>(p, b.kv_head, i * 8 + col0);  // int8_qkv; else 1
      *reinterpret_cast<u32*>(sm.o + OTile::offset(row0, i * 8 + col0)) =
          pack2<E>(o[i][0] * inv_sum[0] * vs.x, o[i][1] * inv_sum[0] * vs.y);
      *reinterpret_cast<u32*>(sm.o + OTile::offset(row0 + 8, i * 8 + col0)) =
          pack2<E>(o[i][2] * inv_sum[1] * vs.x, o[i][3] * inv_sum[1] * vs.y);
    }
    if constexpr (T::kLse != LseOut::none) {
      if (lane % 4 == 0) {
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const int row = row0 + r * 8;
          if (row < b.rows_here)
            p.lse[(b.q_begin + b.m0 + row) * p.lse_row_stride + b.head * p.lse_head_stride] =
                lse_out<T::kLse>(lse2[r]);
        }
      }
    }
    named_barrier_sync(kWarpgroupBarrier + cw, kWarpgroupThreads);

    constexpr int kChunks = DV / 8;  // 16-byte pieces per row
    const int tid = threadIdx.x % kWarpgroupThreads;
    u16* out = static_cast<u16*>(p.o) + b.head * p.o_head_stride;
#pragma unroll
    for (int i = tid; i < 64 * kChunks; i += kWarpgroupThreads) {
      const int row = cw * 64 + i / kChunks, chunk = i % kChunks;
      if (row < b.rows_here)
        *reinterpret_cast<uint4*>(out + (b.q_begin + b.m0 + row) * p.o_row_stride + chunk * 8) =
            *reinterpret_cast<const uint4*>(sm.o + OTile::offset(row, chunk * 8));
    }
  }
};

}  // namespace attnc
