// Element conversions the op families need beyond ptx.cuh's pack2: 16-bit pairs to floats, and
// floats to fp8 pairs. The fp8 cvt exists from sm_89 on (PTX ISA 7.8); the planner refuses fp8
// caches on older archs, so it is only instantiated where it assembles.
#pragma once

#include "attnc/core/ptx.cuh"

namespace attnc {

// One 32-bit word of two 16-bit elements (`lo` in the low half) -> two floats, exactly.
template <class E>
__device__ __forceinline__ float2 unpack2(u32 w) {
  if constexpr (is_same<E, bf16_t>::value) {
    return make_float2(__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u));
  } else {
    float lo, hi;
    asm("cvt.f32.f16 %0, %1;\n" : "=f"(lo) : "h"(static_cast<u16>(w & 0xffffu)));
    asm("cvt.f32.f16 %0, %1;\n" : "=f"(hi) : "h"(static_cast<u16>(w >> 16)));
    return make_float2(lo, hi);
  }
}

// Two floats -> two fp8 bytes (`lo` in the low byte), round to nearest even, saturating to the
// largest finite value (vLLM's __NV_SATFINITE); NaN stays NaN.
template <int CACHE>
__device__ __forceinline__ u16 pack_fp8x2(float lo, float hi) {
  u16 r;
  if constexpr (CACHE == 1) {
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(r) : "f"(hi), "f"(lo));
  } else {
    asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;\n" : "=h"(r) : "f"(hi), "f"(lo));
  }
  return r;
}

}  // namespace attnc
