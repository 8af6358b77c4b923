// Planning of the attention families: prefill_sm80 (one q head per tile row block, contiguous or
// paged K/V) and decode_split (paged K/V, the q heads of a kv head packed into tile rows, runtime
// split-KV with a combine entry), both over templates/attnc/families/attention_sm80.cuh; and
// prefill_sm90 (plan_prefill_sm90.h).
#pragma once

#include "generator/plan/plan.h"

namespace attnc {

Config default_attention_config(const Spec&, KernelKind, const std::string& arch);
// The defaults a family would use for this kind (the family need not make it: the planner says so).
Config default_family_config(const Spec&, KernelKind, const std::string& arch, const std::string& family);
KernelPlan plan_attention_kernel(const Spec&, KernelKind, const Config&, const std::string& arch);
std::string attention_variant_name(const KernelPlan&);

// Head dims as the kernel stores them: shared-memory rows padded to 64 columns (the swizzle works
// on 128-byte lines) and mma steps of 16.
int padded_head_dim(int d);

}  // namespace attnc
