// Kernel parameters: one POD struct per family, included by the host compiler and by NVRTC, so host
// and device cannot disagree on layout. Builtin types only (NVRTC has no C library headers).
// Strides are in elements and 64-bit; the last dimension of every tensor is contiguous.
#pragma once

namespace attnc {

// Varlen prefill over contiguous Q/K/V:
//   q [total_q, Hq, D], k [total_k, Hkv, D], v [total_k, Hkv, Dv], o [total_q, Hq, Dv]
//   cu_seqlens_q/k [batch + 1] int32 prefix sums (device memory)
//   lse: [Hq, total_q] (head-major) or [total_q, Hq] (token-major) fp32, or null
struct PrefillParams {
  const void* q;
  const void* k;
  const void* v;
  void* o;
  float* lse;
  const int* cu_seqlens_q;
  const int* cu_seqlens_k;

  long long q_row_stride, q_head_stride;
  long long k_row_stride, k_head_stride;
  long long v_row_stride, v_head_stride;
  long long o_row_stride, o_head_stride;
  long long lse_row_stride, lse_head_stride;  // in floats; set by the host from the LSE layout

  int batch;
  int num_q_heads;
  int num_kv_heads;
  int max_seqlen_q;          // bounds the grid; lengths themselves come from cu_seqlens

  float scale_log2;          // softmax_scale * log2(e): scores are kept in base 2
  float softcap;             // cap > 0 when the spec has softcap
  float softcap_inv_scale;   // softmax_scale / cap
  int window_left;           // -1 = unbounded (used by sliding-window masks)
  int window_right;
};

}  // namespace attnc
