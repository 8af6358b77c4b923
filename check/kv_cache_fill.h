// The page images of a batch's K/V in a paged cache: for every page a request owns, the K page
// and the V page as they lie in the cache (page_elems contiguous elements each, in the layout's
// slot/head order), with slots past the request's end and the unused tail of V rows (D != Dv)
// left as kHalfPoison. The caller writes them where `offset` says, into a cache poisoned
// everywhere else, so a kernel that reads a wrong page, slot or column sees NaN.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "runtime/launch/kv_cache_layout.h"
#include "check/page_table_builder.h"

namespace attnc {

// k: [total_k, Hkv, D], v: [total_k, Hkv, Dv] dense, rows of request b from cu_seqlens_k[b].
// write(offset, image): offset in elements from the start of the cache buffer.
void for_each_page_image(const KvCacheStrides&, const HostPageTable&, const std::vector<int>& cu_seqlens_k,
                         const std::vector<std::uint16_t>& k, const std::vector<std::uint16_t>& v, int head_dim,
                         int head_dim_v,
                         const std::function<void(long long offset, const std::vector<std::uint16_t>& image)>& write);

}  // namespace attnc
