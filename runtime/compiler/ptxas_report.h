// What ptxas says about one compiled entry (`--ptxas-options=-v`): registers, static shared memory,
// stack, spills and barriers. The tuner prunes and ranks candidates on these numbers, and the cache
// stores them next to the cubin.
#pragma once

#include <string>

namespace attnc {

struct PtxasReport {
  int registers = -1;    // -1: the entry was not found in the log
  int smem_bytes = -1;   // static shared memory; dynamic smem comes from the plan, not from ptxas
  int stack_bytes = 0;   // stack frame of the entry
  int spill_stores = 0;  // bytes
  int spill_loads = 0;   // bytes
  int barriers = 0;
  std::string raw;       // the log lines about this entry, verbatim
  bool from_cubin = false;  // ptxas printed nothing (an NVRTC cache hit): registers and stack were read
                            // from the cubin; smem and spill counts are unknown
  bool found() const { return registers >= 0; }
};

// Reads the block that starts at "Compiling entry function '<entry>'" and ends at the next entry
// (or the end of the log). Lines about other entries and about non-inlined device functions are
// ignored. Fields ptxas leaves out (it omits "bytes smem" when there is none) are 0.
PtxasReport parse_ptxas_report(const std::string& log, const std::string& entry);

// ptxas's share of a compile: the sum of its "Compile time = X ms" lines (one per entry, wall time
// as ptxas measures it). The rest of NVRTC's time is the front end and NVVM. 0 when ptxas printed
// none (an NVRTC cache hit, or a log without -v).
double ptxas_compile_ms(const std::string& log);

}  // namespace attnc
