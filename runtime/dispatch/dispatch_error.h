// Errors of the runtime dispatcher (runtime/dispatch/dispatcher.h). Argument errors of a call stay BadCall
// (runtime/launch/attention_args.h); spec errors stay SpecError; compile errors CompileError.
#pragma once

#include <stdexcept>
#include <string>

namespace attnc {

// The dispatcher cannot serve a call: a kind the spec has no kernel for, a kernel that failed to
// build, a bucket first seen while its stream is being captured.
class DispatchError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A kernel is missing from the cache and JIT compiles are off (ATTNC_NO_JIT=1 or the option).
// The message names the kernel and the `attnc compile` line that puts it into the cache.
class JitDisabled : public DispatchError {
 public:
  using DispatchError::DispatchError;
};

}  // namespace attnc
