// Planning of the attention families: prefill_sm80 (one q head per tile row block, contiguous or
// paged K/V) and decode_split (paged K/V, the q heads of a kv head packed into tile rows, runtime
// split-KV with a combine entry), both over templates/attnc/families/attention_sm80.cuh; and
// decode_bw (decode_bw.cuh: decode_split's rows, each warp streaming its own keys), the decode
// default on sm_90; and prefill_sm90 (plan_prefill_sm90.h), the prefill default on sm_90a.
#pragma once

#include <string>
#include <vector>

#include "generator/plan/plan.h"

namespace attnc {

Config default_attention_config(const Spec&, KernelKind, const std::string& arch);
// The default tiles of one named family (a config override naming another family than the
// heuristic's starts from these); the planner judges whether the family makes the kind.
Config default_family_config(const Spec&, KernelKind, const std::string& arch, const std::string& family);
KernelPlan plan_attention_kernel(const Spec&, KernelKind, const Config&, const std::string& arch);
std::string attention_variant_name(const KernelPlan&);

// The families that make a kind's kernels (decode: decode_bw, decode_split).
std::vector<std::string> attention_families(KernelKind);

// The int8 mode a spec's quant field names (none for the other modes).
Int8Mode int8_mode(const Spec&);

// Head dims as the kernel stores them: shared-memory rows padded to 64 columns (the swizzle works
// on 128-byte lines) and mma steps of 16.
int padded_head_dim(int d);

}  // namespace attnc
