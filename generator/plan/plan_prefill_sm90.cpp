#include "generator/plan/plan_prefill_sm90.h"

#include <algorithm>

namespace attnc {
namespace {

int blocks64(int d) { return (d + 63) / 64; }

void check_config(const Spec& s, KernelKind kind, const Config& c, const ArchInfo& arch) {
  if (c.block_m != 128 && c.block_m != 192)
    throw BadConfig("block_m " + std::to_string(c.block_m) + "; prefill_sm90 gives each consumer warpgroup 64 rows " +
                    "and runs 2 or 3 of them: allowed 128, 192");
  if (c.warps != c.block_m / 16 + 4)
    throw BadConfig("warps " + std::to_string(c.warps) + " with block_m " + std::to_string(c.block_m) +
                    "; prefill_sm90 runs block_m / 16 consumer warps and a producer warpgroup, so warps must be " +
                    std::to_string(c.block_m / 16 + 4));
  if (c.persistent && kind != KernelKind::prefill)
    throw BadConfig(std::string("persistent prefill_sm90 blocks read contiguous K/V; a ") + to_string(kind) +
                    " kernel runs one block per item (persistent: false)");
  check_key_tiles(c, prefill_sm90_smem_bytes(s, c, kind), arch, 4);
}

}  // namespace

std::string prefill_sm90_refusal(const Spec& s, KernelKind kind, const std::string& arch) {
  if (arch != "sm_90a") return "prefill_sm90 needs sm_90a (wgmma, TMA, setmaxnreg); the target is " + arch;
  if (kind == KernelKind::decode) return "prefill_sm90 makes prefill kernels; decode stays on decode_split";
  if (kind != KernelKind::prefill && kind != KernelKind::prefill_paged)
    return std::string("prefill_sm90 makes prefill kernels, not ") + to_string(kind);
  if (s.quant == QuantMode::int8_qkv || s.quant == QuantMode::int8_qk)
    return "prefill_sm90 reads 16-bit Q/K/V through TMA (no int8 wgmma path yet); int8 prefill runs on prefill_sm80";
  if (kind == KernelKind::prefill_paged && s.kv_cache.dtype != KvDType::same)
    return std::string("prefill_sm90 reads 16-bit paged caches; a ") + to_string(s.kv_cache.dtype) +
           " cache stays on prefill_sm80";
  if (blocks64(s.head_dim_v) > blocks64(s.head_dim))
    return "prefill_sm90 stages the output in the Q tile: head_dim_v " + std::to_string(s.head_dim_v) +
           " needs more 64-column blocks than head_dim " + std::to_string(s.head_dim) + " has";
  return "";
}

Config default_prefill_sm90_config(const Spec& s, KernelKind kind) {
  Config c;
  c.family = kPrefillSm90;
  const int d = std::max(s.head_dim, s.head_dim_v);  // 3 x 64 rows only where O and S stay small
  // Block-sparse: key tiles of one sparse block (64..128 keys), so a vertical block costs one tile;
  // its blocks see few tiles, so 3 x 64 rows per block where S stays small (m192n64: 5 % faster
  // than m128n64 on Phi-3-small, docs/kernels-block-sparse.md), but contiguous prefill at d <= 128
  // runs persistent blocks of 2 x 64 rows, which keep Q in registers (Q K^T of 64-key tiles then
  // reads only K from shared memory): m128n64 persistent 0.421 ms, m192n64 persistent 0.427.
  c.block_n = s.sparse.enabled ? std::clamp(s.sparse.block_size, 64, 128) : 128;
  c.block_m = d <= 64 || (s.sparse.enabled && d <= 128 && c.block_n <= 64) ? 192 : 128;
  if (s.sparse.enabled && kind == KernelKind::prefill && d <= 128 && c.block_n <= 64) c.block_m = 128;
  c.warps = c.block_m / 16 + 4;
  c.stages = 2;
  c.pingpong = true;
  // Narrower key tiles until two stages fit (d192: 112, d256: 80), for the paged kernel too.
  const int limit = arch_info("sm_90a").max_smem_per_block;
  while (c.block_n > 16 && prefill_sm90_smem_bytes(s, c, KernelKind::prefill_paged) > limit) c.block_n -= 16;
  // Block-sparse contiguous prefill: persistent blocks, where the output tile fits beside the
  // others (they hide each item's Q load and pipeline fill: -2 % at m128n64; and hold Q in
  // registers at 2 x 64 rows and d <= 128: -6 % more).
  Config p = c;
  p.persistent = true;
  c.persistent = s.sparse.enabled && kind == KernelKind::prefill && prefill_sm90_smem_bytes(s, p, kind) <= limit;
  return c;
}

int prefill_sm90_smem_bytes(const Spec& s, const Config& c, KernelKind kind) {
  const int dq = 64 * blocks64(s.head_dim), dv = 64 * blocks64(s.head_dim_v);
  const int barriers = 8 * (1 + 4 * c.stages + (kind == KernelKind::prefill_paged ? 1 : 0) + (c.persistent ? 1 : 0));
  const int o_tile = c.persistent ? c.block_m * dv : 0;  // else the output is staged over Q
  return 1024 + 2 * (c.block_m * dq + c.stages * c.block_n * (dq + dv) + o_tile) + barriers;
}

void plan_prefill_sm90(const Spec& s, KernelKind kind, const Config& c, const ArchInfo& arch, KernelPlan& p) {
  if (const std::string why = prefill_sm90_refusal(s, kind, arch.name); !why.empty()) throw NotSupportedYet(why);
  check_config(s, kind, c, arch);
  p.threads = 32 * c.warps;
  p.smem_bytes = prefill_sm90_smem_bytes(s, c, kind);
}

}  // namespace attnc
