// One reshape_and_cache_flash call (attention-semantics.md §4.2; kernel semantics in
// CacheWriteParams, templates/attnc/params/ops_params.h): arguments in vLLM's order, checked and
// translated into the kernel's params and launch shape. Every bad call is refused with BadCall
// before any launch; with a host copy of slot_mapping, so is a slot that points past the cache.
#pragma once

#include <cuda.h>

#include "attnc/params/ops_params.h"
#include "generator/plan/plan.h"
#include "runtime/launch/attention_args.h"

namespace attnc {

class Kernel;

// vLLM: reshape_and_cache_flash(key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype,
// k_scale, v_scale). The cache dtype is the spec's kv_cache.dtype (compiled in).
struct CacheWriteArgs {
  const void* key = nullptr;     // [>= num_tokens, num_kv_heads, head_dim], may be a view of fused QKV
  const void* value = nullptr;   // [>= num_tokens, num_kv_heads, head_dim_v]
  void* key_cache = nullptr;     // page 0, position 0, head 0 of the key plane
  void* value_cache = nullptr;
  const long long* slot_mapping = nullptr;  // device, int64 [num_tokens]; < 0 skips the token
  const float* k_scale = nullptr;  // fp8 caches: device fp32 [1], or [num_kv_heads] with per_head_scale
  const float* v_scale = nullptr;
  bool per_head_scale = false;

  int num_tokens = 0;     // slot_mapping's length (key and value may have more, padded, rows)
  int num_kv_heads = 0;   // 0: the spec's
  int head_size = 0;      // 0: the spec's head_dim (value: head_dim_v)

  // Element strides of key and value; 0 = contiguous [tokens, num_kv_heads, head].
  long long key_row_stride = 0, key_head_stride = 0;
  long long value_row_stride = 0, value_head_stride = 0;

  int block_size = 0;     // tokens per page (0: the spec's kv_cache.page_size)
  int num_blocks = 0;     // pages in the cache
  // Cache strides in cache elements: between pages, between positions of a page, between heads.
  // All three 0: a cache plane of its own in the spec's layout (NHD [nb, bs, Hkv, D], HND
  // [nb, Hkv, bs, D]). vLLM (2, nb, bs, Hkv, D): block bs*Hkv*D, page Hkv*D, head D. The int8
  // fork (2, nb, Hkv, bs, D): block Hkv*bs*D, page D, head bs*D. FlashInfer (nb, 2, bs, Hkv, D):
  // block 2*bs*Hkv*D, page Hkv*D, head D.
  long long key_cache_block_stride = 0, key_cache_page_stride = 0, key_cache_head_stride = 0;
  long long value_cache_block_stride = 0, value_cache_page_stride = 0, value_cache_head_stride = 0;

  const long long* host_slot_mapping = nullptr;  // optional host copy: checks every slot first

  // int8 caches (the int8 fork's reshape_and_cache_flash_int8 / _mix with the key quantisation
  // fused in; CacheWriteParams): key and value are 16-bit; the key plane holds int8, the per-token
  // key scales go to key_scale_cache [num_blocks, Hkv, block_size] fp32; int8_qkv quantises value
  // with v_scale [Hkv, Dv] (static per channel) into an int8 value plane, int8_qk copies it (16-bit
  // plane). Cache strides count cache elements: bytes in int8 planes, 2-byte units in 16-bit ones.
  float* key_scale_cache = nullptr;
};

// The int8 quantiser (scaled_int8_quant_for_attn, mode 2), the `<entry>_quantize` kernel of an
// int8 spec's cache_write module: x [num_rows, num_heads, head_size] 16-bit -> out int8 and scale,
// per (row, head), symmetric (scale = amax / 127).
struct Int8QuantizeArgs {
  const void* x = nullptr;
  signed char* out = nullptr;
  float* scale = nullptr;
  int num_rows = 0;
  int num_heads = 0;                  // 0: the spec's num_q_heads
  long long x_row_stride = 0, x_head_stride = 0;      // 0: contiguous
  long long out_row_stride = 0, out_head_stride = 0;  // 0: contiguous
  bool scale_head_major = false;      // false: scale [num_rows, heads]; true: the fork's [heads, num_rows]
};
struct Int8QuantizeLaunch {
  Int8QuantizeParams params{};
  GridDims grid, block;
  bool empty = false;
};
Int8QuantizeLaunch prepare_int8_quantize(const KernelPlan&, const Int8QuantizeArgs&);  // throws BadCall
void launch_int8_quantize(const Kernel& quantize, const Int8QuantizeLaunch&, CUstream stream);

struct CacheWriteLaunch {
  CacheWriteParams params{};
  GridDims grid, block;
  bool empty = false;  // num_tokens == 0: nothing to launch
};

CacheWriteLaunch prepare_cache_write(const KernelPlan&, const CacheWriteArgs&);  // throws BadCall

// Enqueues the write on `stream` (nothing when the call is empty); never synchronises.
void launch_cache_write(const Kernel&, const CacheWriteLaunch&, CUstream stream);

}  // namespace attnc
