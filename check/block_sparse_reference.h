// The block-sparse pattern (attention-semantics.md §7.4) written from the seed's formulas, for the
// float64 reference and the tests of the kernels' in-kernel pattern (features/block_sparse.cuh).
// A q block of q_block_size tokens sees the union of its sparse rows' patterns (the seed merges
// layout rows by summing); the token causal mask applies on top.
#pragma once

#include "generator/spec/spec.h"

namespace attnc {

struct SparsePattern {
  bool enabled = false;
  int block_size = 64, local_blocks = 16, vert_stride = 8;
  int head_sliding_step = 1;  // negative: slide along KV heads
  int head_begin = 0;         // global index of this rank's first q head
  int q_block_size = 64;
  int group = 1;              // q heads per kv head
};

SparsePattern sparse_pattern(const Spec&);  // enabled only when the spec has block_sparse

// Whether the query at position `q_pos` of this rank's q head `head` sees the key at `k_pos`
// (positions in one sequence, bottom-right aligned; causal included).
bool sparse_visible(const SparsePattern&, long q_pos, long k_pos, int head);

// Keys in [0, k_end) that the query at q_pos of `head` sees (k_end <= q_pos + 1: all of them causal).
long sparse_visible_keys(const SparsePattern&, long q_pos, long k_end, int head);

}  // namespace attnc
