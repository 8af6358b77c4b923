// Parameters of the op families merge_states, lse_correct and cache_write: POD structs included by the host
// compiler and by NVRTC, so host and device cannot disagree on layout. Builtin types only (NVRTC
// has no C library headers). Strides are in elements and 64-bit; the last dimension is contiguous.
#pragma once

namespace attnc {

// merge_attn_states (attention-semantics.md §1.9): two partial attention results over disjoint key
// sets, each normalised within its set, combined by their LSEs:
//   out[t, h, :]  = prefix[t, h, :] * w_p + suffix[t, h, :] * w_s,
//   w_x = 2^(lse_x - M) / (2^(lse_p - M) + 2^(lse_s - M)),  M = max(lse_p, lse_s)   (base 2 shown)
//   out_lse[t, h] = M + log(2^(lse_p - M) + 2^(lse_s - M))
// An LSE of +inf (FlashAttention-2's empty row) counts as -inf. When both are -inf the row is
// empty: out is 0 and out_lse -inf (vLLM copies prefix there instead; an empty row's output is 0
// in every attnc kernel, so the two agree on attnc's own partials).
// out, prefix, suffix: [num_tokens, num_heads, head_size] 16-bit (row = token, head strides);
// lse: fp32, any token/head strides (vLLM: [num_heads, num_tokens]); out_lse may be null.
struct MergeParams {
  void* out;
  const void* prefix;
  const void* suffix;
  const float* prefix_lse;
  const float* suffix_lse;
  float* out_lse;

  long long out_row_stride, out_head_stride;
  long long prefix_row_stride, prefix_head_stride;
  long long suffix_row_stride, suffix_head_stride;
  long long prefix_lse_token_stride, prefix_lse_head_stride;  // in floats
  long long suffix_lse_token_stride, suffix_lse_head_stride;
  long long out_lse_token_stride, out_lse_head_stride;

  int num_tokens;
  int num_heads;
  int head_size;    // a multiple of 8: each thread moves 8 elements (16 bytes)
  int lse_base2;    // 0: LSEs are natural logs (vLLM, FlashAttention); 1: base 2 (FlashInfer, ixformer)
};

// The LSE correction of decode context parallelism (attention-semantics.md §9; vLLM's
// cp_lse_ag_out_rs before its reduce-scatter). N ranks each attended to a shard of every request's
// keys; `lses` holds all their LSEs (an all-gather). For token t, head h:
//   l_r = lses[r, t, h] (NaN or +inf count as -inf),  M = max_r l_r (0 when every l_r is -inf)
//   lse = M + log(sum_r exp(l_r - M))                  (base 2: exp2/log2)
//   out[t, h, :] = partial[t, h, :] * exp(l_rank - lse)  (0 where that weight is 0 or NaN)
//   out_lse[t, h] = lse
// so the N ranks' outputs summed over r are the attention over all keys. The output's head h
// goes to chunk h / heads_per_chunk, head h % heads_per_chunk of it: chunk_stride = tokens *
// heads_per_chunk * head_size lays the output out as [chunks, tokens, heads_per_chunk, head_size],
// what a reduce-scatter over heads takes, without a transposing copy (heads_per_chunk =
// num_heads, chunk_stride 0: the plain [tokens, heads, head_size]). partial and out are 16-bit.
struct LseCorrectParams {
  void* out;
  const void* partial;
  const float* lses;
  float* out_lse;  // may be null

  long long out_row_stride, out_head_stride, out_chunk_stride;
  long long partial_row_stride, partial_head_stride;
  long long lses_rank_stride, lses_token_stride, lses_head_stride;  // in floats
  long long out_lse_token_stride, out_lse_head_stride;

