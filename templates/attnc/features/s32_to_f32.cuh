// Exact s32 -> f32 of an integer product's sums without the conversion instruction: I2FP.F32.S32
// runs on the same 16-per-clock-per-SM pipe as MUFU.EX2, so converting a 128 x 128 score tile costs
// as much as its exponentials (docs/kernels-int8.md, "The s32 -> f32 conversion").
//
// Adding the bits of 1.5 * 2^23 to an integer x with |x| <= 2^22 gives the float 1.5 * 2^23 + x,
// exactly: every float in [2^23, 2^24] is an integer one unit apart, and the sum's mantissa field
// 0x400000 + x stays within it (x = 2^22 carries into the exponent: 2^24, still exact). A sum of
// D <= 256 products of int8 values has |x| <= 256 * 128 * 128 = 2^22. The caller removes the
// offset where it multiplies anyway: x * k = fma(s32_plus_offset(x), k, -kS32Offset * k), one
// integer add and one FFMA per value against I2FP and FMUL. The bias -kS32Offset * k is rounded
// once, by at most 0.75 * k (three quarters of one unit of x), below a millionth of x's range.
#pragma once

namespace attnc {

constexpr int kS32OffsetBits = 0x4B400000;  // the bits of kS32Offset
constexpr float kS32Offset = 12582912.f;    // 1.5 * 2^23
constexpr int kS32OffsetMaxAbs = 1 << 22;   // |x| this large still converts exactly

// kS32Offset + x as a float, exactly, for |x| <= kS32OffsetMaxAbs.
__device__ __forceinline__ float s32_plus_offset(int x) { return __int_as_float(x + kS32OffsetBits); }

}  // namespace attnc
