// The int8 parts of an attention call (attention-semantics.md §5.2): the scale tensors, checked
// against the kernel's int8 mode, and the int8 tensors' strides turned into the 2-byte units the
// kernel addresses them in (AttentionParams in attnc/params/params.h).
#pragma once

#include "attnc/params/params.h"
#include "generator/plan/plan.h"

namespace attnc {

struct AttentionArgs;

// After the 16-bit setup of `p` (strides in elements, checked): throws BadCall for missing, extra
// or misaligned scales; no-op (beyond refusing stray scales) for a 16-bit kernel.
void set_int8_params(const KernelPlan&, const AttentionArgs&, AttentionParams& p);

}  // namespace attnc
