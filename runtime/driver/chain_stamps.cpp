#include "runtime/driver/chain_stamps.h"

#include <cstdio>

#include "runtime/driver/env_defines.h"

namespace attnc {

bool chain_stamps_requested() {
  static const bool on = [] {
    for (const std::string& w : env_defines())
      if (w == "ATTNC_CHAIN_STAMPS" || w.rfind("ATTNC_CHAIN_STAMPS=", 0) == 0) return true;
    return false;
  }();
  return on;
}

void report_chain_stamps(const DriverApi& api, CUfunction f, const std::string& entry) {
  // The phases in the order of the kernel's ChainPhase, then the step count.
  static const char* const kPhases[] = {"token", "kfull",   "issue",  "qkwait",  "scale", "logits",
                                        "max",   "exp",     "pvwait", "rescale", "pack"};
  constexpr int kN = sizeof(kPhases) / sizeof(kPhases[0]);
  CUmodule module = nullptr;
  CUdeviceptr table = 0;
  size_t bytes = 0;
  if (api.FuncGetModule(&module, f) != CUDA_SUCCESS ||
      api.ModuleGetGlobal(&table, &bytes, module, "attnc_chain_cycles") != CUDA_SUCCESS ||
      bytes != (kN + 1) * sizeof(unsigned long long))
    return;  // not a stamped kernel
  unsigned long long t[kN + 1] = {};
  cu_check(api.CtxSynchronize(), "cuCtxSynchronize (chain stamps)");
  cu_check(api.MemcpyDtoH(t, table, bytes), "cuMemcpyDtoH (chain stamps)");
  cu_check(api.MemsetD8(table, 0, bytes), "cuMemsetD8 (chain stamps)");
  const double steps = t[kN] > 0 ? double(t[kN]) : 1.0;
  double total = 0;
  for (int i = 0; i < kN; ++i) total += double(t[i]) / steps;
  std::fprintf(stderr, "chain-stamps %s steps %llu cycles/step %.0f:", entry.c_str(), t[kN], total);
  for (int i = 0; i < kN; ++i) std::fprintf(stderr, " %s %.0f", kPhases[i], double(t[i]) / steps);
  std::fprintf(stderr, "\n");
}

}  // namespace attnc
