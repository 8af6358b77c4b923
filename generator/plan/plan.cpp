#include "generator/plan/plan.h"

#include "generator/plan/plan_attention.h"
#include "generator/plan/plan_ops.h"
#include "generator/spec/spec_parse.h"

namespace attnc {

const char* to_string(KernelKind k) {
  switch (k) {
    case KernelKind::prefill: return "prefill";
    case KernelKind::prefill_paged: return "prefill_paged";
    case KernelKind::decode: return "decode";
    case KernelKind::merge: return "merge";
    case KernelKind::cache_write: return "cache_write";
    case KernelKind::lse_correct: return "lse_correct";
  }
  return "?";
}

// `prefill` in a spec means both prefill kernels: over contiguous K/V (encoders, the new tokens
// of a chunk) and over the paged cache (chunked prefill, prefix caching).
std::vector<KernelKind> kernels_of(const Spec& s) {
  std::vector<KernelKind> out;
  if (s.kernels.prefill) {
    out.push_back(KernelKind::prefill);
    out.push_back(KernelKind::prefill_paged);
  }
  if (s.kernels.decode) out.push_back(KernelKind::decode);
  if (s.kernels.merge) out.push_back(KernelKind::merge);
  if (s.kernels.cache_write) out.push_back(KernelKind::cache_write);
  return out;
}

const std::vector<std::string>& supported_archs() {
  static const std::vector<std::string> archs = {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"};
  return archs;
}

ArchInfo arch_info(const std::string& arch) {
  // Opt-in shared memory per block, from the CUDA programming guide's per-arch tables.
  if (arch == "sm_80") return {arch, 8, 0, 163 * 1024};
  if (arch == "sm_86" || arch == "sm_89") return {arch, 8, arch == "sm_86" ? 6 : 9, 99 * 1024};
  if (arch == "sm_90" || arch == "sm_90a") return {arch, 9, 0, 227 * 1024};
  std::string allowed;
  for (const auto& a : supported_archs()) allowed += (allowed.empty() ? "" : ", ") + a;
  throw std::invalid_argument("arch '" + arch + "' is not supported; allowed: " + allowed);
}

Config default_config(const Spec& s, KernelKind kind, const std::string& arch) {
  return is_op_kind(kind) ? default_op_config(s, kind, arch) : default_attention_config(s, kind, arch);
}

Config config_for(const Spec& s, KernelKind kind, const std::string& arch, const std::string& config_json) {
  Config base = default_config(s, kind, arch);
  if (config_json.empty()) return base;
  const std::string family = Config::from_json(config_json, base).family;
  if (family != base.family) {
    if (is_op_kind(kind)) base.family = family;  // the op planner names the right family
    else base = default_family_config(s, kind, arch, family);
  }
  return Config::from_json(config_json, base);
}

KernelPlan plan_kernel(const Spec& s, KernelKind kind, const Config& c, const std::string& arch) {
  return is_op_kind(kind) ? plan_op_kernel(s, kind, c, arch) : plan_attention_kernel(s, kind, c, arch);
}

void check_key_tiles(const Config& c, int smem_bytes, const ArchInfo& arch, int max_stages) {
  if (c.block_n < 16 || c.block_n > 256 || c.block_n % 16 != 0)
    throw BadConfig("block_n " + std::to_string(c.block_n) + "; allowed: a multiple of 16 in 16..256");
  if (c.stages < 2 || c.stages > max_stages)
    throw BadConfig("stages " + std::to_string(c.stages) + "; allowed: 2.." + std::to_string(max_stages));
  if (smem_bytes > arch.max_smem_per_block)
    throw BadConfig(c.short_name() + " needs " + std::to_string(smem_bytes) + " bytes of shared memory; " + arch.name +
                    " allows " + std::to_string(arch.max_smem_per_block));
}

KernelPlan base_plan(const Spec& s, KernelKind kind, const Config& c, const std::string& arch) {
  KernelPlan p;
  p.kind = kind;
  p.family = c.family;
  p.arch = arch;
  p.spec = s;
  p.spec_id = spec_id(s);
  p.config = c;
  return p;
}

std::string KernelPlan::variant_name() const {
  return is_op_kind(kind) ? op_variant_name(*this) : attention_variant_name(*this);
}

}  // namespace attnc
