// The three kernels of a cascade call (runtime/launch/cascade.h), planned, compiled with NVRTC and loaded
// into the current context once; then cascade_attention(program.plans(), program.kernels(), ...)
// per call. Needs a GPU (a current context) to construct.
#pragma once

#include <string>
#include <vector>

#include "runtime/launch/cascade.h"
#include "runtime/driver/module.h"
#include "runtime/compiler/nvrtc_compiler.h"

namespace attnc {

class CascadeProgram {
 public:
  // Throws BadCall (ALiBi, window), NotSupportedYet, CompileError, CudaError.
  CascadeProgram(const Spec& spec, const std::string& arch, const CompileOptions& options = {});

  const CascadePlans& plans() const { return plans_; }
  CascadeKernels kernels() const { return {&kernels_[0], &kernels_[1], &kernels_[2]}; }

 private:
  CascadePlans plans_;
  std::vector<Module> modules_;
  std::vector<Kernel> kernels_;  // prefix, suffix, merge
};

}  // namespace attnc
