// ATTNC_NVRTC_DEFINES="NAME[=VALUE] ...": diagnostic and experimental kernel variants (the prefill
// chain stamps, the opt-in int8 and MLA variants; docs/kernels-int8.md), one -DNAME[=VALUE] per word
// for every NVRTC compile. Read by the compiler (the options join the kernel key, so the cache keeps
// such kernels apart) and by the launch path (ATTNC_CHAIN_STAMPS).
#pragma once

#include <string>
#include <vector>

namespace attnc {

// The words of ATTNC_NVRTC_DEFINES now (none when unset or blank). Each must be NAME or NAME=VALUE
// with NAME a C identifier; otherwise std::invalid_argument names the word and what is allowed.
std::vector<std::string> env_defines();

}  // namespace attnc
