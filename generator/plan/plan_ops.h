// Planning of the small op kernels that are not attention: merge_attn_states (family
// merge_states), reshape_and_cache_flash (family cache_write) and decode context parallelism's
// LSE correction (family lse_correct). plan.cpp dispatches here.
#pragma once

#include "generator/plan/plan.h"

namespace attnc {

bool is_op_kind(KernelKind);                 // merge, cache_write, lse_correct
Config default_op_config(const Spec&, KernelKind, const std::string& arch);
KernelPlan plan_op_kernel(const Spec&, KernelKind, const Config&, const std::string& arch);
std::string op_variant_name(const KernelPlan&);

}  // namespace attnc
