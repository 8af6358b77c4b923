// What the cache stores. Plain data: the cache fills and checks these but knows nothing of what
// a spec, a config or a cubin means beyond "text", "JSON text" and "an ELF image".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace attnc {

// One compiled kernel, addressed by a content key the caller computes (hash of source, NVRTC
// options and version, arch, template hash), so a key never needs invalidating: new inputs, new key.
struct KernelRecord {
  std::string key;
  std::string spec_id, entry, family, arch, config_json, nvrtc_version, log;
  std::vector<char> cubin;       // an ELF image; empty when read without it (list_kernels)
  std::int64_t cubin_bytes = 0;  // filled on every read, also when the cubin itself is not loaded
  int registers = -1, smem_bytes = -1, spill_stores = 0, spill_loads = 0;
  double compile_ms = 0;
  std::int64_t created_at = 0, last_used_at = 0;  // unix seconds; 0 on put means "now"
};

struct SpecRecord {
  std::string spec_id, name, canonical_yaml;
  std::int64_t created_at = 0;  // unix seconds
};

// What a tuning result is valid for. Every field is part of the identity: a different driver or
// NVRTC may compile or schedule differently, so its results are kept apart.
struct TuningKey {
  std::string spec_id;
  std::string device;  // device name as the driver reports it
  std::string arch;    // e.g. "sm_90a"
  int sm_count = 0;
  std::string driver_version, nvrtc_version;
  std::string mode;    // e.g. "prefill", "decode"
  std::string bucket;  // shape bucket label chosen by the tuner
  bool operator==(const TuningKey&) const = default;
};

struct TuningRecord {
  TuningKey key;
  std::string config_json;             // the winner (JSON object text)
  double time_us = 0;                  // the winner's median time; <= 0 means unknown
  double throughput = 0;               // caller's unit (e.g. TFLOP/s), informational
  std::string candidates_json = "[]";  // every candidate's timing (JSON), so the run is replayable
  std::string measured_how = "{}";     // repeats, warm-up, input rotation... (JSON)
  std::int64_t created_at = 0;         // unix seconds; 0 on put means "now"
};

// Select tuning records; an unset field matches anything.
struct TuningFilter {
  std::optional<std::string> spec_id{}, device{}, arch{}, driver_version{}, nvrtc_version{}, mode{}, bucket{};
  std::optional<int> sm_count{};
};

}  // namespace attnc
