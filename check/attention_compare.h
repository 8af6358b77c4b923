// Compares a kernel's downloaded output and LSE with the float64 reference, and checks that the
// poison around them (row padding, guard rows) is untouched. Used by check_attention.
#pragma once

#include <cstdint>
#include <vector>

#include "generator/spec/spec.h"

namespace attnc {

struct ErrorTally {
  double max_abs = 0, max_rel = 0, rel_l2 = 0, lse_max_abs = 0;
  long long bad = 0;    // outside tolerance or NaN (never written)
  long long stray = 0;  // poisoned padding or guard elements that changed
};

// `got` holds rows of `row_stride` 16-bit elements: [total_q rows of Hq * Dv values and padding]
// then guard rows; everything but the values must still be kHalfPoison. `ref` is [total_q, Hq, Dv].
void compare_output(DType, const std::vector<std::uint16_t>& got, long long row_stride, int total_q, int num_q_heads,
                    int head_dim_v, const std::vector<double>& ref, double atol, double rtol, ErrorTally&);

// `got` holds total_q * Hq LSE values in the given layout, then guard entries that must still be
// poisoned (all ones). `ref` is [total_q, Hq] in base e; `to_base` converts (1 or 1/ln 2).
// A row empty on both sides (-inf) matches.
void compare_lse(const std::vector<float>& got, bool head_major, double to_base, int total_q, int num_q_heads,
                 const std::vector<double>& ref, ErrorTally&);

}  // namespace attnc
