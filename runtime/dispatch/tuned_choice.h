// What a tuning record's config_json holds: the compiled Config (family, tiles, warps, stages; its
// `splits` stays 1, because split-KV is chosen per call) plus the split count the call passes.
#pragma once

#include <string>

#include "generator/plan/config.h"

namespace attnc {

struct TunedChoice {
  Config config;       // what is compiled
  int num_splits = 0;  // per call: 0 = the heuristic (generator/split_kv.h), 1 = off, N = N parts

  // The Config's fields plus "num_splits", one JSON object.
  std::string to_json() const;
  // Fields present override `base` (num_splits defaults to 0); throws std::invalid_argument
  // naming the field. A legacy "splits": 1 (records before schema 2) is dropped; another value is
  // an error.
  static TunedChoice from_json(const std::string& json, const Config& base);
  bool operator==(const TunedChoice&) const = default;
};

}  // namespace attnc
