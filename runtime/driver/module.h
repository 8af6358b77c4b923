// A loaded cubin and its kernels. Launching allocates nothing, never synchronises and reads no
// device memory, so a launch can be captured in a CUDA graph.
#pragma once

#include <cuda.h>

#include <string>
#include <vector>

#include "runtime/driver/dim3.h"

namespace attnc {

struct DriverApi;

// Shared memory a block may use without opting in.
inline constexpr int kDefaultMaxDynamicSmem = 48 * 1024;

class Kernel {
 public:
  CUfunction handle() const { return function_; }
  const std::string& entry() const { return entry_; }
  int max_dynamic_smem() const { return max_dynamic_smem_; }

  // Dynamic shared memory above 48 KiB needs CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES set
  // once per function; below that this does nothing.
  void reserve_dynamic_smem(int bytes);
  int attribute(CUfunction_attribute which) const;  // e.g. CU_FUNC_ATTRIBUTE_NUM_REGS
  // SMs of the device whose context the module was loaded into (persistent kernels' grid).
  int sm_count() const { return sm_count_; }

  // Enqueues the kernel with its one parameter, the params struct at `params`; the driver copies
  // the struct at the call, so it may be a local. Throws std::invalid_argument when smem_bytes
  // exceeds what was reserved, CudaError when the driver refuses.
  void launch(Dim3 grid, Dim3 block, int smem_bytes, CUstream stream, const void* params) const;
  // The general form: args[i] points at the i-th kernel parameter.
  void launch_args(Dim3 grid, Dim3 block, int smem_bytes, CUstream stream, void** args) const;

 private:
  friend class Module;
  Kernel(const DriverApi* api, CUfunction function, std::string entry)
      : api_(api), function_(function), entry_(std::move(entry)) {}
  const DriverApi* api_;  // resolved once, so a launch costs one indirect call
  CUfunction function_;
  std::string entry_;
  int max_dynamic_smem_ = kDefaultMaxDynamicSmem;
  int sm_count_ = 0;
};

class Module {
 public:
  // Loads into the current context. A cubin for another arch fails with
  // CUDA_ERROR_NO_BINARY_FOR_GPU.
  explicit Module(const std::vector<char>& cubin);
  ~Module();
  Module(Module&& other) noexcept;
  Module& operator=(Module&& other) noexcept;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  CUmodule handle() const { return module_; }
  // The kernel named `entry` (an extern "C" name), with `dynamic_smem_bytes` reserved.
  Kernel kernel(const std::string& entry, int dynamic_smem_bytes = 0) const;

 private:
  CUmodule module_ = nullptr;
};

}  // namespace attnc
