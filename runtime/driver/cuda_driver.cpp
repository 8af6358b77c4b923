#include "runtime/driver/cuda_driver.h"

#include <dlfcn.h>

namespace attnc {
namespace {

using GetProcAddress = CUresult(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

std::string describe(const Driver& d, CUresult code) {
  return d.error_name(code) + " (" + d.error_string(code) + ")";
}

}  // namespace

CudaError::CudaError(CUresult code, const std::string& call)
    : std::runtime_error(call + ": " + describe(Driver::get(), code)), code_(code) {}

void cu_check(CUresult code, const char* call) {
  if (code != CUDA_SUCCESS) throw CudaError(code, call);
}

Driver& Driver::get() {
  static Driver driver("libcuda.so.1");
  return driver;
}

std::unique_ptr<Driver> Driver::load(const std::string& library) {
  std::unique_ptr<Driver> d(new Driver(library));
  d->unload_ = true;
  return d;
}

Driver::Driver(const std::string& library) {
  handle_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char* why = dlerror();
    error_ = "no CUDA driver: dlopen(" + library + ") failed: " + (why ? why : "unknown reason");
    return;
  }
  // The one symbol looked up by name; it exists in every driver since CUDA 12.0.
  auto* get_proc = reinterpret_cast<GetProcAddress*>(dlsym(handle_, "cuGetProcAddress_v2"));
  if (!get_proc) {
    error_ = "no CUDA driver: " + library + " has no cuGetProcAddress_v2 (a driver for CUDA 12.0 or newer is needed)";
    return;
  }
  DriverApi api;
  std::string missing;  // symbols the driver does not have at our ABI version
  CUresult failure = CUDA_SUCCESS;  // cuGetProcAddress itself failed: the library is no driver
  auto resolve = [&](const char* symbol, void** fn) {
    if (failure != CUDA_SUCCESS) return;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    const CUresult r = get_proc(symbol, fn, kCudaAbiVersion, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status);
    if (r == CUDA_SUCCESS && status == CU_GET_PROC_ADDRESS_SUCCESS && *fn) return;
    *fn = nullptr;
    if (r != CUDA_SUCCESS && status != CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT &&
        r != CUDA_ERROR_NOT_FOUND) {
      failure = r;
      return;
    }
    missing += std::string(missing.empty() ? "" : ", ") + symbol +
               (status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT ? " (driver too old)" : "");
  };
#define ATTNC_RESOLVE_ENTRY(name, params) resolve("cu" #name, reinterpret_cast<void**>(&api.name));
  ATTNC_CUDA_DRIVER_API(ATTNC_RESOLVE_ENTRY)
#undef ATTNC_RESOLVE_ENTRY
  if (failure == CUDA_ERROR_STUB_LIBRARY) {
    error_ = "no CUDA driver: " + library + " is the CUDA toolkit's stub library (CUDA_ERROR_STUB_LIBRARY), not a driver";
    return;
  }
  if (failure != CUDA_SUCCESS) {
    error_ = "no CUDA driver: cuGetProcAddress in " + library + " failed with CUresult " +
             std::to_string(static_cast<int>(failure));
    return;
  }
  if (!missing.empty()) {
    error_ = "no CUDA driver: " + library + " does not provide " + missing;
    return;
  }
  api_ = api;  // from here error_name/error_string work
  if (const CUresult r = api_.Init(0); r != CUDA_SUCCESS) {
    error_ = (r == CUDA_ERROR_NO_DEVICE ? "no GPU: cuInit: " : "CUDA driver unusable: cuInit: ") + describe(*this, r);
    return;
  }
  if (const CUresult r = api_.DriverGetVersion(&version_); r != CUDA_SUCCESS) {
    error_ = "CUDA driver unusable: cuDriverGetVersion: " + describe(*this, r);
    return;
  }
  int count = 0;
  if (const CUresult r = api_.DeviceGetCount(&count); r != CUDA_SUCCESS || count == 0) {
    error_ = "no GPU: cuDeviceGetCount: " + (r != CUDA_SUCCESS ? describe(*this, r) : std::string("0 devices"));
  }
}

Driver::~Driver() {
  // The process-wide driver stays loaded (CUDA objects may be released after it during exit).
  if (handle_ && unload_) dlclose(handle_);
}

const DriverApi& Driver::api() const {
  if (!available()) throw DriverUnavailable(error_);
  return api_;
}

std::string Driver::error_name(CUresult code) const {
  const char* s = nullptr;
  if (api_.GetErrorName && api_.GetErrorName(code, &s) == CUDA_SUCCESS && s) return s;
  return "CUresult " + std::to_string(static_cast<int>(code));
}

std::string Driver::error_string(CUresult code) const {
  const char* s = nullptr;
  if (api_.GetErrorString && api_.GetErrorString(code, &s) == CUDA_SUCCESS && s) return s;
  return "no description";
}

}  // namespace attnc
