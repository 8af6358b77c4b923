// One attention call's arguments (device pointers, lengths, page tables, runtime scalars) and their
// translation into the kernel's AttentionParams and launch shape. Serves prefill (contiguous or
// paged K/V) and decode (paged, packed GQA, split-KV). Everything is checked before any launch;
// errors name the argument, what it got and what it needs. Nothing here reads device memory: checks
// of page-table contents use the optional host mirrors in AttentionHostMetadata.
#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>

#include "attnc/params/params.h"
#include "attnc/params/tensor_maps.h"
#include "generator/plan/plan.h"
#include "generator/split_kv.h"
#include "runtime/driver/dim3.h"

namespace attnc {

class BadCall : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Host copies of the page-table metadata the device pointers hold. When given, the call is
// checked against them before launch: every page a request uses lies inside the cache, every
// request's KV length fits its row of the block table, indptr is non-decreasing, last_page_len is
// in [1, page_size] for a non-empty request.
struct AttentionHostMetadata {
  const int* cu_seqlens_q = nullptr;      // [batch + 1]; null when the call has none
  const int* cu_seqlens_k = nullptr;      // [batch + 1]
  const int* seqused_k = nullptr;         // [batch]
  const int* block_table = nullptr;       // [batch, block_table_stride]
  const int* kv_indptr = nullptr;         // [batch + 1]
  const int* kv_indices = nullptr;        // [num_kv_indices]
  int num_kv_indices = 0;
  const int* kv_last_page_len = nullptr;  // [batch]
};

struct AttentionArgs {
  // What the caller's tensors are, when it knows (bindings fill these from tensor metadata): each
  // one given must match what the kernel was compiled for. 0 / unset = not stated.
  std::optional<DType> dtype;  // of q, k, v and o
  int num_q_heads = 0, num_kv_heads = 0, head_dim = 0, head_dim_v = 0;

  const void* q = nullptr;   // [total_q, Hq, D]
  const void* k = nullptr;   // contiguous: [total_k, Hkv, D]; paged: the K plane of the cache
  const void* v = nullptr;   // contiguous: [total_k, Hkv, Dv]; paged: the V plane
  void* o = nullptr;         // [total_q, Hq, Dv]
  float* lse = nullptr;      // layout from the spec; required iff the spec asks for LSE
  const int* cu_seqlens_q = nullptr;  // device, [batch + 1]; null (decode only): one token per request
  const int* cu_seqlens_k = nullptr;  // device, [batch + 1]; contiguous K/V, or the fork's paged form
  int batch = 0;
  int total_k = -1;          // rows of contiguous k and v (-1 unknown); prefill_sm90's TMA needs it or host cu_seqlens_k
  int max_seqlen_q = 0;      // host bound on query lengths (sizes the grid); 0 or 1 without cu_seqlens_q
  int total_q = 0;           // rows of q (head-major LSE stride, split partials); >= batch without cu_seqlens_q

  // Strides in elements; 0 = contiguous [tokens, heads, dim] for q, o and contiguous k, v.
  // Paged k, v: row = between slots of a page, head = between heads, block = between pages (all
  // three required; see kv_cache_strides() in runtime/launch/kv_cache_layout.h).
  long long q_row_stride = 0, q_head_stride = 0;
  long long k_row_stride = 0, k_head_stride = 0, k_block_stride = 0;
  long long v_row_stride = 0, v_head_stride = 0, v_block_stride = 0;
  long long o_row_stride = 0, o_head_stride = 0;

  // Paged KV (prefill_paged and decode kernels): page size, cache capacity, one page-table form.
  int page_size = 0;                 // a multiple of 16
  int num_blocks = 0;                // pages in the cache
  const int* block_table = nullptr;  // [batch, block_table_stride] (may be a column-offset view)
  long long block_table_stride = 0;  // ints between rows
  int max_blocks_per_seq = 0;        // usable columns of each row (capacity = this * page_size)
  const int* seqused_k = nullptr;    // [batch] KV lengths, with block_table (FlashAttention form)
  const int* kv_indptr = nullptr;    // FlashInfer form: [batch + 1], absolute offsets into kv_indices
  const int* kv_indices = nullptr;
  const int* kv_last_page_len = nullptr;  // [batch]

  float softmax_scale = 0.f;  // 0 = 1/sqrt(head_dim)
  float softcap = -1.f;       // < 0: the spec's value
  // -2: the spec's value; -1 unbounded. Only a sliding-window kernel takes other sizes than its
  // spec's (a causal or unmasked kernel has no window to change).
  int window_left = -2;
  int window_right = -2;
  const float* alibi_slopes = nullptr;  // [Hq] fp32, or [batch, Hq] with alibi_batch_stride = Hq
  long long alibi_batch_stride = 0;
  const float* sinks = nullptr;         // [Hq] fp32 raw logits

  // Split-KV (decode): the number of KV parts, decided by decide_num_splits (generator/split_kv.h);
  // 1 = off. Attention::run takes 0 to decide it there, and max_seqlen_k picks its shape bucket.
  int num_splits = 1;
  int max_seqlen_k = 0;   // host bound on KV lengths (0: unknown; paged int8_qkv's v_prewiden lays
                          // its workspace out by it: a longer request's output is NaN)
  // >= attention_workspace_bytes(plan, total_q, num_splits); prefill_sm90 v_prewiden:
  // >= v_prewiden_workspace_bytes(plan, total_k) (generator/plan/plan_prefill_sm90.h)
  void* workspace = nullptr;
  size_t workspace_bytes = 0;

