// Planning of prefill_sm90 (templates/attnc/families/prefill_sm90.cuh): wgmma + TMA with a producer
// warpgroup and 2 or 3 consumer warpgroups of 64 rows each. Its Config: block_m = 64 * consumer
// warpgroups (128 or 192), warps = all warps of the block (block_m / 16 + 4), block_n, stages,
// pingpong, persistent (contiguous K/V only). It reads contiguous K/V or a paged cache (TMA per
// page, prefill_sm90_paged.cuh). What it cannot take stays on prefill_sm80, and
// prefill_sm90_refusal says why.
#pragma once

#include <cstddef>
#include <string>

#include "generator/plan/plan.h"

namespace attnc {

inline constexpr const char* kPrefillSm90 = "prefill_sm90";

// Why prefill_sm90 cannot make this kernel ("" when it can): the arch, the kind (prefill over
// contiguous K/V, or a paged 16-bit or int8 cache), head dims.
std::string prefill_sm90_refusal(const Spec&, KernelKind, const std::string& arch);

// The default tiles: 3 x 64 rows at d <= 64, 2 x 64 above; block_n 128, narrowed in steps of 16
// until two stages fit shared memory (112 at d192, 80 at d256). FlashAttention-3's 176 for
// unmasked d128 measured slower on the H200 (docs/kernels-prefill-sm90.md). Block-sparse
// contiguous prefill runs persistent blocks, of 2 x 64 rows at d <= 128 (Q in registers;
// docs/kernels-block-sparse.md).
// How int8_qkv prefill gets its fp16 V: the heuristic's choice (kVPrewidenIsDefault, paged
// kPagedVPrewidenIsDefault), widened by the producer per (query block, head), or once per call into
// the workspace (v_prewiden, with int8_qk's tiles). The dispatcher asks for `producer` where the
// workspace cannot hold V.
enum class VWiden { heuristic, producer, once_per_call };
Config default_prefill_sm90_config(const Spec&, KernelKind, VWiden = VWiden::heuristic);

// Contiguous int8_qkv with V widened once per call (Config::v_prewiden) as the heuristic's choice:
// 1.137 -> 0.938 ms at B4 S4096 d128 causal on the H200 (docs/kernels-int8.md).
inline constexpr bool kVPrewidenIsDefault = true;

// Paged int8_qkv with V widened once per call, its pages gathered into the workspace by the
// widening pass (the kernel then reads K by pages and V as contiguous rows): 1.122 -> 1.002 ms at
// B4 S4096 d128 causal, fork HND page 16, on the H200 (paged int8_qk 0.989; docs/kernels-int8.md).
inline constexpr bool kPagedVPrewidenIsDefault = true;

// The rows of the fp16 V a v_prewiden kernel widens into its workspace ([rows, Hkv, Dv]):
// contiguous, the call's total_k; paged, `batch` requests of v_prewiden_request_rows each (request
// b's key n at row b * that + n), -1 when max_seqlen_k is unknown (0): then the kernel that widens
// V in its producer serves the call.
long long v_prewiden_rows(const KernelPlan&, int batch, int max_seqlen_k, long long total_k);
// Paged: one request's rows, max_seqlen_k rounded up to whole key tiles (the pass zeroes the rows
// from a request's end to its last tile's, so P = 0 never meets stale workspace).
long long v_prewiden_request_rows(const KernelPlan&, int max_seqlen_k);
// The workspace a v_prewiden kernel needs for `rows` rows of V (v_prewiden_rows; its fp16 copy
// [rows, Hkv, Dv]); 0 for every other kernel.
size_t v_prewiden_workspace_bytes(const KernelPlan&, long long rows);

// Shared memory of a config: the Q tile, `stages` K and V tiles (rows padded to 64 columns), an
// output tile when persistent, the barriers (one more when paged, one more when persistent) and
// 1 KiB to align the tiles.
int prefill_sm90_smem_bytes(const Spec&, const Config&, KernelKind);

// Throws NotSupportedYet (prefill_sm90_refusal) or BadConfig; fills the sm90 fields of `p`.
void plan_prefill_sm90(const Spec&, KernelKind, const Config&, const ArchInfo&, KernelPlan& p);

}  // namespace attnc
