// mla_decode (templates/attnc/families/mla_decode.cuh): DeepSeek MLA absorbed decode on sm_90a,
// MQA over the 576-wide latent cache (attention-semantics.md §7.3). Its config: 64 packed rows,
// 64-key tiles (one TMA box of a page), two consumer warpgroups and a producer, STAGES tiles in
// flight. The cache is 16-bit (the model's dtype) or fp8 e4m3 / e5m2 with a scale; over an fp8
// cache block_m 16 selects the narrow layout (mla_decode_narrow.cuh: one or two consumers, warps 8
// or 12), the default for at most 16 query heads.
#pragma once

#include <string>

#include "generator/plan/plan.h"

namespace attnc {

inline constexpr const char* kMlaDecode = "mla_decode";

// The latent row and V widths the kernel is built for (DeepSeek-V2/V3: kv_lora_rank 512, RoPE 64).
constexpr int kMlaLatentDim = 512, kMlaRopeDim = 64;
// block_m of the narrow layout (mla_decode_narrow.cuh): 16 rows as the wgmma's N, fp8 caches only.
constexpr int kMlaNarrowRows = 16;

// Why mla_decode cannot make this spec's kernel of this kind ("" when it can).
std::string mla_decode_refusal(const Spec&, KernelKind, const std::string& arch);
Config default_mla_decode_config();
// The default for this spec: block_m 16 over an fp8 cache with at most 16 query heads, else 64.
Config default_mla_decode_config(const Spec&);
// Shared memory of a config; `fp8`: the cache holds fp8 bytes (a ring of byte tiles and one 16-bit
// tile; block_m 16: the ring and each consumer's fp16 V tile).
int mla_decode_smem_bytes(const Config&, bool fp8);
// Fills the plan's constants and launch shape; throws NotSupportedYet or BadConfig.
void plan_mla_decode(const Spec&, KernelKind, const Config&, const ArchInfo&, KernelPlan&);

}  // namespace attnc
