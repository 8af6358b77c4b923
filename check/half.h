// Host-side conversion between float and the 16-bit element types, for test inputs and checks.
#pragma once

#include <cstdint>
#include <cstring>

#include "generator/spec/spec.h"

namespace attnc {

inline std::uint16_t float_to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;      // NaN stays NaN
  u += 0x7fffu + ((u >> 16) & 1u);                          // round to nearest even
  return static_cast<std::uint16_t>(u >> 16);
}
inline float bf16_to_float(std::uint16_t h) {
  std::uint32_t u = std::uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline std::uint16_t float_to_fp16(float f) {
  _Float16 h = static_cast<_Float16>(f);
  std::uint16_t u;
  std::memcpy(&u, &h, 2);
  return u;
}
inline float fp16_to_float(std::uint16_t u) {
  _Float16 h;
  std::memcpy(&h, &u, 2);
  return static_cast<float>(h);
}
inline std::uint16_t to_half(DType t, float f) { return t == DType::bf16 ? float_to_bf16(f) : float_to_fp16(f); }
inline float from_half(DType t, std::uint16_t u) { return t == DType::bf16 ? bf16_to_float(u) : fp16_to_float(u); }

// A bit pattern that is NaN in both bf16 and fp16: poisoned outputs that a kernel never wrote
// stay visible.
constexpr std::uint16_t kHalfPoison = 0xffff;

}  // namespace attnc
