// Split-KV: the one home of the split count, the workspace it needs and where the partial results
// live in it. The dispatcher, the tuner and the check harness each decide a call's count once with
// decide_num_splits(); prepare_attention() takes that decided count (>= 1) and lays the workspace
// out with split_partials(). Host-only; the device side of the layout is AttentionParams' comment.
#pragma once

#include <cstddef>
#include <cstdint>

#include "generator/plan/plan.h"

namespace attnc {

// The sizes of one call the decision reads.
struct SplitShape {
  int batch = 0;
  int max_seqlen_q = 0;  // query tokens per request (1 for plain decode)
  int max_seqlen_k = 0;  // 0: unknown, no split
  int total_q = 0;       // rows of q; the partials are indexed by it
  int num_sms = 0;       // the device's SM count; 0: unknown, no split
  long long seqlen_k_sum = 0;  // the requests' KV lengths summed, when known (0: batch * max_seqlen_k)
};

// Row blocks of a call (the grid's x): query rows (times the group when GQA is packed) over block_m.
long long row_blocks(const KernelPlan&, int max_seqlen_q);

// decode_bw: the fewest splits the time model (decode_model.h) predicts within 1 % of the best.
// Otherwise FlashAttention-2's wave-efficiency heuristic (attention-semantics.md §8) over this
// kernel's tiles: 1 when the (request, head, row block) tiles already fill the SMs.
int choose_num_splits(const KernelPlan&, int batch, int max_seqlen_q, int max_seqlen_k, int num_sms);
// The same for a call shape; decode_bw's model also reads call.seqlen_k_sum (a ragged batch).
int choose_num_splits(const KernelPlan&, const SplitShape& call);

// The most parts a call over max_seqlen_k keys can use: one per KV tile (a part past the last tile
// would be empty), at most kMaxSplits; 1 for a kernel without split-KV or with max_seqlen_k unknown.
// A workspace for this many parts holds every count a caller may force for such a call.
int max_useful_splits(const KernelPlan&, int max_seqlen_k);

// Bytes of workspace a call with num_splits parts needs (0 for num_splits <= 1).
size_t attention_workspace_bytes(const KernelPlan&, int total_q, int num_splits);

// The split count of one call, >= 1:
// - 1 for a kernel without split-KV, unless `forced` asks for more (prepare_attention refuses that
//   with a message naming the kernel);
// - `forced` when not 0, as asked (out of range, or a workspace too small for it, is the caller's error, named by
//   prepare_attention), except that parts past the last KV tile are dropped (max_useful_splits)
//   when `workspace_bytes` cannot hold them: they would be empty, so the result is the same;
// - else `preferred` when > 0 (a tuned count), else the heuristic, lowered to what
//   `workspace_bytes` holds (1 at worst).
int decide_num_splits(const KernelPlan&, const SplitShape&, int forced, int preferred = 0,
                      size_t workspace_bytes = SIZE_MAX);

// Where the partials of a split call live: o_partial [num_splits, total_q, Hq, Dv] fp32 from the
// workspace's start, then lse_partial [num_splits, total_q, Hq] fp32 (base 2).
struct SplitPartials {
  float* o = nullptr;
  float* lse = nullptr;
};
SplitPartials split_partials(const KernelPlan&, void* workspace, int total_q, int num_splits);

}  // namespace attnc
