#include "check/page_table_builder.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace attnc {

const char* to_string(PageTableForm f) {
  switch (f) {
    case PageTableForm::seqused_k: return "seqused_k";
    case PageTableForm::cu_seqlens_k: return "cu_seqlens_k";
    case PageTableForm::flashinfer: return "flashinfer";
  }
  return "?";
}

const std::vector<PageTableForm>& all_page_table_forms() {
  static const std::vector<PageTableForm> all = {PageTableForm::seqused_k, PageTableForm::cu_seqlens_k,
                                                 PageTableForm::flashinfer};
  return all;
}

PageTableForm parse_page_table_form(const std::string& name) {
  std::string allowed;
  for (PageTableForm f : all_page_table_forms()) {
    if (name == to_string(f)) return f;
    allowed += (allowed.empty() ? "" : ", ") + std::string(to_string(f));
  }
  throw std::invalid_argument("unknown page-table form '" + name + "'; allowed: " + allowed);
}

int HostPageTable::pages_used() const {
  int n = 0;
  for (const auto& p : pages) n += int(p.size());
  return n;
}

HostPageTable build_page_table(const std::vector<int>& seqlens_k, const PageTableOptions& opt, std::mt19937_64& rng) {
  if (opt.page_size < 1) throw std::invalid_argument("page table: page_size must be >= 1");
  if (opt.column_offset < 0 || opt.indptr_offset < 0)
    throw std::invalid_argument("page table: column_offset and indptr_offset must be >= 0");
  HostPageTable t;
  t.options = opt;
  const int bs = opt.page_size, batch = int(seqlens_k.size());
  long long needed = 1;  // the decoy
  for (int len : seqlens_k) {
    if (len < 0) throw std::invalid_argument("page table: negative KV length");
    needed += (len + bs - 1) / bs;
  }
  if (needed > opt.num_blocks)
    throw std::invalid_argument("page table: the batch needs " + std::to_string(needed) +
                                " pages (with the decoy) but the cache has " + std::to_string(opt.num_blocks));

  // Distinct pages by a partial Fisher-Yates shuffle; slot 0 is pinned to the top page, then the
  // used pages are shuffled among themselves so the top page lands in a random request.
  std::vector<int> perm(opt.num_blocks);
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[0], perm.back());
  for (long long i = 1; i < needed; ++i) {
    std::uniform_int_distribution<long long> pick(i, opt.num_blocks - 1);
    std::swap(perm[i], perm[pick(rng)]);
  }
  t.decoy_page = perm[needed - 1];
  std::shuffle(perm.begin(), perm.begin() + (needed - 1), rng);
  long long next = 0;
  t.pages.resize(batch);
  for (int b = 0; b < batch; ++b) {
    t.pages[b].assign(perm.begin() + next, perm.begin() + next + (seqlens_k[b] + bs - 1) / bs);
    next += t.pages[b].size();
  }

  if (opt.form == PageTableForm::flashinfer) {
    t.kv_indices.assign(opt.indptr_offset, t.decoy_page);
    t.kv_indptr.push_back(opt.indptr_offset);
    for (int b = 0; b < batch; ++b) {
      t.kv_indices.insert(t.kv_indices.end(), t.pages[b].begin(), t.pages[b].end());
      t.kv_indptr.push_back(int(t.kv_indices.size()));
      const int rest = seqlens_k[b] % bs;
      t.kv_last_page_len.push_back(seqlens_k[b] == 0 ? 0 : rest ? rest : bs);
    }
    t.kv_indices.push_back(t.decoy_page);  // trailing padding, as a scheduler's preallocated list has
    t.kv_indices.push_back(t.decoy_page);
    return t;
  }

  for (const auto& p : t.pages) t.max_blocks_per_seq = std::max<int>(t.max_blocks_per_seq, int(p.size()));
  t.max_blocks_per_seq = std::max(1, t.max_blocks_per_seq);
  t.table_stride = opt.column_offset + t.max_blocks_per_seq + 1;
  t.block_table.assign(size_t(batch) * t.table_stride, t.decoy_page);
  for (int b = 0; b < batch; ++b)
    std::copy(t.pages[b].begin(), t.pages[b].end(), t.block_table.begin() + b * t.table_stride + opt.column_offset);
  if (opt.form == PageTableForm::seqused_k) {
    t.seqused_k = seqlens_k;
  } else {
    t.cu_seqlens_k.assign(batch + 1, 0);
    for (int b = 0; b < batch; ++b) t.cu_seqlens_k[b + 1] = t.cu_seqlens_k[b] + seqlens_k[b];
  }
  return t;
}

}  // namespace attnc
