// One prefill call's arguments (device pointers, lengths, runtime scalars) and their translation
// into the kernel's PrefillParams. Everything is checked before any launch; errors name the
// argument, what it got and what it needs.
#pragma once

#include <stdexcept>

#include "attnc/params.h"
#include "generator/plan.h"

namespace attnc {

class BadCall : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct PrefillArgs {
  const void* q = nullptr;   // [total_q, Hq, D]
  const void* k = nullptr;   // [total_k, Hkv, D]
  const void* v = nullptr;   // [total_k, Hkv, Dv]
  void* o = nullptr;         // [total_q, Hq, Dv]
  float* lse = nullptr;      // layout from the spec; required iff the spec asks for LSE
  const int* cu_seqlens_q = nullptr;  // device, [batch + 1]
  const int* cu_seqlens_k = nullptr;  // device, [batch + 1]
  int batch = 0;
  int max_seqlen_q = 0;
  int total_q = 0;           // rows of q (sets the head-major LSE stride)

  // Strides in elements; 0 = contiguous [tokens, heads, dim].
  long long q_row_stride = 0, q_head_stride = 0;
  long long k_row_stride = 0, k_head_stride = 0;
  long long v_row_stride = 0, v_head_stride = 0;
  long long o_row_stride = 0, o_head_stride = 0;

  float softmax_scale = 0.f;  // 0 = 1/sqrt(head_dim)
  float softcap = -1.f;       // < 0: the spec's value
  int window_left = -2;       // -2: the spec's value; -1 unbounded
  int window_right = -2;
};

struct GridDims {
  unsigned x = 1, y = 1, z = 1;
};

PrefillParams make_prefill_params(const KernelPlan&, const PrefillArgs&);  // throws BadCall
GridDims prefill_grid(const KernelPlan&, const PrefillArgs&);

}  // namespace attnc
