// Random inputs of the int8 attention modes (attention-semantics.md §5.2) and the doubles they
// stand for, which the float64 reference takes: Q and K quantised per token and head
// (symmetric, scale = amax / 127), V per channel over the tokens (int8_qkv) or kept 16-bit
// (int8_qk). The reference on the dequantised values is the fork's math exactly:
// softmax_scale * q_scale * k_token_scale * sum(q8 * k8) = softmax_scale * sum((q8 q_scale)(k8 k_token_scale)).
// Also the paged images of such inputs, poisoned where no request's token lies.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "attnc/params/kinds.h"
#include "attnc/params/ops_params.h"
#include "check/page_table_builder.h"
#include "generator/spec/spec.h"
#include "runtime/launch/kv_cache_layout.h"

namespace attnc {

struct Int8Inputs {
  std::vector<std::int8_t> q, k, v;  // [total_q, Hq, D], [total_k, Hkv, D], [total_k, Hkv, Dv] (v: int8_qkv)
  std::vector<std::uint16_t> v16;     // int8_qk: [total_k, Hkv, Dv] 16-bit
  std::vector<float> q_scale;         // [total_q, Hq]
  std::vector<float> k_token_scale;   // [total_k, Hkv]
  std::vector<float> v_channel_scale; // [Hkv, Dv] (int8_qkv)
  std::vector<double> q_exact, k_exact, v_exact;  // dequantised: what the reference sees
};

// Symmetric int8 of `rows` rows of `width` values, one scale per row: scale = amax / 127,
// round(x / scale) to nearest even in float, 0 for a zero row (scale 0). Exactly the device's
// quantiser and int8 key cache writes.
void quantize_int8_rows(const std::vector<float>& x, int rows, int width, std::vector<std::int8_t>& out,
                        std::vector<float>& scale);

Int8Inputs random_int8_inputs(Int8Mode, DType, int total_q, int total_k, int hq, int hkv, int d, int dv,
                              std::mt19937_64& rng);

// A paged cache of int8 inputs in the layout `s` (element offsets: bytes for the int8 planes,
// 2-byte units for int8_qk's 16-bit V buffer, which has the K plane's shape). Pages nobody owns and
// slots past a request's end hold 127 in int8 planes, NaN in 16-bit V and in the key scales, so a
// wrong page or slot shows.
struct Int8CacheImages {
  std::vector<std::int8_t> kv;        // s.total_elems: K plane (and V plane for int8_qkv)
  std::vector<std::uint16_t> v16;     // int8_qk: s.total_elems, V at s.v_index
  std::vector<float> k_token_scale;   // [num_blocks, Hkv, block_size]
};
Int8CacheImages int8_cache_images(Int8Mode, const KvCacheStrides& s, const HostPageTable&,
                                  const std::vector<int>& cu_seqlens_k, const Int8Inputs&, int d, int dv);

// What the int8 cache_write kernel must write (CacheWriteParams, attnc/params/ops_params.h), byte
// for byte: key rows quantised per (token, head) by quantize_int8_rows, the scale into
// key_scale_cache; int8_qkv values quantised per channel by v_channel_scale; int8_qk values copied.
// key/value: 16-bit rows at p's strides; caches indexed by p's strides (bytes for int8 planes,
// 2-byte elements for int8_qk's value plane); key_scale_cache [num_blocks, heads, block_size].
void reference_int8_cache_write(const CacheWriteParams& p, DType, QuantMode, const std::uint16_t* key,
                                const std::uint16_t* value, const long long* slot_mapping, const float* v_channel_scale,
                                std::int8_t* key_cache, void* value_cache, float* key_scale_cache);

}  // namespace attnc
