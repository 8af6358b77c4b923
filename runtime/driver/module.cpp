#include "runtime/driver/module.h"

#include <stdexcept>
#include <utility>

#include "runtime/driver/chain_stamps.h"
#include "runtime/driver/cuda_driver.h"

namespace attnc {

void Kernel::reserve_dynamic_smem(int bytes) {
  if (bytes <= max_dynamic_smem_) return;
  cu_check(api_->FuncSetAttribute(function_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes),
           ("cuFuncSetAttribute(" + entry_ + ", MAX_DYNAMIC_SHARED_SIZE_BYTES=" + std::to_string(bytes) + ")").c_str());
  max_dynamic_smem_ = bytes;
}

int Kernel::attribute(CUfunction_attribute which) const {
  int v = 0;
  cu_check(api_->FuncGetAttribute(&v, which, function_), "cuFuncGetAttribute");
  return v;
}

void Kernel::launch(Dim3 grid, Dim3 block, int smem_bytes, CUstream stream, const void* params) const {
  void* args[1] = {const_cast<void*>(params)};
  launch_args(grid, block, smem_bytes, stream, args);
}

void Kernel::launch_args(Dim3 grid, Dim3 block, int smem_bytes, CUstream stream, void** args) const {
  if (smem_bytes > max_dynamic_smem_) {
    throw std::invalid_argument("launch of " + entry_ + " with " + std::to_string(smem_bytes) +
                                " bytes of dynamic shared memory, but only " + std::to_string(max_dynamic_smem_) +
                                " are reserved (Module::kernel(entry, smem) / reserve_dynamic_smem)");
  }
  const CUresult r = api_->LaunchKernel(function_, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                        static_cast<unsigned>(smem_bytes), stream, args, nullptr);
  if (r != CUDA_SUCCESS) cu_check(r, ("cuLaunchKernel(" + entry_ + ")").c_str());
  if (chain_stamps_requested()) report_chain_stamps(*api_, function_, entry_);
}

Module::Module(const std::vector<char>& cubin) {
  if (cubin.empty()) throw std::invalid_argument("Module: empty cubin");
  ATTNC_CU(ModuleLoadData, &module_, cubin.data());
}

Module::~Module() {
  if (module_) Driver::get().api().ModuleUnload(module_);
}

Module::Module(Module&& other) noexcept : module_(std::exchange(other.module_, nullptr)) {}

Module& Module::operator=(Module&& other) noexcept {
  if (this != &other) {
    if (module_) Driver::get().api().ModuleUnload(module_);
    module_ = std::exchange(other.module_, nullptr);
  }
  return *this;
}

Kernel Module::kernel(const std::string& entry, int dynamic_smem_bytes) const {
  const DriverApi& api = Driver::get().api();
  CUfunction f = nullptr;
  cu_check(api.ModuleGetFunction(&f, module_, entry.c_str()), ("cuModuleGetFunction(" + entry + ")").c_str());
  Kernel k(&api, f, entry);
  k.reserve_dynamic_smem(dynamic_smem_bytes);
  CUdevice device = 0;
  cu_check(api.CtxGetDevice(&device), "cuCtxGetDevice");
  cu_check(api.DeviceGetAttribute(&k.sm_count_, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device),
           "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)");
  return k;
}

}  // namespace attnc
