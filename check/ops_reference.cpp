#include "check/ops_reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "check/half.h"

namespace attnc {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// One fp8 format: `man` mantissa bits, exponent `bias`, largest finite value `max`.
std::uint8_t encode_fp8(float x, int man, int bias, double max) {
  if (std::isnan(x)) return 0x7f;
  const std::uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  double a = std::fabs(double(x));
  const int min_exp = 1 - bias;  // exponent of the smallest normal
  if (a < max) {
    int e;
    std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1)
    const int exp = std::max(e - 1, min_exp);
    const double quantum = std::ldexp(1.0, exp - man);
    a = std::nearbyint(a / quantum) * quantum;  // exact scaling; nearbyint ties to even
  }
  a = std::min(a, max);  // satfinite: overflow (after rounding too) and infinities give max
  if (a == 0) return sign;
  int e;
  std::frexp(a, &e);
  const int exp = e - 1;
  if (exp < min_exp)  // subnormal: exponent field 0
    return sign | std::uint8_t(a / std::ldexp(1.0, min_exp - man));
  const int mant = int(a / std::ldexp(1.0, exp - man)) - (1 << man);
  return sign | std::uint8_t((exp + bias) << man) | std::uint8_t(mant);
}

double decode_fp8(std::uint8_t b, int man, int bias) {
  const int exp_bits = 7 - man;
  const int ef = (b >> man) & ((1 << exp_bits) - 1), mf = b & ((1 << man) - 1);
  const double mag = ef == 0 ? std::ldexp(double(mf), 1 - bias - man) : std::ldexp(double(mf + (1 << man)), ef - bias - man);
  return (b & 0x80) ? -mag : mag;
}

}  // namespace

void reference_merge(int T, int H, int D, LseBase base, const std::vector<double>& prefix,
                     const std::vector<double>& prefix_lse, const std::vector<double>& suffix,
                     const std::vector<double>& suffix_lse, std::vector<double>& out, std::vector<double>& out_lse) {
  out.assign(size_t(T) * H * D, 0.0);
  out_lse.assign(size_t(T) * H, -kInf);
  const bool two = base == LseBase::two;
  auto ex = [&](double x) { return two ? std::exp2(x) : std::exp(x); };
  for (size_t r = 0; r < size_t(T) * H; ++r) {
    const double p = prefix_lse[r] == kInf ? -kInf : prefix_lse[r];
    const double s = suffix_lse[r] == kInf ? -kInf : suffix_lse[r];
    const double m = std::max(p, s);
    if (m == -kInf) continue;  // both empty: 0, -inf
    const double wp = ex(p - m), ws = ex(s - m), sum = wp + ws;
    for (int d = 0; d < D; ++d) out[r * D + d] = prefix[r * D + d] * (wp / sum) + suffix[r * D + d] * (ws / sum);
    out_lse[r] = m + (two ? std::log2(sum) : std::log(sum));
  }
}

void reference_lse_correct(int T, int H, int D, int N, int rank, LseBase base, const std::vector<double>& partial,
                           const std::vector<double>& lses, std::vector<double>& out, std::vector<double>& out_lse) {
  out.assign(size_t(T) * H * D, 0.0);
  out_lse.assign(size_t(T) * H, -kInf);
  const bool two = base == LseBase::two;
  auto clean = [](double x) { return std::isnan(x) || x == kInf ? -kInf : x; };
  for (size_t th = 0; th < size_t(T) * H; ++th) {
    double m = -kInf;
    for (int r = 0; r < N; ++r) m = std::max(m, clean(lses[r * size_t(T) * H + th]));
    if (m == -kInf) continue;  // no rank saw a key: 0, -inf
    double sum = 0;
    for (int r = 0; r < N; ++r) sum += two ? std::exp2(clean(lses[r * size_t(T) * H + th]) - m)
                                           : std::exp(clean(lses[r * size_t(T) * H + th]) - m);
    const double lse = m + (two ? std::log2(sum) : std::log(sum));
    const double own = clean(lses[rank * size_t(T) * H + th]) - lse;
    const double w = two ? std::exp2(own) : std::exp(own);
    for (int d = 0; d < D; ++d) out[th * D + d] = w == 0 ? 0.0 : partial[th * D + d] * w;
    out_lse[th] = lse;
  }
}

std::uint8_t fp8_e4m3_from_float(float x) { return encode_fp8(x, 3, 7, 448.0); }
std::uint8_t fp8_e5m2_from_float(float x) { return encode_fp8(x, 2, 15, 57344.0); }

double fp8_e4m3_to_double(std::uint8_t b) {
  if ((b & 0x7f) == 0x7f) return std::numeric_limits<double>::quiet_NaN();
  return decode_fp8(b, 3, 7);
}

double fp8_e5m2_to_double(std::uint8_t b) {
  if ((b & 0x7f) == 0x7c) return (b & 0x80) ? -kInf : kInf;
  if ((b & 0x7f) > 0x7c) return std::numeric_limits<double>::quiet_NaN();
  return decode_fp8(b, 2, 15);
}

void reference_cache_write(const CacheWriteParams& p, DType dtype, KvDType cache, const HostCacheWrite& h) {
  const bool fp8 = cache == KvDType::fp8_e4m3 || cache == KvDType::fp8_e5m2;
  auto store = [&](const std::uint16_t* src, long long row, long long head, int d, unsigned char* dst, long long at,
                   long long dst_head, const std::vector<float>& scale) {
    for (int hh = 0; hh < p.num_heads; ++hh)
      for (int i = 0; i < d; ++i) {
        const std::uint16_t x = src[row + hh * head + i];
        const long long e = at + hh * dst_head + i;
        if (!fp8) {
          std::memcpy(dst + 2 * e, &x, 2);
          continue;
        }
        const float v = from_half(dtype, x) / scale[p.scale_head_stride ? hh : 0];  // float division, as the kernel
        dst[e] = cache == KvDType::fp8_e4m3 ? fp8_e4m3_from_float(v) : fp8_e5m2_from_float(v);
      }
  };
  for (int t = 0; t < p.num_tokens; ++t) {
    const long long slot = h.slot_mapping[t];
    if (slot < 0 || slot >= p.num_slots) continue;
    const long long page = slot / p.block_size, pos = slot % p.block_size;
    store(h.key, t * p.key_row_stride, p.key_head_stride, p.head_size, h.key_cache,
          page * p.kc_block_stride + pos * p.kc_page_stride, p.kc_head_stride, h.k_scale);
    store(h.value, t * p.value_row_stride, p.value_head_stride, p.head_size_v, h.value_cache,
          page * p.vc_block_stride + pos * p.vc_page_stride, p.vc_head_stride, h.v_scale);
  }
}

}  // namespace attnc
