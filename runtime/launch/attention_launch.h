// Enqueues one prepared attention call: the kernel, then (split-KV) its combine entry on the same
// stream, or (v_prewiden) its widening entry and then the kernel. Allocates nothing, never
// synchronises: capturable in a CUDA graph.
#pragma once

#include <cuda.h>

#include "runtime/launch/attention_args.h"
#include "runtime/driver/module.h"

namespace attnc {

// `companion` is the plan's second entry (companion_suffix: `<entry>_combine` or
// `<entry>_widen_v`); it may be null when the launch needs none (BadCall otherwise).
void launch_attention(const Kernel& kernel, const Kernel* companion, const AttentionLaunch&, CUstream);

}  // namespace attnc
