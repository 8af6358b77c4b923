// cache_write: reshape_and_cache_flash (attention-semantics.md §4.2; addressing in
// CacheWriteParams, attnc/params/ops_params.h). One block per token: its slot is read once, then the
// threads stride over the (head, 8-element chunk) pairs of its key and value rows. Every offset
// is 64-bit: a cache of 32768 pages of 64 x 8 x 128 elements already spans 2^31 elements.
//
// Traits (written by the emitter) supply:
//   Element (bf16_t | fp16_t; u16 when copying, where the type does not matter),
//   kCache (kCacheSame: copy 16 bytes; kCacheFp8E4m3 / kCacheFp8E5m2: 8 bytes of fp8(x / scale)).
#pragma once

#include "attnc/core/convert.cuh"
#include "attnc/params/ops_params.h"
#include "attnc/core/ptx.cuh"

namespace attnc {

// The cache slot token t writes: its page and position there. Slots < 0 (vLLM's padding, -1) and
// past the cache are never written (false).
__device__ __forceinline__ bool cache_slot(const CacheWriteParams& p, int t, long long& page, long long& pos) {
  const long long slot = p.slot_mapping[t];
  if (slot < 0 || slot >= p.num_slots) return false;
  page = slot / p.block_size;
  pos = slot - page * p.block_size;
  return true;
}

template <class T>
struct CacheWrite {
  using E = typename T::Element;
  static constexpr int C = T::kCache;

  __device__ static void run(const CacheWriteParams& p) {
    const int t = blockIdx.x;
    long long page, pos;
    if (!cache_slot(p, t, page, pos)) return;
    write_row(p, static_cast<const u16*>(p.key) + t * p.key_row_stride, p.key_head_stride, p.head_size, p.key_cache,
              page * p.kc_block_stride + pos * p.kc_page_stride, p.kc_head_stride, p.k_scale);
    write_row(p, static_cast<const u16*>(p.value) + t * p.value_row_stride, p.value_head_stride, p.head_size_v,
              p.value_cache, page * p.vc_block_stride + pos * p.vc_page_stride, p.vc_head_stride, p.v_scale);
  }

  // All heads of one token's key (or value) row into its slot.
  __device__ static void write_row(const CacheWriteParams& p, const u16* src, long long src_head_stride, int d,
                                   void* cache, long long slot_offset, long long cache_head_stride,
                                   const float* scale) {
    const int chunks = d / 8;
    for (int i = threadIdx.x; i < p.num_heads * chunks; i += kCacheWriteThreads) {
      const int h = i / chunks, c = i - h * chunks;
      const uint4 x = *reinterpret_cast<const uint4*>(src + h * src_head_stride + c * 8);
      const long long dst = slot_offset + h * cache_head_stride + c * 8;
      if constexpr (C == kCacheSame) {
        *reinterpret_cast<uint4*>(static_cast<u16*>(cache) + dst) = x;
      } else {
        const float s = scale[h * p.scale_head_stride];
        uint2 q;
        q.x = fp8x4(x.x, x.y, s);
        q.y = fp8x4(x.z, x.w, s);
        *reinterpret_cast<uint2*>(static_cast<unsigned char*>(cache) + dst) = q;
      }
    }
  }

  // Four 16-bit elements -> four fp8 bytes of x / s. The division is IEEE round-to-nearest (as
  // vLLM's scaled_convert), so the host reference reproduces every byte.
  __device__ static u32 fp8x4(u32 w0, u32 w1, float s) {
    const float2 a = unpack2<E>(w0), b = unpack2<E>(w1);
    const u32 lo = pack_fp8x2<C>(__fdiv_rn(a.x, s), __fdiv_rn(a.y, s));
    const u32 hi = pack_fp8x2<C>(__fdiv_rn(b.x, s), __fdiv_rn(b.y, s));
    return lo | (hi << 16);
  }
};

}  // namespace attnc
