// Where key token n of one (request, kv head) lives: contiguous varlen rows, or a paged cache in
// any of the three page-table forms (see AttentionParams in attnc/params/params.h). Every family loads
// K/V tiles through this piece, so the layouts are written once.
#pragma once

#include "attnc/params/params.h"
#include "attnc/core/ptx.cuh"

namespace attnc {

// Rows `stride` elements apart from `base`, as SmemTile::load_rows_async wants them. The compiler
// strength-reduces this form across a thread's rows.
template <class KE>
struct StridedRows {
  const KE* base;
  long long stride;
  __device__ const KE* operator()(int r) const { return base + r * stride; }
};

// The K and V rows of 16 consecutive keys (KvSource::group).
template <class KE>
struct KvGroup {
  StridedRows<KE> k, v;
};

// KE: the cache's element, u16 (the model's dtype) or u8 (fp8, features/kv_fp8.cuh).
template <bool PAGED, class KE = u16>
struct KvSource;

template <class KE>
struct KvSource<false, KE> {
  const KE* k;
  const KE* v;
  long long k_row, v_row;
  int sk;  // KV length of the request

  __device__ KvSource(const AttentionParams& p, int seq, int kv_head) {
    const int begin = p.cu_seqlens_k[seq];
    sk = p.cu_seqlens_k[seq + 1] - begin;
    k_row = p.k_row_stride;
    v_row = p.v_row_stride;
    k = static_cast<const KE*>(p.k) + begin * k_row + kv_head * p.k_head_stride;
    v = static_cast<const KE*>(p.v) + begin * v_row + kv_head * p.v_head_stride;
  }
  __device__ const KE* k_at(int n) const { return k + n * k_row; }
  __device__ const KE* v_at(int n) const { return v + n * v_row; }

  // Rows of the tile starting at key n0: contiguous rows are a base plus a stride.
  __device__ StridedRows<KE> k_rows(int n0) const { return {k_at(n0), k_row}; }
  __device__ StridedRows<KE> v_rows(int n0) const { return {v_at(n0), v_row}; }
  // The 16 keys from n (a multiple of 16): the same form.
  __device__ KvGroup<KE> group(int n) const { return {k_rows(n), v_rows(n)}; }
};

template <class KE>
struct KvSource<true, KE> {
  const KE* k;
  const KE* v;
  const int* pages;  // physical page of each logical page of the request
  int page_size;
  long long k_row, v_row, k_block, v_block;
  int sk;

  __device__ KvSource(const AttentionParams& p, int seq, int kv_head) {
    page_size = p.page_size;
    if (p.kv_indptr) {
      const int lo = p.kv_indptr[seq], hi = p.kv_indptr[seq + 1];
      pages = p.kv_indices + lo;
      sk = hi > lo ? (hi - lo - 1) * page_size + p.kv_last_page_len[seq] : 0;
    } else {
      pages = p.block_table + seq * p.block_table_stride;
      sk = p.seqused_k ? p.seqused_k[seq] : p.cu_seqlens_k[seq + 1] - p.cu_seqlens_k[seq];
    }
    k_row = p.k_row_stride; v_row = p.v_row_stride;
    k_block = p.k_block_stride; v_block = p.v_block_stride;
    k = static_cast<const KE*>(p.k) + kv_head * p.k_head_stride;
    v = static_cast<const KE*>(p.v) + kv_head * p.v_head_stride;
  }
  __device__ const KE* k_at(int n) const {
    const int lp = n / page_size;
    return k + pages[lp] * k_block + (n - lp * page_size) * k_row;
  }
  __device__ const KE* v_at(int n) const {
    const int lp = n / page_size;
    return v + pages[lp] * v_block + (n - lp * page_size) * v_row;
  }

  // Rows of the tile starting at key n0: each row looks up its page.
  struct KRows {
    const KvSource* src;
    int n0;
    __device__ const KE* operator()(int r) const { return src->k_at(n0 + r); }
  };
  struct VRows {
    const KvSource* src;
    int n0;
    __device__ const KE* operator()(int r) const { return src->v_at(n0 + r); }
  };
  __device__ KRows k_rows(int n0) const { return {this, n0}; }
  __device__ VRows v_rows(int n0) const { return {this, n0}; }

  // The 16 keys from n (a multiple of 16, n < sk). Page sizes are multiples of 16, so they lie in
  // one page: one page-table read and one base pointer serve all 16 rows.
  __device__ KvGroup<KE> group(int n) const {
    const int lp = n / page_size;
    const long long page = pages[lp];
    const int slot = n - lp * page_size;
    return {{k + page * k_block + slot * k_row, k_row}, {v + page * v_block + slot * v_row, v_row}};
  }
};

}  // namespace attnc