  int num_tokens;
  int num_heads;
  int head_size;        // a multiple of 8: each thread moves 8 elements (16 bytes)
  int heads_per_chunk;  // divides num_heads
  int world_size;       // N, the ranks whose LSEs `lses` holds
  int rank;             // whose partial this is
  int lse_base2;        // 0: natural logs; 1: base 2
};

// reshape_and_cache_flash (attention-semantics.md §4.2): token t's key and value rows go to slot
// s = slot_mapping[t] of the paged cache, page s / block_size, position s % block_size in it.
// Element (page, pos, head, d) of the key cache is at
//   key_cache + page * kc_block_stride + pos * kc_page_stride + head * kc_head_stride + d
// (value cache alike), which covers vLLM's (2, nb, bs, Hkv, D), the int8 fork's HND
// (2, nb, Hkv, bs, D) and FlashInfer's (nb, 2, bs, Hkv, D) by strides alone.
// A negative slot (a padded token) is skipped; so is a slot at or past num_blocks * block_size
// (the host rejects those when it has a copy of slot_mapping). fp8 caches store
// satfinite(round_to_nearest_even(x / scale)); scale = k_scale[head * scale_head_stride]
// (0: one scale per tensor, 1: one per kv head).
struct CacheWriteParams {
  const void* key;     // [>= num_tokens, num_heads, head_size]
  const void* value;   // [>= num_tokens, num_heads, head_size_v]
  void* key_cache;
  void* value_cache;
  const long long* slot_mapping;  // [num_tokens]
  const float* k_scale;           // fp8 caches only
  const float* v_scale;
  long long scale_head_stride;

  long long key_row_stride, key_head_stride;
  long long value_row_stride, value_head_stride;
  long long kc_block_stride, kc_page_stride, kc_head_stride;
  long long vc_block_stride, vc_page_stride, vc_head_stride;

  int num_tokens;
  int num_heads;     // kv heads
  int head_size;     // multiples of 8
  int head_size_v;
  int block_size;    // tokens per page
  long long num_slots;  // num_blocks * block_size

  // int8 caches (kCacheInt8Qkv, kCacheInt8Qk; attention-semantics.md §5.2): each token's key row is
  // quantised per head, symmetric: scale = amax / 127, stored k8 = round(k / scale) (0 for an
  // all-zero row, whose scale is 0), the scale into key_scale_cache[page, head, pos] (the fork's
  // [num_blocks, Hkv, block_size]). kCacheInt8Qkv stores v8 = clamp(round(v / v_scale[head, d]),
  // -127, 127) with the static per-channel v_scale [Hkv, Dv]; kCacheInt8Qk copies the 16-bit value.
  float* key_scale_cache;
};

// The int8 quantiser (the fork's scaled_int8_quant_for_attn, mode 2): x [rows, heads, dim] 16-bit
// -> out int8 and one scale per (row, head), symmetric as the int8 key cache above. Scales at
// row * scale_row_stride + head * scale_head_stride ([T, H] or the fork's [H, T]).
struct Int8QuantizeParams {
  const void* x;
  signed char* out;
  float* scale;
  long long x_row_stride, x_head_stride;
  long long out_row_stride, out_head_stride;
  long long scale_row_stride, scale_head_stride;
  int num_rows;
  int num_heads;
  int head_size;     // a multiple of 8, at most 256 (a warp's lanes hold one 8-element chunk each)
};

// Launch shapes, shared by the planner, the host argument code and the templates.
constexpr int kMergeThreads = 128;          // grid (tokens * head_size / 8 / 128, heads): a chunk per thread
constexpr int kCacheWriteThreads = 128;     // one token per block, threads over (head, chunk)
constexpr int kLseCorrectThreads = 128;     // as merge: a 16-byte chunk per thread, grid y = heads

// Cache element encodings (the traits' kCache).
constexpr int kCacheSame = 0;      // the model's 16-bit dtype, copied bit for bit
constexpr int kCacheFp8E4m3 = 1;   // float8 e4m3fn, max 448
constexpr int kCacheFp8E5m2 = 2;   // float8 e5m2, max 57344
constexpr int kCacheInt8Qkv = 3;   // int8 K (per-token scales) and int8 V (static per-channel scales)
constexpr int kCacheInt8Qk = 4;    // int8 K (per-token scales) and the 16-bit V

}  // namespace attnc