  const AttentionHostMetadata* host = nullptr;  // optional: enables page-table content checks

  // MLA decode (mla_decode): q [total_q, Hq, 576], or q_nope [total_q, Hq, 512] in q and q_pe
  // [total_q, Hq, 64] here. k is the latent cache [num_blocks, page_size, 576] (strides as for a
  // paged K plane with one head); v is null or k: V is the first 512 columns of each k row.
  const void* q_pe = nullptr;
  long long q_pe_row_stride = 0, q_pe_head_stride = 0;  // 0 = contiguous [total_q, Hq, 64]
  // fp8 paged caches (spec kv_cache.dtype fp8_e4m3 / fp8_e5m2; k, v and their strides are then in
  // bytes): element = stored byte * k_scale[0] * k_descale[b, kv head] (V alike). Each is optional
  // (null: 1), device fp32. k_scale / v_scale: [1], the per-tensor scales cache_write divided by.
  // k_descale / v_descale: FlashAttention-3's [batch, Hkv], strides in floats (-1: contiguous,
  // [Hkv, 1]; 0 broadcasts, as torch's .expand()).
  const float* k_scale = nullptr;
  const float* v_scale = nullptr;
  const float* k_descale = nullptr;
  const float* v_descale = nullptr;
  long long k_descale_batch_stride = -1, k_descale_head_stride = -1;
  long long v_descale_batch_stride = -1, v_descale_head_stride = -1;
  // int8 quant modes (attention-semantics.md §5.2; runtime/launch/int8_args.h): q and k are int8
  // (v too for int8_qkv), strides in elements as above; required iff the spec has an int8 mode.
  const float* q_scale = nullptr;     // per token and q head: [total_q, Hq] by default
  long long q_scale_row_stride = 0;   // 0, 0: [total_q, Hq]; 1, total_q: the fork's [Hq, total_q]
  long long q_scale_head_stride = 0;
  const float* k_token_scale = nullptr;    // paged: [num_blocks, Hkv, page_size]; contiguous: [total_k, Hkv]
  const float* v_channel_scale = nullptr;  // int8_qkv: [Hkv, Dv] per channel
  // Decode: the host's sum of the KV lengths (0: unknown); only the split choice reads it.
  long long seqlen_k_sum = 0;
};

using GridDims = Dim3;

// Everything one call launches: the attention kernel, and for num_splits > 1 the combine entry
// (`<entry>_combine`) after it on the same stream.
struct AttentionLaunch {
  AttentionParams params{};
  AttentionTensorMaps maps{};  // prefill_sm90 and mla_decode: their second kernel parameter
  bool tensor_maps = false;
  GridDims grid, block;
  int smem_bytes = 0;
  bool combine = false;
  GridDims combine_grid, combine_block;
  // prefill_sm90 persistent: `grid` counts the items; the launch runs min(items, SMs) blocks in one
  // line (persistent_grid), each walking its rounds of items.
  bool persistent = false;
  // prefill_sm90 v_prewiden: the `<entry>_widen_v` entry before the kernel, on the same stream.
  bool widen_v = false;
  GridDims widen_grid, widen_block;
};

// The entry a plan's module holds beside its kernel, which launch_attention runs with it:
// "_combine" after a split-KV launch, "_widen_v" before a v_prewiden one; null when none.
inline const char* companion_suffix(const KernelPlan& plan) {
  if (plan.split_kv) return "_combine";
  if (plan.config.v_prewiden) return "_widen_v";
  return nullptr;
}

// (The kernel reads any grid as one line: with the SM count unknown, one block per item.)
inline GridDims persistent_grid(const GridDims& items, int sm_count) {
  const unsigned long long n = (unsigned long long)items.x * items.y * items.z;
  if (sm_count <= 0 || n <= (unsigned long long)sm_count) return items;
  GridDims g;
  g.x = unsigned(sm_count);
  return g;
}

// Checks every argument and builds the launch; args.num_splits is a decided count >= 1.
AttentionLaunch prepare_attention(const KernelPlan&, const AttentionArgs&);  // throws BadCall

// Query tokens per request as the grid sees them: without cu_seqlens_q (plain decode) each request
// has exactly one token, whatever max_seqlen_q says.
inline int query_len_bound(const AttentionArgs& a) { return a.cu_seqlens_q ? a.max_seqlen_q : 1; }

// Rows of contiguous k and v: total_k, else the host's cu_seqlens_k; -1 when neither says
// (prefill_sm90's tensor maps need it; the dispatcher serves such a call with prefill_sm80).
inline int known_total_k(const AttentionArgs& a) {
  if (a.total_k >= 0) return a.total_k;
  return a.host && a.host->cu_seqlens_k ? a.host->cu_seqlens_k[a.batch] : -1;
}
inline bool is_prefill_sm90(const KernelPlan& plan) { return plan.family == "prefill_sm90"; }
inline bool needs_total_k(const KernelPlan& plan) { return is_prefill_sm90(plan) && !plan.paged; }
inline bool is_mla_decode(const KernelPlan& plan) { return plan.family == "mla_decode"; }

}  // namespace attnc
