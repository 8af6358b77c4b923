#include "generator/generate.h"

#include "generator/plan/plan_attention.h"
#include "generator/plan/plan_ops.h"

namespace attnc {

SpecKernel generate_kernel(const Spec& spec, KernelKind kind, const std::string& arch, const std::string& config_json) {
  SpecKernel k;
  k.kind = kind;
  try {
    k.plan = plan_kernel(spec, kind, config_for(spec, kind, arch, config_json), arch);
    k.source = emit_kernel(*k.plan);
  } catch (const NotSupportedYet& e) {
    k.skipped = e.what();
  }
  return k;
}

std::vector<SpecKernel> spec_kernels(const Spec& spec, const std::string& arch, const std::string& config_json) {
  std::vector<SpecKernel> out;
  for (KernelKind kind : kernels_of(spec)) out.push_back(generate_kernel(spec, kind, arch, config_json));
  return out;
}

}  // namespace attnc
