// The NVRTC service: KernelSource in, cubin plus ptxas report out, in-process, with the template
// headers given from memory. Errors point at the generated (or header) line; a compile that runs
// past its timeout is reported and abandoned. Needs no GPU.
#pragma once

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "generator/emit/kernel_source.h"
#include "generator/plan/plan.h"
#include "runtime/compiler/ptxas_report.h"

namespace attnc {

struct CompileOptions {
  std::string arch;                              // "" = source.arch, else e.g. "sm_90a"
  std::chrono::milliseconds timeout{60000};      // <= 0: no deadline, compile on the calling thread
  bool line_info = false;                        // -lineinfo, for profilers
};

struct CompiledKernel {
  std::string entry, arch, nvrtc_version, log;
  std::vector<char> cubin;
  PtxasReport report;
  double compile_ms = 0;   // wall time of the NVRTC program, steady clock
  double ptxas_ms = 0;     // ptxas's share of it (its own timing); the rest is front end + NVVM
  std::string key;         // kernel_key(): the cache's content key
};

class CompileError : public std::runtime_error {
 public:
  CompileError(const std::string& message, std::string entry, std::string arch, std::string log = {});
  const std::string& entry() const { return entry_; }
  const std::string& arch() const { return arch_; }
  const std::string& log() const { return log_; }   // NVRTC's program log, verbatim

 private:
  std::string entry_, arch_, log_;
};

// The deadline passed before NVRTC finished; that compile keeps running in the background until
// NVRTC lets it stop, and its result is thrown away.
class CompileTimeout : public CompileError {
 public:
  using CompileError::CompileError;
};

// Archs we generate code for (generator/plan/plan.h owns the list). sm_90a (not sm_90) is what Hopper
// kernels with wgmma/TMA need.
bool is_supported_arch(const std::string& arch);

// The exact option list handed to NVRTC for a cubin, in order:
//   --gpu-architecture=<arch> --ptxas-options=-v -std=c++17 --minimal [-lineinfo] <source.options...>
// --minimal drops NVRTC's texture, cudadevrt and runtime-API declarations, which no template uses:
// a cheaper front end, byte-identical cubins (docs/performance.md, "Cold compile"). A family that
// needs them (device-side launch, textures) must say so before this default can stay.
// Throws CompileError for an unsupported arch.
std::vector<std::string> nvrtc_options(const KernelSource& source, const CompileOptions& options);

// Content key of the cubin: hash of source, option list, NVRTC version, arch and templates_hash().
// Not the timeout: it does not change the result.
std::string kernel_key(const KernelSource& source, const CompileOptions& options = {});

// Throws CompileError (CompileTimeout on timeout). Also throws when the cubin has no entry named
// source.entry, which means the emitter and the source disagree.
CompiledKernel compile_kernel(const KernelSource& source, const CompileOptions& options = {});

// PTX for the virtual arch of the target (sm_90a -> compute_90a), for inspection and PTX tests.
std::string compile_to_ptx(const KernelSource& source, const CompileOptions& options = {});

// Major.minor of the loaded libnvrtc, e.g. "13.0".
std::string nvrtc_version();

struct CompileResult {
  std::optional<CompiledKernel> kernel;  // set on success
  std::string error;                     // the error's what() otherwise
  bool timed_out = false;
  bool ok() const { return kernel.has_value(); }
};

// Compiles every source on `jobs` workers (<= 0: one per hardware thread), each under
// options.timeout; results in input order. Never throws for a kernel's failure. A timed-out compile
// may still occupy a core for a while after its result slot is filled.
std::vector<CompileResult> compile_many(const std::vector<KernelSource>& sources,
                                        const CompileOptions& options, int jobs);

}  // namespace attnc
