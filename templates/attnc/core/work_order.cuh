// Which (q tile, head, request) items a prefill block computes, and in what order.
//
// Items are numbered w = 0 .. count-1. Causal items are numbered longest first: the q tiles from
// the last (which see the most keys) down, and inside one q tile every head and request, so the
// items running side by side at any moment cost about the same and the short ones come last
// (a (head, q tile) order runs each head's longest tile late: ~5 % idle tail on Phi-3-small's
// pattern, docs/kernels-block-sparse.md). Other masks keep the q tiles of one head together.
//
// A one-item-per-block grid of (tiles, heads, requests) takes item w = its linear block index. A
// persistent grid of G blocks takes rounds: block c computes item r * G + c in even rounds and
// r * G + G - 1 - c in odd ones (the snake evens out the longest-first sums: 98.5 % of the ideal
// balance in the model, where plain striding gives 93 %).
#pragma once

namespace attnc {

struct WorkItem {
  int m_block, head, seq;
};

template <bool kLongestFirst>
struct WorkOrder {
  int tiles, heads, seqs;  // q tiles per request (the longest request's), heads, requests

  __device__ int count() const { return tiles * heads * seqs; }

  __device__ WorkItem at(int w) const {
    WorkItem it;
    if constexpr (kLongestFirst) {
      it.head = w % heads;
      w /= heads;
      it.seq = w % seqs;
      it.m_block = tiles - 1 - w / seqs;
    } else {
      it.m_block = w % tiles;
      w /= tiles;
      it.head = w % heads;
      it.seq = w / heads;
    }
    return it;
  }

  // Item of round r for block c of a grid of g blocks; >= count() when the block has no more.
  __device__ static int persistent_item(int r, int c, int g) { return r * g + (r % 2 ? g - 1 - c : c); }
};

// The block's index in a grid read as one line (x fastest: the order the hardware starts them).
__device__ __forceinline__ int linear_block_index() {
  return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
}
__device__ __forceinline__ int grid_blocks() { return gridDim.x * gridDim.y * gridDim.z; }

}  // namespace attnc
