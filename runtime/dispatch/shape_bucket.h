// Shape buckets: the dispatcher maps every call to one, the tuner measures one representative shape
// per bucket and the cache keys tuning records by the bucket's label. Buckets are powers of two of
// the batch, the longest query and the longest KV length, so the table stays small and any shape
// finds its bucket with a few bit operations.
#pragma once

#include <cstdint>
#include <string>

#include "generator/plan/plan.h"

namespace attnc {

// What the dispatcher looks at of one call's shape.
struct Problem {
  KernelKind kind = KernelKind::prefill;
  int batch = 1;
  int max_seqlen_q = 1;  // decode: query tokens per request (1 for plain decode)
  int max_seqlen_k = 1;
};

struct ShapeBucket {
  KernelKind kind = KernelKind::prefill;
  int batch = 1, seqlen_q = 1, seqlen_k = 1;  // each a power of two: the bucket's upper edge

  // The bucket of a problem: each size rounded up to a power of two (sizes < 1 count as 1).
  static ShapeBucket of(const Problem&);
  // Packs kind and the three exponents into one integer, for the dispatcher's in-memory table.
  std::uint64_t key() const;
  // "b64.q1.k8192": the tuning record's bucket (the kind is the record's mode).
  std::string label() const;
  // Inverse of label(); throws std::invalid_argument naming what is wrong and the expected form.
  static ShapeBucket parse(KernelKind, const std::string& label);
  // The shape the tuner measures for this bucket: its upper edge.
  Problem representative() const;
  bool operator==(const ShapeBucket&) const = default;
};

// The mode string of tuning records for a kernel kind ("prefill", "prefill_paged", "decode").
inline const char* tuning_mode(KernelKind kind) { return to_string(kind); }

}  // namespace attnc
