// The correctness gate: before a candidate may win it runs once on a small case of its kind
// against the float64 reference (runtime/attention_check), with the split count it will be timed
// with. The case is small enough that the reference costs little, uneven enough to hit partial
// tiles and pages, and long enough that every split count of the space gets work.
#pragma once

#include <string>

#include "check/attention_check.h"
#include "runtime/dispatch/shape_bucket.h"

namespace attnc {

// Decode: four requests with KV lengths 4093, 1000, 33 and 1 and the bucket's query tokens per
// request (capped at 8; 1 = plain decode). Prefill: three requests, query lengths 253, 61, 1 (the
// bucket's query length caps the first) and KV lengths at least as long. Paged kinds use the
// spec's page size and layout; the cache holds just the pages the case needs plus spares.
AttentionCase gate_case(KernelKind, const ShapeBucket&, int page_size, KvCacheLayout, int num_splits, int num_sms);

struct GateResult {
  bool passed = false;
  std::string summary;  // the check's summary line (errors, seed)
};

// Runs the check; throws what check_attention throws (BadCall, CudaError, GpuTimeout).
GateResult run_gate(const KernelPlan&, const Kernel& kernel, const Kernel* combine, const AttentionCase&);

}  // namespace attnc
