#include "generator/plan.h"

#include "generator/spec_parse.h"

namespace attnc {

const char* to_string(KernelKind k) {
  switch (k) {
    case KernelKind::prefill: return "prefill";
    case KernelKind::decode: return "decode";
    case KernelKind::merge: return "merge";
    case KernelKind::cache_write: return "cache_write";
  }
  return "?";
}

std::vector<KernelKind> kernels_of(const Spec& s) {
  std::vector<KernelKind> out;
  if (s.kernels.prefill) out.push_back(KernelKind::prefill);
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

namespace {

// What prefill_sm80 cannot express yet; each line names the feature and the scope.
void check_prefill_sm80_supports(const Spec& s) {
  if (s.mla.enabled) throw NotSupportedYet("MLA (prefill_sm80 has no latent-attention path)");
  if (s.sparse.enabled) throw NotSupportedYet("block-sparse attention (no sparse_prefill family yet)");
  if (s.quant != QuantMode::none)
    throw NotSupportedYet(std::string("quant ") + to_string(s.quant) + " (no quantised family yet)");
  if (s.alibi != Alibi::none) throw NotSupportedYet(std::string("alibi ") + to_string(s.alibi));
  if (s.sinks) throw NotSupportedYet("sinks");
  for (int d : {s.head_dim, s.head_dim_v})
    if (d != 64 && d != 128 && d != 256)
      throw NotSupportedYet("head dim " + std::to_string(d) + " in prefill_sm80 (supported: 64, 128, 256)");
}

int prefill_smem_bytes(const Spec& s, const Config& c) {
  const int dqo = std::max(s.head_dim, s.head_dim_v);
  return 2 * (c.block_m * dqo + c.stages * c.block_n * (s.head_dim + s.head_dim_v));
}

void check_prefill_sm80_config(const Spec& s, const Config& c, const ArchInfo& arch) {
  if (c.warps < 1 || c.warps > 16) throw BadConfig("warps " + std::to_string(c.warps) + "; allowed: 1..16");
  if (c.block_m != 16 * c.warps)
    throw BadConfig("block_m " + std::to_string(c.block_m) + " with " + std::to_string(c.warps) +
                    " warps; prefill_sm80 gives each warp 16 rows, so block_m must be " +
                    std::to_string(16 * c.warps));
  if (c.block_n < 16 || c.block_n > 256 || c.block_n % 16 != 0)
    throw BadConfig("block_n " + std::to_string(c.block_n) + "; allowed: a multiple of 16 in 16..256");
  if (c.stages < 2 || c.stages > 4) throw BadConfig("stages " + std::to_string(c.stages) + "; allowed: 2..4");
  if (c.splits != 1) throw BadConfig("splits " + std::to_string(c.splits) + "; prefill_sm80 takes 1");
  const int smem = prefill_smem_bytes(s, c);
  if (smem > arch.max_smem_per_block)
    throw BadConfig(c.short_name() + " needs " + std::to_string(smem) + " bytes of shared memory; " +
                    arch.name + " allows " + std::to_string(arch.max_smem_per_block));
}

// Canonical mask code, so specs that compute the same mask share a kernel: a window (-1, 0) is
// causal and a window (-1, -1) is no mask.
int mask_kind_code(const MaskSpec& m) {
  if (m.kind == MaskKind::none) return 0;
  if (m.kind == MaskKind::causal) return 1;
  if (m.window_left < 0 && m.window_right == 0) return 1;
  if (m.window_left < 0 && m.window_right < 0) return 0;
  return 2;
}

}  // namespace

Config default_config(const Spec& s, KernelKind kind, const std::string& arch) {
  Config c;
  c.family = "prefill_sm80";
  const int d = std::max(s.head_dim, s.head_dim_v);
  if (d <= 64) { c.block_m = 128; c.warps = 8; c.block_n = 128; }
  else if (d <= 128) { c.block_m = 128; c.warps = 8; c.block_n = 64; }
  else { c.block_m = 64; c.warps = 4; c.block_n = 32; }  // d256: BN 64 spills (O alone is 128 registers)
  c.stages = 2;
  // Shrink the K/V tile until it fits the arch (sm_86/89 have 99 KiB).
  const ArchInfo info = arch_info(arch);
  while (c.block_n > 16 && prefill_smem_bytes(s, c) > info.max_smem_per_block) c.block_n /= 2;
  (void)kind;
  return c;
}

KernelPlan plan_kernel(const Spec& s, KernelKind kind, const Config& c, const std::string& arch) {
  const ArchInfo info = arch_info(arch);
  if (kind != KernelKind::prefill)
    throw NotSupportedYet(std::string(to_string(kind)) + " kernels (only prefill has a family so far)");
  if (c.family != "prefill_sm80")
    throw NotSupportedYet("family '" + c.family + "' (available: prefill_sm80)");
  check_prefill_sm80_supports(s);
  check_prefill_sm80_config(s, c, info);

  KernelPlan p;
  p.kind = kind;
  p.family = c.family;
  p.arch = arch;
  p.spec = s;
  p.spec_id = spec_id(s);
  p.config = c;
  p.head_dim = s.head_dim;
  p.head_dim_v = s.head_dim_v;
  p.group = s.group_size();
  p.mask_kind = mask_kind_code(s.mask);
  p.softcap = s.softcap > 0;
  p.lse = s.lse.layout == LseLayout::none ? 0 : s.lse.base == LseBase::e ? 1 : 2;
  p.threads = 32 * c.warps;
  p.smem_bytes = prefill_smem_bytes(s, c);
  return p;
}

std::string KernelPlan::variant_name() const {
  static const char* masks[] = {"nomask", "causal", "window"};
  std::string n = family + "_" + to_string(spec.dtype) + "_d" + std::to_string(head_dim);
  if (head_dim_v != head_dim) n += "v" + std::to_string(head_dim_v);
  n += "_g" + std::to_string(group) + "_" + masks[mask_kind];
  if (softcap) n += "_softcap";
  if (lse) n += lse == 1 ? "_lse" : "_lse2";
  return n + "_" + config.short_name();
}

}  // namespace attnc
