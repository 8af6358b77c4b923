// Planning of the attention families: prefill_sm80 (one q head per tile row block, contiguous or
// paged K/V) and decode_split (paged K/V, the q heads of a kv head packed into tile rows, runtime
// split-KV with a combine entry). Both instantiate templates/attnc/families/attention_sm80.cuh.
#pragma once

#include "generator/plan/plan.h"

namespace attnc {

Config default_attention_config(const Spec&, KernelKind, const std::string& arch);
KernelPlan plan_attention_kernel(const Spec&, KernelKind, const Config&, const std::string& arch);
std::string attention_variant_name(const KernelPlan&);

// Head dims as the kernel stores them: shared-memory rows padded to 64 columns (the swizzle works
// on 128-byte lines) and mma steps of 16.
int padded_head_dim(int d);

}  // namespace attnc
