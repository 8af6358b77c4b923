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
// How contiguous int8_qkv gets its fp16 V: the heuristic's choice (kVPrewidenIsDefault), widened
// by the producer per (query block, head), or once per call into the workspace (v_prewiden, with
// int8_qk's tiles). The dispatcher asks for `producer` where the workspace cannot hold V.
enum class VWiden { heuristic, producer, once_per_call };
Config default_prefill_sm90_config(const Spec&, KernelKind, VWiden = VWiden::heuristic);

// Contiguous int8_qkv with V widened once per call (Config::v_prewiden) as the heuristic's choice:
// 1.137 -> 0.938 ms at B4 S4096 d128 causal on the H200 (docs/kernels-int8.md).
inline constexpr bool kVPrewidenIsDefault = true;

// The workspace a v_prewiden kernel needs for `total_k` rows of V (its fp16 copy [total_k, Hkv,
// Dv]); 0 for every other kernel.
size_t v_prewiden_workspace_bytes(const KernelPlan&, long long total_k);

// Shared memory of a config: the Q tile, `stages` K and V tiles (rows padded to 64 columns), an
// output tile when persistent, the barriers (one more when paged, one more when persistent) and
// 1 KiB to align the tiles.
int prefill_sm90_smem_bytes(const Spec&, const Config&, KernelKind);

// Throws NotSupportedYet (prefill_sm90_refusal) or BadConfig; fills the sm90 fields of `p`.
void plan_prefill_sm90(const Spec&, KernelKind, const Config&, const ArchInfo&, KernelPlan& p);

}  // namespace attnc
