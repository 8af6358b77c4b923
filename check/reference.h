// Float64 CPU reference attention: the oracle for GPU tests, `attnc run` and the tuner's gate.
// Implements attention-semantics.md §1 exactly (softcap before bias and mask, bottom-right
// aligned causal and window masks, ALiBi and sqrt-ALiBi, sinks, LSE) and §7.4 (block-sparse
// pattern, check/block_sparse_reference.h); a fully masked row gives
// zeros and LSE -inf.
#pragma once

#include <vector>

#include "attnc/params/kinds.h"
#include "check/block_sparse_reference.h"

namespace attnc {

struct ReferenceOptions {
  int head_dim = 128;
  int head_dim_v = 128;
  int num_q_heads = 1;
  int num_kv_heads = 1;
  double scale = 0.0;          // 0 = 1/sqrt(head_dim)
  bool causal = false;
  int window_left = -1;        // -1 = unbounded
  int window_right = -1;
  double softcap = 0.0;        // 0 = off
  Alibi alibi = Alibi::none;
  const std::vector<double>* alibi_slopes = nullptr;  // [Hq]
  const std::vector<double>* sinks = nullptr;         // [Hq], raw logits
  int head_begin = 0, head_end = -1;                  // q heads to compute (-1: all); others untouched
  int row_begin = 0, row_end = -1;                    // query rows within each request (-1: all)
  SparsePattern sparse;                               // block-sparse keys (with causal), when enabled
};

// Tensors are dense, row-major: q [total_q, Hq, D], k [total_k, Hkv, D], v [total_k, Hkv, Dv].
// Outputs: o [total_q, Hq, Dv]; lse [total_q, Hq] in base e. Sized by the caller when a head range
// is given (so several calls can fill one output), else resized here.
void reference_attention(const ReferenceOptions& opt, const std::vector<int>& cu_seqlens_q,
                         const std::vector<int>& cu_seqlens_k, const std::vector<double>& q,
                         const std::vector<double>& k, const std::vector<double>& v,
                         std::vector<double>& o, std::vector<double>& lse);

// The same on `threads` workers (<= 0: one per hardware thread), cut into (request, q head, block
// of query rows) pieces so that a batch of one long request still uses every core. o and lse are
// resized here.
void reference_attention_parallel(const ReferenceOptions& opt, const std::vector<int>& cu_seqlens_q,
                                  const std::vector<int>& cu_seqlens_k, const std::vector<double>& q,
                                  const std::vector<double>& k, const std::vector<double>& v,
                                  std::vector<double>& o, std::vector<double>& lse, int threads = 0);

}  // namespace attnc
