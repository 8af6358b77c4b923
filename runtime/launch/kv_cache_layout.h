// Named paged KV-cache layouts (attention-semantics.md §4.1) and where K and V live in one buffer
// that holds the whole cache, as AttentionArgs strides. The kernels read any of them through
// (block, row, head) strides; this is the table that turns a layout's name into those strides.
//
//   vllm            (2, num_blocks, block_size, Hkv, D)   K plane, then V plane; per page NHD
//   fork_hnd        (2, num_blocks, Hkv, block_size, D)   the int8 fork's cache; per page HND
//   flashinfer_nhd  (num_blocks, 2, block_size, Hkv, D)   K and V pages interleaved per block
//   flashinfer_hnd  (num_blocks, 2, Hkv, block_size, D)
//
// When D != Dv (e.g. 192 / 128) both planes use the larger dim as their innermost extent and V
// fills only the first Dv elements of each row: one buffer, one set of strides for both planes,
// and the unused tail of a V row is never read (a harness can poison it to prove that).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace attnc {

struct AttentionArgs;

enum class KvCacheLayout { vllm, fork_hnd, flashinfer_nhd, flashinfer_hnd };

const char* to_string(KvCacheLayout);
const std::vector<KvCacheLayout>& all_kv_cache_layouts();
// Throws std::invalid_argument listing the allowed names.
KvCacheLayout parse_kv_cache_layout(const std::string& name);

// Element offsets and strides of one cache buffer. K element (page, slot, head, d) is at
// k_offset + page * block_stride + slot * row_stride + head * head_stride + d; V alike from
// v_offset (d < Dv). One page of one plane is page_elems contiguous elements starting at
// {k,v}_offset + page * block_stride, in every layout.
struct KvCacheStrides {
  KvCacheLayout layout = KvCacheLayout::vllm;
  int num_blocks = 0, block_size = 0, num_kv_heads = 0;
  int row_dim = 0;                  // max(D, Dv): the innermost extent of both planes
  long long k_offset = 0, v_offset = 0;
  long long row_stride = 0, head_stride = 0, block_stride = 0;
  long long page_elems = 0;         // block_size * Hkv * row_dim
  long long total_elems = 0;        // elements of the whole buffer (both planes)

  long long k_index(long long page, int slot, int head, int d) const {
    return k_offset + page * block_stride + slot * row_stride + head * head_stride + d;
  }
  long long v_index(long long page, int slot, int head, int d) const {
    return v_offset + page * block_stride + slot * row_stride + head * head_stride + d;
  }
  // Within one page image (page_elems elements) of either plane.
  long long in_page(int slot, int head, int d) const { return slot * row_stride + head * head_stride + d; }
};

// Throws std::invalid_argument for non-positive sizes or dims that are not multiples of 8.
KvCacheStrides kv_cache_strides(KvCacheLayout, int num_blocks, int block_size, int num_kv_heads, int head_dim,
                                int head_dim_v);

// Points a paged call's k, v, strides, page_size and num_blocks at a cache buffer of 16-bit
// elements (or fp8 bytes: elem_bytes 1) laid out as `s`.
void bind_kv_cache(AttentionArgs&, const KvCacheStrides& s, const void* cache, int elem_bytes = 2);

}  // namespace attnc
