// The s32 accumulator preset of an integer product (docs/kernels-int8.md, "The s32 accumulator
// preset"): an s8 wgmma that accumulates (scale-d = 1) onto registers holding the bits of
// 1.5 * 2^23 leaves in each register the integer kS32PresetBits + x, and for |x| <= 2^22 those are
// the bits of the float 1.5 * 2^23 + x, exactly: every float in [2^23, 2^24] is an integer one unit
// apart, and the mantissa field 0x400000 + x stays within it (x = 2^22 carries into the exponent:
// 2^24, still exact). The integer adds of the wgmma are mod 2^32, so only the final sum counts. A
// sum of D <= 256 products of int8 values has -2^22 < -D * 128 * 127 <= x <= D * 128 * 128 <= 2^22:
// every head dimension a spec allows (8..256) converts exactly. The offset leaves where the key scale
// multiplies anyway: x * k = fma(s32_preset() + x, k, -s32_preset() * k), one FFMA per score against
// I2FP + FMUL, and one FMUL per key for the bias. The bias is rounded once, by at most 0.75 * k
// (three quarters of one unit of x), below a millionth of x's range.
#pragma once

namespace attnc {

// Enumerators and a constexpr function, not constexpr variables: NVRTC emits those as .global
// constants in every kernel that includes this header, the default ones too.
enum S32Preset : int {
  kS32PresetBits = 0x4B400000,  // the bits of s32_preset(), 1.5 * 2^23
  kS32PresetMaxAbs = 1 << 22,   // |x| this large still converts exactly
  kS32PresetMaxDepth = 256,     // products of int8 values a sum may hold: 256 * 128 * 128 = 2^22
};
__device__ __forceinline__ constexpr float s32_preset() { return 12582912.f; }

// The float an accumulator preset to kS32PresetBits holds after adding x: s32_preset() + x, exactly,
// for |x| <= kS32PresetMaxAbs.
__device__ __forceinline__ float s32_preset_plus(int x) { return __int_as_float(x + kS32PresetBits); }

// x * k from the preset accumulator's float (s32_preset() + x) and the key's bias (s32_preset_bias(k)).
__device__ __forceinline__ float s32_preset_bias(float k) { return -s32_preset() * k; }
__device__ __forceinline__ float s32_preset_scaled(float preset_plus_x, float k, float bias) {
  return fmaf(preset_plus_x, k, bias);
}

}  // namespace attnc
