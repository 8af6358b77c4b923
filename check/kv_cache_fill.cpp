#include "check/kv_cache_fill.h"

#include <algorithm>

#include "check/half.h"

namespace attnc {

void for_each_page_image(const KvCacheStrides& s, const HostPageTable& t, const std::vector<int>& cu_k,
                         const std::vector<std::uint16_t>& k, const std::vector<std::uint16_t>& v, int d, int dv,
                         const std::function<void(long long, const std::vector<std::uint16_t>&)>& write) {
  std::vector<std::uint16_t> img(s.page_elems);
  const int bs = s.block_size, hkv = s.num_kv_heads;
  for (size_t r = 0; r < t.pages.size(); ++r)
    for (size_t j = 0; j < t.pages[r].size(); ++j) {
      const long long page = t.pages[r][j];
      const int slots = std::min<int>(bs, cu_k[r + 1] - cu_k[r] - int(j) * bs);
      for (int plane = 0; plane < 2; ++plane) {
        const int dim = plane ? dv : d;
        const std::vector<std::uint16_t>& src = plane ? v : k;
        std::fill(img.begin(), img.end(), kHalfPoison);
        for (int slot = 0; slot < slots; ++slot) {
          const size_t token = size_t(cu_k[r]) + j * bs + slot;
          for (int h = 0; h < hkv; ++h)
            std::copy_n(src.begin() + (token * hkv + h) * dim, dim, img.begin() + s.in_page(slot, h, 0));
        }
        write(plane ? s.v_index(page, 0, 0, 0) : s.k_index(page, 0, 0, 0), img);
      }
    }
}

}  // namespace attnc
