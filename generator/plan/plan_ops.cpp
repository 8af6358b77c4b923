#include "generator/plan/plan_ops.h"

#include "attnc/params/ops_params.h"
#include "generator/spec/spec_parse.h"

namespace attnc {
namespace {

const char* family_for(KernelKind kind) {
  switch (kind) {
    case KernelKind::merge: return "merge_states";
    case KernelKind::lse_correct: return "lse_correct";
    default: return "cache_write";
  }
}

bool is_fp8(KvDType d) { return d == KvDType::fp8_e4m3 || d == KvDType::fp8_e5m2; }

// What the op templates cannot express yet; each line names the feature.
void check_supported(const Spec& s, KernelKind kind, const ArchInfo& arch) {
  // MLA: merge and lse_correct also take absorbed decode's rows of the latent V (kv_lora_rank).
  const bool latent = s.mla.enabled && kind != KernelKind::cache_write;
  const int dims[] = {kind == KernelKind::cache_write ? s.head_dim : s.head_dim_v, s.head_dim_v,
                      latent ? s.mla.kv_lora_rank : s.head_dim_v};
  for (int d : dims)
    if (d % 8 != 0 || d < 8)
      throw NotSupportedYet("head dim " + std::to_string(d) + " in " + to_string(kind) +
                            " kernels (supported: multiples of 8; they move 16-byte chunks)");
  if (kind != KernelKind::cache_write) return;
  if (s.mla.enabled)
    throw NotSupportedYet("MLA latent cache writes (concat_and_cache_mla; cache_write writes K and V rows)");
  if (s.kv_cache.dtype == KvDType::int8 && (s.head_dim > 256 || s.head_dim_v > 256))
    throw NotSupportedYet("int8 KV cache writes with head dims over 256 (a warp's lanes hold a key row, 8 "
                          "elements each, for its amax)");
  if (is_fp8(s.kv_cache.dtype) && arch.major * 10 + arch.minor < 89)
    throw NotSupportedYet(std::string(to_string(s.kv_cache.dtype)) + " KV cache writes on " + arch.name +
                          " (the fp8 conversion instruction needs sm_89 or later)");
}

// The op families have no tiles to tune: their config is the family and the block size.
Config op_config(KernelKind kind) {
  Config c;
  c.family = family_for(kind);
  c.block_m = c.block_n = c.stages = 0;
  switch (kind) {
    case KernelKind::merge: c.warps = kMergeThreads / 32; break;
    case KernelKind::lse_correct: c.warps = kLseCorrectThreads / 32; break;
    default: c.warps = kCacheWriteThreads / 32;
  }
  return c;
}

}  // namespace

bool is_op_kind(KernelKind k) {
  return k == KernelKind::merge || k == KernelKind::cache_write || k == KernelKind::lse_correct;
}

Config default_op_config(const Spec&, KernelKind kind, const std::string&) { return op_config(kind); }

// Tile fields of the config (block_m, block_n, stages, warps) do not apply here and are
// ignored, so a config override aimed at the attention kernels of a spec leaves these alone.
KernelPlan plan_op_kernel(const Spec& s, KernelKind kind, const Config& c, const std::string& arch) {
  const ArchInfo info = arch_info(arch);
  if (c.family != family_for(kind)) {
    if (c.family == "merge_states" || c.family == "cache_write" || c.family == "lse_correct" ||
        c.family == "prefill_sm80" ||
        c.family == "decode_split" || c.family == "decode_bw")
      throw BadConfig("family '" + c.family + "' does not make " + to_string(kind) + " kernels; use " +
                      family_for(kind));
    throw NotSupportedYet("family '" + c.family + "' for " + to_string(kind) + " kernels (available: " +
                          family_for(kind) + ")");
  }
  check_supported(s, kind, info);

  KernelPlan p = base_plan(s, kind, op_config(kind), arch);
  p.head_dim = s.head_dim;
  p.head_dim_v = s.head_dim_v;
  p.group = s.group_size();
  p.threads = 32 * p.config.warps;
  p.smem_bytes = 0;
  return p;
}

// Only what changes the code: the element type, and for cache_write the cache encoding. Head
// sizes and counts are runtime values, so one cubin serves every spec of a dtype; a 16-bit copy
// is the same code for bf16 and fp16 ("b16").
std::string op_variant_name(const KernelPlan& p) {
  const KvDType cache = p.spec.kv_cache.dtype;
  if (p.kind == KernelKind::merge || p.kind == KernelKind::lse_correct) return p.family + "_" + to_string(p.spec.dtype);
  if (cache == KvDType::same) return p.family + "_b16";
  if (cache == KvDType::int8)
    return p.family + "_" + to_string(p.spec.dtype) + (p.spec.quant == QuantMode::int8_qk ? "_int8qk" : "_int8qkv");
  return p.family + "_" + to_string(p.spec.dtype) + (cache == KvDType::fp8_e4m3 ? "_fp8e4m3" : "_fp8e5m2");
}

}  // namespace attnc
