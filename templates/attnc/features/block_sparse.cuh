// Local + vertical-stride block sparsity (attention-semantics.md §7.4, docs/conventions.md),
// computed from compile-time parameters, never from a mask in memory. Positions are bottom-right
// aligned like Mask's: query i is at position i + sk - sq, key j at j; block = position / BS.
//
//   visible(pos, j, h) = j <= pos (the causal mask, Mask's job)
//                        and (kb > qrow(pos) - LOCAL  [LOCAL > 0]   kb = j / BS
//                             or (kb + offset(h)) % VS == 0)
//
// qrow(pos) is the first sparse row of the query's q block (QBS tokens, a multiple of BS): the rows
// of one q block share the union of their patterns, as the seed's merged layout rows do. offset(h)
// is global_q_head * STEP + 1 for STEP >= 0, global_kv_head * -STEP + 1 for STEP < 0 (sliding on KV
// heads), the same rule in prefill and decode. Families read a traits' `Sparse` (SparseOf<T>):
// LocalStrided<...>, or DenseKeys where the spec has no block_sparse, which compiles away.
#pragma once

namespace attnc {

// No sparsity: every tile is visible and full, every key allowed.
struct DenseKeys {
  static constexpr bool kEnabled = false;
  struct Row {
    Row() = default;
    __device__ explicit Row(int) {}
    __device__ bool allowed(int, int) const { return true; }
  };
  __device__ static bool tile_visible(int, int, int, int, int, int) { return true; }
  __device__ static bool tile_full(int, int, int, int, int, int) { return true; }
};

template <int BS, int LOCAL, int VS, int STEP, int HEAD_BEGIN, int QBS, int G>
struct LocalStrided {
  static_assert(BS > 0 && LOCAL >= 0 && VS >= 1 && QBS % BS == 0 && G >= 1, "block_sparse parameters");
  static constexpr bool kEnabled = true;
  static constexpr int kBlock = BS;

  // Vertical offset of this rank's q head h.
  __device__ static int offset(int h) {
    return STEP >= 0 ? (HEAD_BEGIN + h) * STEP + 1 : (HEAD_BEGIN / G + h / G) * -STEP + 1;
  }
  __device__ static int q_row(int pos) { return pos / QBS * (QBS / BS); }
  __device__ static bool vertical(int kb, int off) { return (kb + off) % VS == 0; }
  __device__ static bool block_allowed(int pos, int kb, int off) {
    return (LOCAL > 0 && kb > q_row(pos) - LOCAL) || vertical(kb, off);
  }
  // The first block >= kb that is vertical for `off`.
  __device__ static int next_vertical_block(int kb, int off) {
    const int residue = (VS - off % VS) % VS;  // kb + off == 0 (mod VS)
    return kb + ((residue - kb % VS) % VS + VS) % VS;
  }

  // The pattern for one row's q head (element masking; causal is Mask's).
  struct Row {
    int off;
    Row() = default;
    __device__ explicit Row(int h) : off(offset(h)) {}
    __device__ bool allowed(int pos, int j) const { return block_allowed(pos, j / BS, off); }
  };

  // Whether any query at positions [p0, p1] of q heads [h0, h1] sees a key of [j0, j1): a tile that
  // is not is skipped, neither loaded nor computed. May say yes for a tile that holds nothing
  // visible (the element mask then removes it), never no for one that does.
  __device__ static bool tile_visible(int p0, int p1, int j0, int j1, int h0, int h1) {
    p0 = max(p0, 0);
    const int kb0 = j0 / BS, kb1 = min(j1 - 1, p1) / BS;
    if (kb1 < kb0 || p1 < 0) return false;
    if (LOCAL > 0 && kb1 > q_row(p0) - LOCAL) return true;
    for (int h = h0; h <= h1; ++h)
      if (next_vertical_block(kb0, offset(h)) <= kb1) return true;
    return false;
  }

  // Whether every query at [p0, p1] of heads [h0, h1] sees every key of [j0, j1) the causal mask
  // lets through (then only Mask's test is needed).
  __device__ static bool tile_full(int p0, int p1, int j0, int j1, int h0, int h1) {
    const int kb0 = j0 / BS, kb1 = (j1 - 1) / BS;
    if (LOCAL > 0 && kb0 > q_row(max(p1, 0)) - LOCAL) return true;
    if (kb0 != kb1) return false;
    for (int h = h0; h <= h1; ++h)
      if (!vertical(kb0, offset(h))) return false;
    return true;
  }

  // The key tiles of BN keys that queries at [p0, p1] of one q head visit, in increasing order:
  // the tiles below the local band that hold a vertical block (one the causal mask lets through),
  // then every tile of the band, within the mask's tiles [begin, end). The prefill producer iterates this list: skipped tiles cost
  // nothing. first(); next(t); count() of the whole list.
  template <int BN>
  struct Tiles {
    int begin, end, band, off, last_block;  // band: first tile of the local band (>= end: none)

