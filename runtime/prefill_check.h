// Runs one prefill kernel on the GPU against the float64 reference: fresh random inputs, poisoned
// outputs (every element must be written), bf16/fp16 tolerance, then a timing loop. Shared by
// `attnc run`, the GPU tests and (later) the tuner's correctness gate.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "generator/plan.h"

namespace attnc {

class Kernel;

struct PrefillCase {
  std::vector<int> seqlens_q;
  std::vector<int> seqlens_k;      // empty = same as seqlens_q
  std::uint64_t seed = 0;          // 0 = fresh from the clock
  float softmax_scale = 0.f;       // 0 = 1/sqrt(head_dim)
  bool check = true;               // compare against the float64 reference
  int timing_reps = 0;             // > 0: time this many launches after warm-up
  double atol = 1.5e-2, rtol = 1e-2;
};

struct PrefillReport {
  bool checked = false;  // false when the case asked for no reference check
  bool passed = true;
  double max_abs_err = 0, max_rel_err = 0;  // rel: |d| / max(|ref|, 1e-3) at the worst element
  double rel_l2_err = 0;                    // ||out - ref|| / ||ref||
  double lse_max_abs_err = 0;
  long long bad_elements = 0;               // outside atol + rtol*|ref|, or never written (NaN)
  double time_ms = 0;                       // median launch time
  double tflops = 0;                        // 4 * sum(sq*sk_visible) * Hq * D... counted per element pair seen
  std::uint64_t seed = 0;
  std::string summary() const;
};

// Visible (query, key) pairs for the spec's mask, summed over the batch: the FLOP count of a
// call is 2 * pairs * Hq * (D + Dv).
double visible_pairs(const Spec&, const std::vector<int>& seqlens_q, const std::vector<int>& seqlens_k);

PrefillReport check_prefill(const KernelPlan&, const Kernel&, const PrefillCase&);

}  // namespace attnc
