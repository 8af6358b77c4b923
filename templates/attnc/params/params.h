// Kernel parameters: one POD struct per family, included by the host compiler and by NVRTC, so host
// and device cannot disagree on layout. Builtin types only (NVRTC has no C library headers).
// Strides are in elements and 64-bit; the last dimension of every tensor is contiguous.
#pragma once

namespace attnc {

// Attention forward (families prefill_sm80 and decode_split):
//   q [total_q, Hq, D], o [total_q, Hq, Dv] (any row/head strides)
//   lse: [Hq, total_q] (head-major) or [total_q, Hq] (token-major) fp32, or null
//
// Query lengths: cu_seqlens_q [batch + 1] int32 prefix sums; null means one query token per request
// (plain decode: request b's token is row b).
//
// K/V, contiguous (compiled without kPaged): k [total_k, Hkv, D], v [total_k, Hkv, Dv], lengths from
// cu_seqlens_k.
//
// K/V, paged (compiled with kPaged), of 16-bit elements or, with an fp8 kKvCache, of fp8 bytes
// (strides in elements either way): token t of a request lives in page pages[t / page_size] at slot
// t % page_size; element (page, slot, head, d) of K is at k + page * k_block_stride + slot *
// k_row_stride + head * k_head_stride + d (V alike). This covers vLLM's (2, nb, bs, Hkv, D), the
// int8 fork's (2, nb, Hkv, bs, D) and FlashInfer's (nb, 2, bs|Hkv, ...) by strides alone.
// The page list and KV length of request b come from exactly one of three forms:
//   kv_indptr set   (FlashInfer): pages = kv_indices + kv_indptr[b] (indptr need not start at 0),
//                   length = (kv_indptr[b+1] - kv_indptr[b] - 1) * page_size + kv_last_page_len[b]
//   seqused_k set   (FlashAttention): pages = block_table + b * block_table_stride,
//                   length = seqused_k[b]
//   otherwise       (the int8 fork): pages = block_table + b * block_table_stride,
//                   length = cu_seqlens_k[b+1] - cu_seqlens_k[b]
//
// Split-KV (num_splits > 1): the KV range of each (request, kv head) is cut into num_splits parts;
// part s writes unnormalised-free partial results o_partial [num_splits, total_q, Hq, Dv] (fp32,
// normalised within the part) and lse_partial [num_splits, total_q, Hq] (fp32, base 2), and the
// combine entry merges them into o and lse. num_splits == 1 writes o and lse directly.
struct AttentionParams {
  const void* q;
  const void* k;
  const void* v;
  void* o;
  float* lse;
  const int* cu_seqlens_q;
  const int* cu_seqlens_k;

  // Paged KV.
  const int* seqused_k;
  const int* block_table;
  long long block_table_stride;  // in ints
  const int* kv_indptr;
  const int* kv_indices;
  const int* kv_last_page_len;
  int page_size;                 // tokens per page, a multiple of 16
  long long k_block_stride, v_block_stride;

  long long q_row_stride, q_head_stride;
  long long k_row_stride, k_head_stride;
  long long v_row_stride, v_head_stride;
  long long o_row_stride, o_head_stride;
  long long lse_row_stride, lse_head_stride;  // in floats; set by the host from the LSE layout

  int batch;
  int num_q_heads;
  int num_kv_heads;
  int max_seqlen_q;          // bounds the grid; lengths themselves come from cu_seqlens
  int total_q;               // rows of q (partials are indexed by it)

  float scale_log2;          // softmax_scale * log2(e): scores are kept in base 2
  float softcap;             // cap > 0 when the spec has softcap
  float softcap_inv_scale;   // softmax_scale / cap
  int window_left;           // -1 = unbounded (used by sliding-window masks)
  int window_right;

  const float* alibi_slopes;       // [Hq] or [batch, Hq] (alibi_batch_stride), natural-log units
  long long alibi_batch_stride;    // 0: one slope per head for every request
  const float* sinks;              // [Hq] raw logits (not scaled), natural-log units

  int num_splits;                  // >= 1
  float* o_partial;
  float* lse_partial;

  // MLA decode (mla_decode): q_pe [total_q, Hq, 64] given apart from q_nope (then q holds the
  // first 512 columns); null when q holds all 576.
  const void* q_pe;
  long long q_pe_row_stride, q_pe_head_stride;
  // fp8 paged caches (traits kKvCache): element = stored byte * k_scale[0] * k_descale[seq, kv head]
  // (V alike); each pointer may be null (factor 1). Strides in floats (0: broadcast, as .expand()).
  const float* k_scale;
  const float* v_scale;
  const float* k_descale;
  const float* v_descale;
  long long k_descale_batch_stride, k_descale_head_stride;
  long long v_descale_batch_stride, v_descale_head_stride;
  // int8 attention (compiled with kInt8, features/int8_scales.cuh; attention-semantics.md §5.2).
  // q and k hold int8 (v too with Int8Mode::qkv). Their strides above are then in 2-byte units
  // (the host halves the element strides, which are multiples of 8), so the 16-bit row addressing
  // of KvSource and the Q rows reaches their rows unchanged.
  //   q_scale: (token row, q head) at row * q_scale_row_stride + head * q_scale_head_stride
  //            ([T, H] or [H, T]); score = softmax_scale * q_scale * k_token_scale * sum(q8 * k8)
  //   k_token_scale: key (page, slot, kv head) at page * k_token_scale_block_stride
  //            + slot * k_token_scale_row_stride + head * k_token_scale_head_stride (the fork's
  //            [num_blocks, Hkv, block_size]); contiguous K: key row t at
  //            t * k_token_scale_row_stride + head * k_token_scale_head_stride ([total_k, Hkv])
  //   v_channel_scale: [Hkv, Dv] per channel (Int8Mode::qkv): o = v_channel_scale * sum(p * v8)
  const float* q_scale;
  long long q_scale_row_stride, q_scale_head_stride;
  const float* k_token_scale;
  long long k_token_scale_row_stride, k_token_scale_head_stride, k_token_scale_block_stride;
  const float* v_channel_scale;
  // The host's bound on KV lengths (0: unknown): decode_bw sizes its split-KV parts from it
  // (block_range_even_parts).
  int max_seqlen_k;
  // prefill_sm90 v_prewiden (int8_qkv, contiguous): `<entry>_widen_v` widens the total_k rows of the
  // int8 v into v_wide, the dense [total_k, Hkv, Dv] fp16 workspace the kernel then reads as V.
  unsigned short* v_wide;
  int total_k;
  // Paged v_prewiden: rows of v_wide per request (max_seqlen_k rounded up to key tiles); request
  // b's key n is row b * v_wide_request_rows + n, gathered from its page by `<entry>_widen_v`.
  int v_wide_request_rows;
};

}  // namespace attnc
