// One LSE correction call of decode context parallelism (attention-semantics.md §9; kernel
// semantics and the chunked output layout in LseCorrectParams, templates/attnc/params/ops_params.h):
// checked and translated into the kernel's params and launch shape. Every bad call is refused with
// BadCall before any launch.
#pragma once

#include <cuda.h>

#include <optional>

#include "attnc/params/ops_params.h"
#include "generator/plan/plan.h"
#include "runtime/launch/attention_args.h"

namespace attnc {

class Kernel;

// vLLM's cp_lse_ag_out_rs between its all-gather and its reduce-scatter: `partial` is this rank's
// attention over its shard of the keys [num_tokens, num_heads, head_size] (the spec's dtype),
// `lses` the all-gathered LSEs of the N ranks (fp32). Writes the rescaled output and, optionally,
// the LSE over all ranks' keys.
struct LseCorrectArgs {
  void* output = nullptr;  // may be `partial` itself (same strides, heads_per_chunk = num_heads)
  const void* partial = nullptr;
  const float* lses = nullptr;
  float* output_lse = nullptr;  // optional

  int num_tokens = 0;
  int num_heads = 0;   // 0: the spec's num_q_heads
  int head_size = 0;   // 0: the spec's head_dim_v; a multiple of 8 (MLA: or kv_lora_rank, decode's V)
  int world_size = 0;  // N >= 1
  int rank = 0;        // 0 <= rank < N: whose partial this is
  // Output head h goes to chunk h / heads_per_chunk (the reduce-scatter's rank); 0: num_heads.
  int heads_per_chunk = 0;

  // Element strides; 0 = contiguous: output [chunks, num_tokens, heads_per_chunk, head_size],
  // partial [num_tokens, num_heads, head_size].
  long long output_row_stride = 0, output_head_stride = 0, output_chunk_stride = 0;
  long long partial_row_stride = 0, partial_head_stride = 0;
  // Float strides (rank, token, head), given together; all 0 = [N, num_tokens, num_heads].
  long long lses_rank_stride = 0, lses_token_stride = 0, lses_head_stride = 0;
  // Float strides (token, head), given together; both 0 = [num_heads, num_tokens] (as merge's).
  long long output_lse_token_stride = 0, output_lse_head_stride = 0;

  std::optional<LseBase> lse_base;  // unset: the spec's lse.base
};

struct LseCorrectLaunch {
  LseCorrectParams params{};
  GridDims grid, block;
  bool empty = false;  // num_tokens == 0: nothing to launch
};

LseCorrectLaunch prepare_lse_correct(const KernelPlan&, const LseCorrectArgs&);  // throws BadCall

// Enqueues the correction on `stream` (nothing when the call is empty); never synchronises.
void launch_lse_correct(const Kernel&, const LseCorrectLaunch&, CUstream stream);

}  // namespace attnc
