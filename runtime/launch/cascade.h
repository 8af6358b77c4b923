// Cascade attention (attention-semantics.md §10): when every request of a batch shares the first
// common_prefix_len tokens of its KV (the same pages at the start of each block-table row), the
// shared pages are read once for the whole batch instead of once per request:
//   1. prefix pass: all num_tokens queries as ONE sequence, non-causal, over the shared pages
//      (block_table row 0, prefix_kv_lens = [common_prefix_len]);
//   2. suffix pass: per request, with the spec's mask (causal for decoders), over the rest of its
//      KV (the column-offset view block_table + num_common_kv_blocks, same row stride,
//      suffix_kv_lens = seq_lens - common_prefix_len);
//   3. merge_attn_states of the two (LSE [Hq, num_tokens], base e) into the caller's output.
// All three run on the caller's stream with the caller's workspace; nothing is allocated, nothing
// synchronised, no device memory read, so a call can be captured in a CUDA graph.
//
// Exact for a causal mask because every query token of a request lies after the shared prefix
// (suffix_kv_lens[b] >= query_len[b], checked when host metadata is given). Refused: ALiBi (its
// bias depends on positions the prefix pass does not know), sliding windows, a prefix that is 0
// or not whole pages. Sinks join the normaliser once: the suffix pass applies them, the prefix
// pass does not, and the merge then sums both normalisers with the sink counted once.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <string>

#include "generator/plan/plan.h"
#include "runtime/launch/attention_args.h"
#include "runtime/launch/merge_args.h"

namespace attnc {

class Kernel;

enum class CascadePass { prefix, suffix };

// The spec each pass's prefill_paged kernel is planned from: only the prefill kernel, LSE
// [Hq, total_q] base e; the prefix pass without mask and sinks. Throws BadCall for what cascade
// cannot do (ALiBi, sliding window).
Spec cascade_pass_spec(const Spec&, CascadePass);

struct CascadePlans {
  KernelPlan prefix, suffix, merge;
};
// Default configs for `arch`; throws BadCall as above, NotSupportedYet / BadConfig from the planner.
CascadePlans plan_cascade(const Spec&, const std::string& arch);

// The loaded kernels of the three plans (not owned; see runtime/launch/cascade_program.h).
struct CascadeKernels {
  const Kernel* prefix = nullptr;
  const Kernel* suffix = nullptr;
  const Kernel* merge = nullptr;
};

// Host copies of the metadata, for content checks before launch (optional).
struct CascadeHostMetadata {
  const int* cu_query_lens = nullptr;   // [num_reqs + 1]
  const int* suffix_kv_lens = nullptr;  // [num_reqs]
  const int* block_table = nullptr;     // [num_reqs, block_table_stride]
};

// vLLM's cascade metadata (FlashAttentionMetadata), device pointers unless noted.
struct CascadeArgs {
  const void* query = nullptr;        // [num_tokens, Hq, D]
  const void* key_cache = nullptr;    // the K plane of the paged cache
  const void* value_cache = nullptr;  // the V plane
  void* output = nullptr;             // [num_tokens, Hq, Dv]
  long long q_row_stride = 0, q_head_stride = 0;  // 0: contiguous
  long long o_row_stride = 0, o_head_stride = 0;
  // Paged cache strides in elements (required): between positions of a page, heads, pages.
  long long k_row_stride = 0, k_head_stride = 0, k_block_stride = 0;
  long long v_row_stride = 0, v_head_stride = 0, v_block_stride = 0;
  int page_size = 0;
  int num_blocks = 0;                 // pages in the cache

  int num_tokens = 0;                 // num_actual_tokens: rows of query and output
  int num_reqs = 0;
  const int* cu_query_lens = nullptr;         // [num_reqs + 1], ends at num_tokens
  int max_query_len = 0;                      // host
  const int* cu_prefix_query_lens = nullptr;  // [2] = {0, num_tokens}
  const int* prefix_kv_lens = nullptr;        // [1] = {common_prefix_len}
  const int* suffix_kv_lens = nullptr;        // [num_reqs] = seq_lens - common_prefix_len
  int common_prefix_len = 0;                  // host; a positive multiple of page_size
  int max_kv_len = 0;                         // host, optional (0: unknown): the longest seq_len
  const int* block_table = nullptr;           // [num_reqs, block_table_stride]
  long long block_table_stride = 0;           // ints between rows
  int max_blocks_per_seq = 0;                 // usable columns of each row

  float softmax_scale = 0.f;  // 0 = 1/sqrt(head_dim)
  float softcap = -1.f;       // < 0: the spec's value
  const float* sinks = nullptr;  // [Hq] when the spec has sinks

  void* workspace = nullptr;  // >= cascade_workspace_bytes(plans, num_tokens), 16-byte aligned
  size_t workspace_bytes = 0;

  const CascadeHostMetadata* host = nullptr;
};

// Bytes of workspace for the two partial outputs and LSEs.
size_t cascade_workspace_bytes(const CascadePlans&, int num_tokens);

struct CascadeLaunch {
  AttentionLaunch prefix, suffix;
  MergeLaunch merge;
};

CascadeLaunch prepare_cascade(const CascadePlans&, const CascadeArgs&);  // throws BadCall
void launch_cascade(const CascadeKernels&, const CascadeLaunch&, CUstream stream);

// prepare_cascade + launch_cascade.
void cascade_attention(const CascadePlans&, const CascadeKernels&, const CascadeArgs&, CUstream stream);

}  // namespace attnc
