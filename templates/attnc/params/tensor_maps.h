// The TMA tensor map as a kernel parameter: the host's CUtensorMap (128 bytes, 64-byte aligned),
// opaque to the device. Included by the host compiler and NVRTC alike, like params.h.
#pragma once

namespace attnc {

struct alignas(64) TmaDescriptor {
  unsigned long long opaque[16];
};

// prefill_sm90's second kernel parameter (after AttentionParams): q as (D, Hq, total_q),
// k as (D, Hkv, total_k), v as (Dv, Hkv, total_k), innermost first, boxes of 64 columns by one
// head by the block's rows (q) or keys (k, v), 128-byte swizzle. Paged K/V: k and v over the cache
// planes as (D or Dv, page_size slots, Hkv, pages), boxes of 64 columns by gcd(page_size, block_n)
// slots of one head and page. mla_decode: k over the latent cache.
struct AttentionTensorMaps {
  TmaDescriptor q, k, v;
};

}  // namespace attnc
