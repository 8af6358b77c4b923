// prefill_sm90 v_prewiden (int8_qkv): the module's `<entry>_widen_v`, launched before the
// attention kernel on the same stream, widens the whole int8 V [total_k, Hkv, Dv] (any row and head
// strides, 16-byte aligned) into the dense fp16 workspace p.v_wide [total_k, Hkv, Dv], which the
// kernel then loads by TMA as int8_qk loads its 16-bit V. Paged: the pages each request's table
// names, gathered into its own rows of the workspace (run_paged), which the kernel reads as
// contiguous rows, one box per key tile, while K stays paged. Once per call instead of once per (query
// block, q head) in the producer (128 times at B4 S4096 g4), with the producer's conversion (the same
// fp16 bits: exact for int8). One 16-byte piece of a row per thread: memory-bound, 3 bytes moved per
// value (docs/kernels-int8.md, "V widened once per call").
#pragma once

#include "attnc/families/prefill_sm90.cuh"
#include "attnc/features/kv_source.cuh"
#include "attnc/params/widen_v_shape.h"

namespace attnc {

template <class T>
struct PrefillWidenV {
  using Int8 = typename PrefillSm90<T>::Int8;
  static constexpr int DV = T::kHeadDimV;
  static constexpr int kPieces = DV / 16;  // 16-byte pieces of an int8 row (the planner takes Dv % 16 == 0)
  static_assert(DV % 16 == 0, "int8 V rows in 16-byte pieces");

  // 16 int8 values at `in_bytes` to 16 fp16 ones (the producer's conversion) at `out_values`.
  __device__ static void widen_piece(const unsigned char* in_bytes, unsigned short* out_values) {
    const uint4 in = __ldg(reinterpret_cast<const uint4*>(in_bytes));
    const u32 a = in.x ^ 0x80808080u, b = in.y ^ 0x80808080u, c = in.z ^ 0x80808080u, d = in.w ^ 0x80808080u;
    uint4* out = reinterpret_cast<uint4*>(out_values);
    out[0] = make_uint4(Int8::widen4_lo(a), Int8::widen4_hi(a), Int8::widen4_lo(b), Int8::widen4_hi(b));
    out[1] = make_uint4(Int8::widen4_lo(c), Int8::widen4_hi(c), Int8::widen4_lo(d), Int8::widen4_hi(d));
  }

  __device__ static void run(const AttentionParams& p) {
    if constexpr (T::kPaged) run_paged(p);
    else run_contiguous(p);
  }

  __device__ static void run_contiguous(const AttentionParams& p) {
    const long long pieces = (long long)p.total_k * p.num_kv_heads * kPieces;
    const unsigned char* v = static_cast<const unsigned char*>(p.v);
    for (long long i = (long long)blockIdx.x * kWidenVThreads + threadIdx.x; i < pieces;
         i += (long long)gridDim.x * kWidenVThreads) {
      const int piece = int(i % kPieces);
      const long long row_head = i / kPieces;  // row * Hkv + head: the workspace's row of Dv values
      const long long row = row_head / p.num_kv_heads;
      const int head = int(row_head - row * p.num_kv_heads);
      // The int8 strides are in 2-byte units (int8_args.cpp halves them).
      widen_piece(v + 2 * (row * p.v_row_stride + head * p.v_head_stride) + piece * 16,
                  p.v_wide + row_head * DV + piece * 16);
    }
  }

  // Paged: blockIdx.y is the request. Its key n (< sk) is read from its page (KvSource's page
  // tables, every form) into row r0 + n of the workspace, r0 = request * v_wide_request_rows; rows
  // [sk, its last key tile's end) get zeros (P = 0 there, and the workspace may hold NaN); the rest
  // of its rows no key tile reads. Page-table entries past the request's pages are never read.
  __device__ static void run_paged(const AttentionParams& p) {
    const int seq = blockIdx.y;
    const KvSource<true> src(p, seq, 0);
    const int tiles_end = (src.sk + T::kBlockN - 1) / T::kBlockN * T::kBlockN;
    // A request longer than the call's max_seqlen_k (a caller's error the host cannot see in device
    // lengths) would spill into the next request's rows or past the workspace: its own rows become
    // NaN instead, so its output is NaN, and nothing is written outside them.
    const bool too_long = tiles_end > p.v_wide_request_rows;
    const int rows = too_long ? p.v_wide_request_rows : tiles_end;
    const int pieces = rows * p.num_kv_heads * kPieces;  // < 2^30: set_v_prewiden bounds it
    const unsigned char* v = static_cast<const unsigned char*>(p.v);
    unsigned short* const wide = p.v_wide + (long long)seq * p.v_wide_request_rows * p.num_kv_heads * DV;
    for (int i = blockIdx.x * kWidenVThreads + threadIdx.x; i < pieces; i += gridDim.x * kWidenVThreads) {
      const int piece = i % kPieces;
      const int row_head = i / kPieces;  // n * Hkv + head: the workspace's row of Dv values
      const int n = row_head / p.num_kv_heads;
      const int head = row_head - n * p.num_kv_heads;
      unsigned short* const out = wide + (long long)row_head * DV + piece * 16;
      if (too_long || n >= src.sk) {  // fp16 NaN pairs, or zeros past the request's end
        const u32 fill = too_long ? 0x7e007e00u : 0u;
        reinterpret_cast<uint4*>(out)[0] = make_uint4(fill, fill, fill, fill);
        reinterpret_cast<uint4*>(out)[1] = make_uint4(fill, fill, fill, fill);
        continue;
      }
      const int lp = n / src.page_size, slot = n - lp * src.page_size;
      widen_piece(v + 2 * (src.pages[lp] * p.v_block_stride + slot * p.v_row_stride + head * p.v_head_stride) +
                      piece * 16,
                  out);
    }
  }
};

}  // namespace attnc
