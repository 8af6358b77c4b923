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
};

struct CacheWriteLaunch {
  CacheWriteParams params{};
  GridDims grid, block;
  bool empty = false;  // num_tokens == 0: nothing to launch
};

CacheWriteLaunch prepare_cache_write(const KernelPlan&, const CacheWriteArgs&);  // throws BadCall

// Enqueues the write on `stream` (nothing when the call is empty); never synchronises.
void launch_cache_write(const Kernel&, const CacheWriteLaunch&, CUstream stream);

}  // namespace attnc
