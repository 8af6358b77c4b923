#include "generator/plan_ops.h"

namespace attnc {

bool is_op_kind(KernelKind k) { return k == KernelKind::merge || k == KernelKind::cache_write; }

Config default_op_config(const Spec&, KernelKind kind, const std::string&) {
  Config c;
  c.family = kind == KernelKind::merge ? "merge_states" : "cache_write";
  return c;
}

KernelPlan plan_op_kernel(const Spec&, KernelKind kind, const Config&, const std::string&) {
  throw NotSupportedYet(std::string(to_string(kind)) + " kernels");
}

std::string op_variant_name(const KernelPlan& p) { return p.family; }

}  // namespace attnc
