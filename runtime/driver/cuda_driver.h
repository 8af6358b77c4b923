// The CUDA driver API, reached at run time: dlopen("libcuda.so.1"), then every entry point through
// cuGetProcAddress_v2 with an explicit CUDA version. Nothing links against libcuda, so the same
// binary generates and compiles kernels on a machine without a GPU and launches them on one with a
// GPU; without one, Driver says why instead of crashing. <cuda.h> supplies types only.
#pragma once

#include <cuda.h>

#include <memory>
#include <stdexcept>
#include <string>

namespace attnc {

// The entry points we use: X(name, (parameters)), each returning CUresult, with the signature of the
// ABI version we ask for (kCudaAbiVersion). Names drop the "cu" prefix: cuda.h #defines many cu*
// names to their _v2 symbols.
#define ATTNC_CUDA_DRIVER_API(X)                                                               \
  X(GetErrorName, (CUresult, const char**))                                                    \
  X(GetErrorString, (CUresult, const char**))                                                  \
  X(Init, (unsigned int))                                                                      \
  X(DriverGetVersion, (int*))                                                                  \
  X(DeviceGet, (CUdevice*, int))                                                               \
  X(DeviceGetCount, (int*))                                                                    \
  X(DeviceGetName, (char*, int, CUdevice))                                                     \
  X(DeviceGetAttribute, (int*, CUdevice_attribute, CUdevice))                                  \
  X(DeviceTotalMem, (size_t*, CUdevice))                                                       \
  X(DevicePrimaryCtxRetain, (CUcontext*, CUdevice))                                            \
  X(DevicePrimaryCtxRelease, (CUdevice))                                                       \
  X(CtxSetCurrent, (CUcontext))                                                                \
  X(CtxGetCurrent, (CUcontext*))                                                               \
  X(CtxSynchronize, ())                                                                        \
  X(ModuleLoadData, (CUmodule*, const void*))                                                  \
  X(ModuleGetFunction, (CUfunction*, CUmodule, const char*))                                   \
  X(ModuleUnload, (CUmodule))                                                                  \
  X(ModuleGetGlobal, (CUdeviceptr*, size_t*, CUmodule, const char*))                          \
  X(FuncGetModule, (CUmodule*, CUfunction))                                                   \
  X(FuncSetAttribute, (CUfunction, CUfunction_attribute, int))                                 \
  X(FuncGetAttribute, (int*, CUfunction_attribute, CUfunction))                                \
  X(LaunchKernel, (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,     \
                  unsigned, CUstream, void**, void**))                                         \
  X(OccupancyMaxActiveBlocksPerMultiprocessor, (int*, CUfunction, int, size_t))                \
  X(MemAlloc, (CUdeviceptr*, size_t))                                                          \
  X(MemFree, (CUdeviceptr))                                                                    \
  X(MemGetInfo, (size_t*, size_t*))                                                            \
  X(MemcpyHtoD, (CUdeviceptr, const void*, size_t))                                            \
  X(MemcpyDtoH, (void*, CUdeviceptr, size_t))                                                  \
  X(MemcpyDtoD, (CUdeviceptr, CUdeviceptr, size_t))                                            \
  X(MemcpyHtoDAsync, (CUdeviceptr, const void*, size_t, CUstream))                             \
  X(MemcpyDtoHAsync, (void*, CUdeviceptr, size_t, CUstream))                                   \
  X(MemsetD8, (CUdeviceptr, unsigned char, size_t))                                            \
  X(MemsetD16, (CUdeviceptr, unsigned short, size_t))                                          \
  X(MemsetD32, (CUdeviceptr, unsigned int, size_t))                                            \
  X(MemsetD8Async, (CUdeviceptr, unsigned char, size_t, CUstream))                             \
  X(StreamCreate, (CUstream*, unsigned int))                                                   \
  X(StreamDestroy, (CUstream))                                                                 \
  X(StreamSynchronize, (CUstream))                                                             \
  X(EventCreate, (CUevent*, unsigned int))                                                     \
  X(EventRecord, (CUevent, CUstream))                                                          \
  X(EventSynchronize, (CUevent))                                                               \
  X(EventElapsedTime, (float*, CUevent, CUevent))                                              \
  X(EventDestroy, (CUevent))                                                                   \
  X(EventQuery, (CUevent))                                                                     \
  X(StreamIsCapturing, (CUstream, CUstreamCaptureStatus*))                                     \
  X(StreamBeginCapture, (CUstream, CUstreamCaptureMode))                                       \
  X(StreamEndCapture, (CUstream, CUgraph*))                                                    \
  X(GraphInstantiateWithFlags, (CUgraphExec*, CUgraph, unsigned long long))                    \
  X(GraphLaunch, (CUgraphExec, CUstream))                                                      \
  X(GraphExecDestroy, (CUgraphExec))                                                           \
  X(GraphDestroy, (CUgraph))                                                                   \
  X(TensorMapEncodeTiled, (CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*, \
                           const cuuint64_t*, const cuuint32_t*, const cuuint32_t*,             \
                           CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion,   \
                           CUtensorMapFloatOOBfill))                                      \
  X(CtxGetDevice, (CUdevice*))

struct DriverApi {
#define ATTNC_DECLARE_ENTRY(name, params) CUresult(*name) params = nullptr;
  ATTNC_CUDA_DRIVER_API(ATTNC_DECLARE_ENTRY)
#undef ATTNC_DECLARE_ENTRY
};

// Every entry point is requested as of CUDA 12.0: the signatures above are that ABI, and a newer
// driver keeps serving it (e.g. cuCtxSynchronize stays argument-free although CUDA 13 adds
// cuCtxSynchronize_v2(ctx)).
inline constexpr int kCudaAbiVersion = 12000;

// A failed driver call: which call, and the driver's name and text for the error.
class CudaError : public std::runtime_error {
 public:
  CudaError(CUresult code, const std::string& call);
  CUresult code() const { return code_; }

 private:
  CUresult code_;
};

// Thrown when the driver is needed but absent; what() is Driver::error().
class DriverUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Driver {
 public:
  // The process-wide driver: loaded and cuInit'ed on first use (thread-safe), never unloaded.
  static Driver& get();
  // A driver from another library file, for tests (e.g. the toolkit's stub libcuda.so).
  static std::unique_ptr<Driver> load(const std::string& library);

  ~Driver();
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  bool available() const { return error_.empty(); }
  // Why not: "no CUDA driver: dlopen(libcuda.so.1) failed: ...", "no GPU: cuInit: CUDA_ERROR_NO_DEVICE ...".
  const std::string& error() const { return error_; }
  // The entry points; throws DriverUnavailable when there are none.
  const DriverApi& api() const;
  int version() const { return version_; }  // cuDriverGetVersion, e.g. 13000; 0 when unavailable

  // "CUDA_ERROR_OUT_OF_MEMORY" / "out of memory"; a number when the driver cannot say.
  std::string error_name(CUresult code) const;
  std::string error_string(CUresult code) const;

 private:
  explicit Driver(const std::string& library);
  void* handle_ = nullptr;
  bool unload_ = false;
  DriverApi api_;
  std::string error_;
  int version_ = 0;
};

// Throws CudaError naming `call` unless code is CUDA_SUCCESS.
void cu_check(CUresult code, const char* call);

}  // namespace attnc

// ATTNC_CU(MemAlloc, &ptr, bytes): calls cuMemAlloc through the driver and throws CudaError
// ("cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory)") on failure.
#define ATTNC_CU(name, ...) ::attnc::cu_check(::attnc::Driver::get().api().name(__VA_ARGS__), "cu" #name)