    Tiles() = default;
    __device__ Tiles(int p0, int p1, int tile_begin, int tile_end, int h)
        : begin(tile_begin), end(tile_end), band(tile_end), off(offset(h)), last_block(p1 / BS) {
      if (LOCAL > 0) band = min(band, max(0, q_row(max(p0, 0)) - LOCAL + 1) * BS / BN);
    }
    __device__ int from(int t) const {
      if (t >= band) return t;
      const int kb = next_vertical_block(t * BN / BS, off);
      return kb > last_block ? band : min(band, max(t, kb * BS / BN));
    }
    __device__ int first() const { return from(begin); }
    __device__ int next(int t) const { return from(t + 1); }
    __device__ int count() const {
      int n = end - max(band, begin);
      n = max(n, 0);
      for (int t = first(); t < min(band, end); t = next(t)) ++n;
      return n;
    }
  };

  // Two tile widths (prefill_sm90's mixed_tiles, docs/kernels-block-sparse.md): the vertical blocks
  // below the local band as narrow tiles of one block (BS keys: a wide tile would compute a block
  // nobody sees), then the band [band, end) as wide tiles of two blocks, so most of a q tile's work
  // runs on the wider, faster product. An odd band starts with one narrow tile: its first block,
  // which the later q blocks of a tall q tile no longer see. begin, end: the mask's range in
  // blocks. A tile is coded block * 2 + wide; first(), next(t), count() as Tiles'.
  struct MixedTiles {
    int begin, end, band, off, last_block;

    MixedTiles() = default;
    __device__ MixedTiles(int p0, int p1, int block_begin, int block_end, int h)
        : begin(block_begin), end(block_end), band(block_end), off(offset(h)), last_block(p1 / BS) {
      if (LOCAL > 0) band = min(band, max(0, q_row(max(p0, 0)) - LOCAL + 1));
      band = max(band, begin);
    }
    __device__ static int block(int t) { return t >> 1; }
    __device__ static bool wide(int t) { return t & 1; }
    __device__ static int keys(int t) { return wide(t) ? 2 * BS : BS; }
    // The first tile starting at block kb or later (2 * end: none).
    __device__ int from(int kb) const {
      if (kb < band) {
        const int v = next_vertical_block(kb, off);
        if (v < band && v <= last_block) return 2 * v;
        kb = band;
      }
      if (kb >= end) return 2 * end;
      return 2 * kb + (kb > band || (end - band) % 2 == 0 ? 1 : 0);
    }
    __device__ int first() const { return from(begin); }
    __device__ int next(int t) const { return from(block(t) + (wide(t) ? 2 : 1)); }
    __device__ int count() const {
      const int n = max(end - band, 0);
      int c = n / 2 + n % 2;
      for (int t = first(); block(t) < band; t = next(t)) ++c;
      return c;
    }
  };

  // Paired tiles (prefill_sm90's paired_tiles, docs/kernels-block-sparse.md): every tile is two
  // consecutive entries of the visible blocks' list (Tiles<BS>: the vertical blocks, then the
  // band), adjacent or not, so every tile has one width (2 * BS keys, two TMA boxes) and a vertical
  // block costs half a tile. An odd list's last tile has one block: its second half repeats the
  // first (loaded, then masked whole). A tile is coded first * (VS + 1) + (second - first): the
  // list's consecutive blocks are at most VS apart (the next vertical block, or the band's first,
  // which starts at or before the next vertical one); 0 marks the single block.
  struct PairedTiles {
    static constexpr int kCode = VS + 1;
    Tiles<BS> blocks;

    PairedTiles() = default;
    __device__ PairedTiles(int p0, int p1, int block_begin, int block_end, int h)
        : blocks(p0, p1, block_begin, block_end, h) {}
    __device__ static int first_block(int t) { return t / kCode; }
    __device__ static int second_block(int t) { return t / kCode + t % kCode; }
    __device__ static bool single(int t) { return t % kCode == 0; }
    // The tile starting at block kb of the list.
    __device__ int pair_at(int kb) const {
      const int second = blocks.next(kb);
      return kb * kCode + (second < blocks.end ? second - kb : 0);
    }
    __device__ int first() const { return pair_at(blocks.first()); }
    __device__ int next(int t) const { return pair_at(blocks.next(second_block(t))); }
    __device__ int count() const { return (blocks.count() + 1) / 2; }
  };
};

// The tiles of a dense block: [begin, end) in order.
template <int BN>
struct DenseTiles {
  int begin, end;
  __device__ int first() const { return begin; }
  __device__ int next(int t) const { return t + 1; }
  __device__ int count() const { return end - begin; }
};

// Traits without a `Sparse` member are dense.
template <class>
struct SparseVoid {
  using type = void;
};
template <class T, class = void>
struct SparseOf {
  using type = DenseKeys;
};
template <class T>
struct SparseOf<T, typename SparseVoid<typename T::Sparse>::type> {
  using type = typename T::Sparse;
};

}  // namespace attnc
