// What the emitter hands to the compiler: one small translation unit plus how to launch it.
#pragma once

#include <string>
#include <vector>

namespace attnc {

struct LaunchShape {
  int threads = 128;       // per block
  int smem_bytes = 0;      // dynamic shared memory per block
};

struct KernelSource {
  std::string family;                 // template family, e.g. "prefill_sm80"
  std::string entry;                  // extern "C" kernel name, readable: carries spec id and config
  std::string source;                 // the generated translation unit
  std::string arch;                   // "sm_80", "sm_90a", ...
  std::vector<std::string> options;   // NVRTC options the plan adds (beyond the compiler's defaults)
  LaunchShape launch;
  std::string spec_id;
  std::string config_json;            // the Config, for the cache and for people
};

}  // namespace attnc
