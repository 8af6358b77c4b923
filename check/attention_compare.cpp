#include "check/attention_compare.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "check/half.h"

namespace attnc {

void compare_output(DType t, const std::vector<std::uint16_t>& got, long long row_stride, int total_q, int hq, int dv,
                    const std::vector<double>& ref, double atol, double rtol, ErrorTally& e) {
  const long long values = (long long)hq * dv;
  double num = 0, den = 0, worst = -1;
  for (long long i = 0; i < (long long)got.size(); ++i) {
    const long long row = i / row_stride, col = i % row_stride;
    if (row >= total_q || col >= values) {
      if (got[i] != kHalfPoison) ++e.stray;
      continue;
    }
    const double g = from_half(t, got[i]), r = ref[row * values + col], diff = std::abs(g - r);
    num += (g - r) * (g - r);
    den += r * r;
    if (!(diff <= atol + rtol * std::abs(r))) ++e.bad;  // NaN counts as bad
    if (std::isnan(g)) continue;
    e.max_abs = std::max(e.max_abs, diff);
    const double excess = diff - atol - rtol * std::abs(r);
    if (excess > worst) { worst = excess; e.max_rel = diff / std::max(std::abs(r), 1e-3); }
  }
  e.rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

void compare_lse(const std::vector<float>& got, bool head_major, double to_base, int total_q, int hq,
                 const std::vector<double>& ref, ErrorTally& e) {
  const size_t n = size_t(total_q) * hq;
  for (size_t i = n; i < got.size(); ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, &got[i], 4);
    if (bits != 0xffffffffu) ++e.stray;
  }
  for (int i = 0; i < total_q; ++i)
    for (int h = 0; h < hq; ++h) {
      const double r = ref[size_t(i) * hq + h] * to_base;
      const double g = got[head_major ? size_t(h) * total_q + i : size_t(i) * hq + h];
      const bool both_empty = std::isinf(r) && r < 0 && std::isinf(g) && g < 0;
      const double diff = both_empty ? 0.0 : std::abs(g - r);
      // 1e-3 natural-log units absolute (fast tanh/exp2 in the kernel), scaled into the LSE's base.
      if (!(diff <= 1e-3 * to_base + 1e-4 * std::abs(r))) ++e.bad;
      if (!std::isnan(diff)) e.lse_max_abs = std::max(e.lse_max_abs, diff);
    }
}

}  // namespace attnc
