#include "runtime/launch/kv_cache_layout.h"

#include <algorithm>
#include <stdexcept>

#include "runtime/launch/attention_args.h"

namespace attnc {

const char* to_string(KvCacheLayout l) {
  switch (l) {
    case KvCacheLayout::vllm: return "vllm";
    case KvCacheLayout::fork_hnd: return "fork_hnd";
    case KvCacheLayout::flashinfer_nhd: return "flashinfer_nhd";
    case KvCacheLayout::flashinfer_hnd: return "flashinfer_hnd";
  }
  return "?";
}

const std::vector<KvCacheLayout>& all_kv_cache_layouts() {
  static const std::vector<KvCacheLayout> all = {KvCacheLayout::vllm, KvCacheLayout::fork_hnd,
                                                 KvCacheLayout::flashinfer_nhd, KvCacheLayout::flashinfer_hnd};
  return all;
}

KvCacheLayout parse_kv_cache_layout(const std::string& name) {
  std::string allowed;
  for (KvCacheLayout l : all_kv_cache_layouts()) {
    if (name == to_string(l)) return l;
    allowed += (allowed.empty() ? "" : ", ") + std::string(to_string(l));
  }
  throw std::invalid_argument("unknown KV cache layout '" + name + "'; allowed: " + allowed);
}

KvCacheStrides kv_cache_strides(KvCacheLayout layout, int num_blocks, int block_size, int num_kv_heads,
                                int head_dim, int head_dim_v) {
  if (num_blocks < 1 || block_size < 1 || num_kv_heads < 1)
    throw std::invalid_argument("KV cache: num_blocks, block_size and num_kv_heads must be >= 1");
  if (head_dim < 8 || head_dim_v < 8 || head_dim % 8 || head_dim_v % 8)
    throw std::invalid_argument("KV cache: head dims must be positive multiples of 8 (16-byte rows)");
  KvCacheStrides s;
  s.layout = layout;
  s.num_blocks = num_blocks;
  s.block_size = block_size;
  s.num_kv_heads = num_kv_heads;
  s.row_dim = std::max(head_dim, head_dim_v);
  const long long dim = s.row_dim, bs = block_size, hkv = num_kv_heads, nb = num_blocks;
  const bool nhd = layout == KvCacheLayout::vllm || layout == KvCacheLayout::flashinfer_nhd;
  s.row_stride = nhd ? hkv * dim : dim;
  s.head_stride = nhd ? dim : bs * dim;
  s.page_elems = bs * hkv * dim;
  const bool planes_outer = layout == KvCacheLayout::vllm || layout == KvCacheLayout::fork_hnd;
  if (planes_outer) {  // (2, nb, page): the V plane follows the whole K plane
    s.block_stride = s.page_elems;
    s.k_offset = 0;
    s.v_offset = nb * s.page_elems;
  } else {             // (nb, 2, page): a block holds its K page, then its V page
    s.block_stride = 2 * s.page_elems;
    s.k_offset = 0;
    s.v_offset = s.page_elems;
  }
  s.total_elems = 2 * nb * s.page_elems;
  return s;
}

void bind_kv_cache(AttentionArgs& a, const KvCacheStrides& s, const void* cache, int elem_bytes) {
  const auto* base = static_cast<const unsigned char*>(cache);
  a.k = base + s.k_offset * elem_bytes;
  a.v = base + s.v_offset * elem_bytes;
  a.k_row_stride = a.v_row_stride = s.row_stride;
  a.k_head_stride = a.v_head_stride = s.head_stride;
  a.k_block_stride = a.v_block_stride = s.block_stride;
  a.page_size = s.block_size;
  a.num_blocks = s.num_blocks;
}

}  // namespace attnc
