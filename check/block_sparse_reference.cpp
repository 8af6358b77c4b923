#include "check/block_sparse_reference.h"

#include <algorithm>

namespace attnc {

SparsePattern sparse_pattern(const Spec& s) {
  SparsePattern p;
  const BlockSparseSpec& b = s.sparse;
  p.enabled = b.enabled;
  p.block_size = b.block_size;
  p.local_blocks = b.local_blocks;
  p.vert_stride = b.vert_stride;
  p.head_sliding_step = b.head_sliding_step;
  p.head_begin = b.active_head_begin;
  p.q_block_size = b.q_block_size > 0 ? b.q_block_size : b.block_size;
  p.group = s.group_size();
  return p;
}

namespace {

// The seed's block rule for one sparse row qb (prefill's get_sparse_attn_mask; decode's
// attention_kernels.cuh rule with q_bs = qb): offset = head * step + 1, head global; a negative
// step slides along the global kv head.
bool row_allows(const SparsePattern& p, long qb, long kb, int head) {
  const long global = p.head_sliding_step >= 0 ? p.head_begin + head : (p.head_begin + head) / p.group;
  const long offset = global * std::abs(p.head_sliding_step) + 1;
  return qb >= kb && (qb - kb < p.local_blocks || (kb + offset) % p.vert_stride == 0);
}

}  // namespace

bool sparse_visible(const SparsePattern& p, long q_pos, long k_pos, int head) {
  if (k_pos > q_pos || k_pos < 0) return false;
  if (!p.enabled) return true;
  const long rows = p.q_block_size / p.block_size, first = q_pos / p.q_block_size * rows;
  const long kb = k_pos / p.block_size;
  for (long r = first; r < first + rows; ++r)
    if (row_allows(p, r, kb, head)) return true;
  return false;
}

long sparse_visible_keys(const SparsePattern& p, long q_pos, long k_end, int head) {
  k_end = std::min(k_end, q_pos + 1);
  if (k_end <= 0) return 0;
  if (!p.enabled) return k_end;
  long n = 0;
  for (long kb = 0; kb * p.block_size < k_end; ++kb)  // a block is visible whole or not at all
    if (sparse_visible(p, q_pos, kb * p.block_size, head))
      n += std::min<long>(k_end, (kb + 1) * p.block_size) - kb * p.block_size;
  return n;
}

}  // namespace attnc
