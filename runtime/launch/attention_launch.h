// Enqueues one prepared attention call: the kernel, then (split-KV) its combine entry on the same
// stream. Allocates nothing, never synchronises: capturable in a CUDA graph.
#pragma once

#include <cuda.h>

#include "runtime/launch/attention_args.h"
#include "runtime/driver/module.h"

namespace attnc {

// `combine` is the plan's `<entry>_combine` kernel; it may be null when the launch does not split
// (BadCall otherwise).
void launch_attention(const Kernel& kernel, const Kernel* combine, const AttentionLaunch&, CUstream);

}  // namespace attnc
