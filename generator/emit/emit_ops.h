// Source emission for the op families (merge_states, cache_write, lse_correct); emit.cpp dispatches here.
#pragma once

#include <string>

#include "generator/plan/plan.h"

namespace attnc {

bool is_op_family(const std::string& family);
std::string emit_op_source(const KernelPlan&, const std::string& entry);

}  // namespace attnc
