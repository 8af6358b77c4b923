// CPU references for the op families: merge_attn_states and DCP's LSE correction in float64 (both
// LSE bases), and
// reshape_and_cache_flash exactly, with a software fp8 encoder (round to nearest even, saturating
// to the largest finite value) that the GPU must match bit for bit. The oracle for the GPU tests.
#pragma once

#include <cstdint>
#include <vector>

#include "attnc/params/ops_params.h"
#include "generator/spec/spec.h"

namespace attnc {

// Dense tensors: prefix/suffix/out [num_tokens, num_heads, head_size], LSEs [num_tokens, num_heads].
// attention-semantics.md §1.9: +inf LSE counts as -inf; both -inf gives 0 and LSE -inf.
void reference_merge(int num_tokens, int num_heads, int head_size, LseBase base, const std::vector<double>& prefix,
                     const std::vector<double>& prefix_lse, const std::vector<double>& suffix,
                     const std::vector<double>& suffix_lse, std::vector<double>& out, std::vector<double>& out_lse);

// Decode context parallelism's LSE correction (LseCorrectParams): partial/out [T, H, D], lses
// [N, T, H], out_lse [T, H]. NaN and +inf LSEs count as -inf; a rank with no weight gives 0.
void reference_lse_correct(int num_tokens, int num_heads, int head_size, int world_size, int rank, LseBase base,
                           const std::vector<double>& partial, const std::vector<double>& lses,
                           std::vector<double>& out, std::vector<double>& out_lse);

// float -> fp8 byte: round to nearest even, |x| beyond the largest finite value (and +-inf) saturate
// to it, sign kept (-0 -> 0x80), NaN -> 0x7f. e4m3 (e4m3fn): bias 7, max 448, no infinities.
// e5m2: bias 15, max 57344.
std::uint8_t fp8_e4m3_from_float(float x);
std::uint8_t fp8_e5m2_from_float(float x);
double fp8_e4m3_to_double(std::uint8_t b);  // NaN for 0x7f / 0xff
double fp8_e5m2_to_double(std::uint8_t b);  // +-inf for 0x7c / 0xfc, NaN for 0x7d..0x7f (and signed)

// Host images of one cache_write call: the same element strides as `p` (whose pointers are
// ignored), host memory instead of device memory.
struct HostCacheWrite {
  const std::uint16_t* key = nullptr;
  const std::uint16_t* value = nullptr;
  const long long* slot_mapping = nullptr;
  unsigned char* key_cache = nullptr;    // bytes: 2 per element (same) or 1 (fp8)
  unsigned char* value_cache = nullptr;
  std::vector<float> k_scale, v_scale;   // [1] or [num_heads] (p.scale_head_stride 1); fp8 only
};

// What the kernel must write, byte for byte: fp8 bytes are encode(float(x) / scale) with an
// IEEE float division, as the kernel does.
void reference_cache_write(const CacheWriteParams& p, DType dtype, KvDType cache, const HostCacheWrite& h);

}  // namespace attnc
