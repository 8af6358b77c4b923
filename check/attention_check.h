// Runs one attention kernel (prefill, prefill_paged or decode) on the GPU against the float64
// reference. Every run draws fresh random inputs; outputs, LSE, split workspace and the whole paged
// cache are poisoned with 0xff (NaN) first and only the pages requests own are written, so a read
// of a wrong page, a row never written or a write outside the output all show. Page tables take
// any of the three forms, with the offsets real callers use (column-offset block tables,
// FlashInfer indptr not starting at 0). Shared by `attnc run` and the GPU tests (and, later, the
// tuner's correctness gate, which sets a timeout so a hung kernel cannot hang it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "generator/plan/plan.h"
#include "runtime/launch/kv_cache_layout.h"
#include "check/page_table_builder.h"

namespace attnc {

class Kernel;

enum class Fp8Scales { per_tensor, descale, both };
const char* to_string(Fp8Scales);

struct AttentionCase {
  // Query lengths per request. Decode: empty = one token per request, passed without
  // cu_seqlens_q (plain decode); non-empty = cu_query_lens (multi-token / speculative decode).
  std::vector<int> seqlens_q;
  // KV lengths per request (for decode: the cached context, new tokens included).
  // Prefill: empty = seqlens_q.
  std::vector<int> seqlens_k;

  // Paged K/V (prefill_paged, decode); ignored by contiguous prefill.
  KvCacheLayout layout = KvCacheLayout::vllm;
  PageTableForm page_table = PageTableForm::seqused_k;
  int page_size = 16;
  int num_blocks = 32768;     // pages in the cache; the top page is always used
  int column_offset = 0;      // block-table forms: leading columns of the table the pointer skips
  int indptr_offset = 3;      // FlashInfer form: unused kv_indices entries before indptr[0]

  // Split-KV (decode): 0 = heuristic from max_seqlen_k and num_sms; 1 = off; N = N parts.
  int num_splits = 1;
  int num_sms = 0;            // the device's SM count, for the heuristic

  int qo_row_pad = 0;         // extra elements per token row of q and o (a strided view; multiple of 8)
  float softmax_scale = 0.f;  // 0 = 1/sqrt(head_dim)
  std::uint64_t seed = 0;     // 0 = fresh from the clock
  bool check = true;          // compare against the float64 reference
  int timing_reps = 0;        // > 0: time this many launches after warm-up
  int timeout_ms = 0;         // > 0: give up waiting for the checked launch after this long (GpuTimeout)
  double atol = 1.5e-2, rtol = 1e-2;
  bool q_pe_apart = false;    // mla_decode: q_nope [.., 512] and q_pe [.., 64] as two tensors

  // fp8 caches (the plan reads kv_cache fp8_e4m3 / fp8_e5m2): the stored bytes are fp8(N(0, 1)) and
  // the reference reads byte * factor, the factor from the per-tensor scales k_scale/v_scale [1],
  // FlashAttention-3's descales [batch, Hkv] (stored with a padded batch stride), or both.
  Fp8Scales fp8_scales = Fp8Scales::per_tensor;
  // int8 specs (check/int8_inputs.h): q scales as the int8 fork's [Hq, total_q] instead of
  // [total_q, Hq].
  bool q_scale_head_major = false;
};

struct AttentionReport {
  bool checked = false;  // false when the case asked for no reference check
  bool passed = true;
  double max_abs_err = 0, max_rel_err = 0;  // rel: |d| / max(|ref|, 1e-3) at the worst element
  double rel_l2_err = 0;                    // ||out - ref|| / ||ref||
  double lse_max_abs_err = 0;               // in the spec's LSE base
  long long bad_elements = 0;               // outside atol + rtol*|ref|, or never written (NaN)
  long long stray_writes = 0;               // poisoned padding / guard elements that changed
  int num_splits = 1;                       // what the call used (the heuristic's pick for 0)
  double time_ms = 0;                       // median time of one call (kernel + combine)
  double tflops = 0;                        // 2 * visible pairs * Hq * (D + Dv) / time
  std::uint64_t seed = 0;
  std::string summary() const;              // "PASS max_abs_err=... seed=..."
};

// Visible (query, key) pairs for the spec's mask, summed over the batch: the FLOP count of a
// call is 2 * pairs * Hq * (D + Dv).
double visible_pairs(const Spec&, const std::vector<int>& seqlens_q, const std::vector<int>& seqlens_k);

// Dot products of length D the reference computes for this case (its cost, to keep grids bounded).
double reference_work(const KernelPlan&, const AttentionCase&);

// `combine` is the plan's `<entry>_combine` kernel; required when the call splits KV. The current
// thread must have the kernel's context current. Throws BadCall for a case the kernel cannot take.
AttentionReport check_attention(const KernelPlan&, const Kernel& kernel, const Kernel* combine, const AttentionCase&);

}  // namespace attnc
