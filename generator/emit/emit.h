// KernelPlan -> KernelSource: a traits struct and one extern "C" entry that calls a template in
// templates/. The source depends only on what is compiled in (never on the spec's name or id), so
// specs that need the same code share one cubin.
#pragma once

#include "generator/emit/kernel_source.h"
#include "generator/plan/plan.h"

namespace attnc {

KernelSource emit_kernel(const KernelPlan&);

}  // namespace attnc
