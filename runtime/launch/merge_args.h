// One merge_attn_states call (attention-semantics.md §1.9; kernel semantics in MergeParams,
// templates/attnc/params/ops_params.h): arguments in vLLM's order, checked and translated into the
// kernel's params and launch shape. Every bad call is refused with BadCall before any launch.
#pragma once

#include <cuda.h>

#include <optional>

#include "attnc/params/ops_params.h"
#include "generator/plan/plan.h"
#include "runtime/launch/attention_args.h"

namespace attnc {

class Kernel;

// vLLM: merge_attn_states(output, prefix_output, prefix_lse, suffix_output, suffix_lse,
// output_lse=None). Outputs [num_tokens, num_heads, head_size] in the spec's dtype; LSEs fp32.
struct MergeArgs {
  void* output = nullptr;
  const void* prefix_output = nullptr;
  const float* prefix_lse = nullptr;
  const void* suffix_output = nullptr;
  const float* suffix_lse = nullptr;
  float* output_lse = nullptr;  // optional

  int num_tokens = 0;
  int num_heads = 0;   // 0: the spec's num_q_heads
  int head_size = 0;   // 0: the spec's head_dim_v; a multiple of 8 (MLA: or kv_lora_rank, decode's V)

  // Element strides; 0 = contiguous [num_tokens, num_heads, head_size].
  long long output_row_stride = 0, output_head_stride = 0;
  long long prefix_row_stride = 0, prefix_head_stride = 0;
  long long suffix_row_stride = 0, suffix_head_stride = 0;
  // Float strides, token and head, given together; both 0 = vLLM's [num_heads, num_tokens].
  long long prefix_lse_token_stride = 0, prefix_lse_head_stride = 0;
  long long suffix_lse_token_stride = 0, suffix_lse_head_stride = 0;
  long long output_lse_token_stride = 0, output_lse_head_stride = 0;

  // Base of all three LSEs: e (vLLM, FlashAttention) or 2 (FlashInfer, ixformer). Unset: the
  // spec's lse.base.
  std::optional<LseBase> lse_base;
};

struct MergeLaunch {
  MergeParams params{};
  GridDims grid, block;
  bool empty = false;  // num_tokens == 0: nothing to launch
};

MergeLaunch prepare_merge(const KernelPlan&, const MergeArgs&);  // throws BadCall

// Enqueues the merge on `stream` (nothing when the call is empty); never synchronises.
void launch_merge(const Kernel&, const MergeLaunch&, CUstream stream);

}  // namespace attnc
