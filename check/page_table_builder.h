// Host-side page tables for test calls, in each of the three forms the paged kernels take
// (templates/attnc/params/params.h): block_table + seqused_k (FlashAttention), block_table + cu_seqlens_k
// (the int8 fork), kv_indptr / kv_indices / kv_last_page_len (FlashInfer). Built to catch the
// usual addressing bugs: every request gets distinct random physical pages and the top page of the
// cache is always one of them (a 32-bit page * stride overflows there); the block table can be a
// column-offset view of a wider table (cascade's block_table[:, n:]); FlashInfer's indptr starts
// past unused leading entries (decode's paged_kv_indptr[num_prefills:]). Every table entry that no
// request owns points at the decoy page, which no request uses: reading it shows up as NaN.
#pragma once

#include <random>
#include <string>
#include <vector>

namespace attnc {

enum class PageTableForm { seqused_k, cu_seqlens_k, flashinfer };

const char* to_string(PageTableForm);
const std::vector<PageTableForm>& all_page_table_forms();
// Throws std::invalid_argument listing the allowed names.
PageTableForm parse_page_table_form(const std::string& name);

struct PageTableOptions {
  PageTableForm form = PageTableForm::seqused_k;
  int page_size = 16;
  int num_blocks = 32768;   // pages in the cache
  int column_offset = 0;    // block-table forms: leading columns the call's pointer skips
  int indptr_offset = 0;    // FlashInfer: unused kv_indices entries before the first request's pages
};

struct HostPageTable {
  PageTableOptions options;
  std::vector<std::vector<int>> pages;  // per request: the physical page of each logical page
  int decoy_page = -1;

  // Block-table forms. The call's block_table is block_table.data() + column_offset with row
  // stride table_stride; each row has column_offset leading columns, max_blocks_per_seq usable
  // ones and one spare column.
  std::vector<int> block_table;
  long long table_stride = 0;
  int max_blocks_per_seq = 0;
  std::vector<int> seqused_k;     // form seqused_k
  std::vector<int> cu_seqlens_k;  // form cu_seqlens_k

  // FlashInfer form: kv_indptr[0] = indptr_offset; kv_indices has indptr_offset leading and two
  // trailing unused entries.
  std::vector<int> kv_indptr, kv_indices, kv_last_page_len;

  int pages_used() const;
};

// Throws std::invalid_argument when the cache cannot hold the batch plus the decoy page, or for a
// page size below 1.
HostPageTable build_page_table(const std::vector<int>& seqlens_k, const PageTableOptions&, std::mt19937_64& rng);

}  // namespace attnc
