// cache_write for the int8 caches (attention-semantics.md §5.2: the int8 fork's
// reshape_and_cache_flash_int8 and _mix, with the per-token key quantisation fused in; semantics
// in CacheWriteParams, attnc/params/ops_params.h), and the int8 quantiser of queries and keys.
// One block per token; each warp takes a head at a time and each lane one 8-element chunk of its
// row (head sizes up to 256), so the row's amax is one warp reduction. Divisions are IEEE
// round-to-nearest and rounding is to nearest even, so a host reference reproduces every byte.
//
// Traits: Element (bf16_t | fp16_t), kCache (kCacheInt8Qkv | kCacheInt8Qk).
#pragma once

#include "attnc/core/convert.cuh"
#include "attnc/core/ptx.cuh"
#include "attnc/families/cache_write.cuh"  // cache_slot
#include "attnc/params/ops_params.h"

namespace attnc {

// Eight 16-bit elements as floats.
template <class E>
__device__ __forceinline__ void unpack8(const uint4& x, float (&f)[8]) {
  const u32 w[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 v = unpack2<E>(w[i]);
    f[2 * i] = v.x;
    f[2 * i + 1] = v.y;
  }
}

__device__ __forceinline__ u32 int8x4(const float (&q)[8], int i) {
  u32 r = 0;
#pragma unroll
  for (int j = 0; j < 4; ++j) r |= u32(static_cast<unsigned char>(static_cast<signed char>(q[i + j]))) << (8 * j);
  return r;
}

// round(f / s) clamped to [-127, 127] as 8 bytes; s == 0 gives zeros.
__device__ __forceinline__ uint2 quantize8(const float (&f)[8], const float (&s)[8]) {
  float q[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) q[i] = s[i] > 0.f ? fminf(fmaxf(rintf(__fdiv_rn(f[i], s[i])), -127.f), 127.f) : 0.f;
  return make_uint2(int8x4(q, 0), int8x4(q, 4));
}

// One head's row, a chunk per lane (lane < chunks): quantised per row, the 8 bytes of this lane's
// chunk into dst (when valid); returns the row's scale.
template <class E>
__device__ __forceinline__ float quantize_row(const u16* src, signed char* dst, int chunks) {
  const int lane = threadIdx.x % 32;
  float f[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  if (lane < chunks) unpack8<E>(*reinterpret_cast<const uint4*>(src + lane * 8), f);
  float amax = 0.f;
#pragma unroll
  for (int i = 0; i < 8; ++i) amax = fmaxf(amax, fabsf(f[i]));
#pragma unroll
  for (int o = 16; o > 0; o /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  const float scale = __fdiv_rn(amax, 127.f);
  const float s[8] = {scale, scale, scale, scale, scale, scale, scale, scale};
  if (lane < chunks) *reinterpret_cast<uint2*>(dst + lane * 8) = quantize8(f, s);
  return scale;
}

template <class T>
struct CacheWriteInt8 {
  using E = typename T::Element;
  static constexpr int kWarps = kCacheWriteThreads / 32;

  __device__ static void run(const CacheWriteParams& p) {
    const int t = blockIdx.x;
    long long page, pos;
    if (!cache_slot(p, t, page, pos)) return;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const u16* key = static_cast<const u16*>(p.key) + t * p.key_row_stride;
    const u16* value = static_cast<const u16*>(p.value) + t * p.value_row_stride;
    const long long kc = page * p.kc_block_stride + pos * p.kc_page_stride;
    const long long vc = page * p.vc_block_stride + pos * p.vc_page_stride;
    for (int h = warp; h < p.num_heads; h += kWarps) {
      const float scale = quantize_row<E>(key + h * p.key_head_stride,
                                          static_cast<signed char*>(p.key_cache) + kc + h * p.kc_head_stride,
                                          p.head_size / 8);
      if (lane == 0) p.key_scale_cache[(page * p.num_heads + h) * p.block_size + pos] = scale;
    }
    const int chunks = p.head_size_v / 8;
    for (int i = threadIdx.x; i < p.num_heads * chunks; i += kCacheWriteThreads) {
      const int h = i / chunks, c = i - h * chunks;
      const uint4 x = *reinterpret_cast<const uint4*>(value + h * p.value_head_stride + c * 8);
      const long long dst = vc + h * p.vc_head_stride + c * 8;
      if constexpr (T::kCache == kCacheInt8Qk) {
        *reinterpret_cast<uint4*>(static_cast<u16*>(p.value_cache) + dst) = x;
      } else {
        float f[8], s[8];
        unpack8<E>(x, f);
#pragma unroll
        for (int j = 0; j < 8; ++j) s[j] = p.v_scale[h * p.head_size_v + c * 8 + j];
        *reinterpret_cast<uint2*>(static_cast<signed char*>(p.value_cache) + dst) = quantize8(f, s);
      }
    }
  }
};

// The quantiser: one block per row, a warp per head at a time.
template <class T>
struct Int8Quantize {
  using E = typename T::Element;
  static constexpr int kWarps = kCacheWriteThreads / 32;

  __device__ static void run(const Int8QuantizeParams& p) {
    const int r = blockIdx.x, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int h = warp; h < p.num_heads; h += kWarps) {
      const float scale =
          quantize_row<E>(static_cast<const u16*>(p.x) + r * p.x_row_stride + h * p.x_head_stride,
                          p.out + r * p.out_row_stride + h * p.out_head_stride, p.head_size / 8);
      if (lane == 0) p.scale[r * p.scale_row_stride + h * p.scale_head_stride] = scale;
    }
  }
};

}  // namespace attnc
