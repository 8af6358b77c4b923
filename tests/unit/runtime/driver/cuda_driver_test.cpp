// The driver layer on a machine without a GPU (this one): clear "why not" messages, no crash.
// tests/gpu/driver_smoke_test.cpp covers a machine with one.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "runtime/driver/cuda_driver.h"
#include "runtime/driver/device.h"

namespace attnc {
namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

bool libcuda_present() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h) dlclose(h);
  return h != nullptr;
}

TEST(CudaDriver, UnavailableWithoutLibcudaSaysWhy) {
  if (libcuda_present()) GTEST_SKIP() << "this machine has libcuda.so.1";
  const Driver& d = Driver::get();
  EXPECT_FALSE(d.available());
  EXPECT_TRUE(contains(d.error(), "no CUDA driver: dlopen(libcuda.so.1) failed: ")) << d.error();
  EXPECT_EQ(d.version(), 0);
  try {
    d.api();
    FAIL() << "api() without a driver";
  } catch (const DriverUnavailable& e) {
    EXPECT_EQ(std::string(e.what()), d.error());
  }
  EXPECT_EQ(Device::count(), 0);
  EXPECT_THROW(Device(0), DriverUnavailable);
  EXPECT_THROW(DeviceBuffer(16), DriverUnavailable);
}

TEST(CudaDriver, MissingLibrary) {
  const auto d = Driver::load("libattnc_no_such_library.so.1");
  EXPECT_FALSE(d->available());
  EXPECT_TRUE(contains(d->error(), "no CUDA driver: dlopen(libattnc_no_such_library.so.1) failed: ")) << d->error();
}

TEST(CudaDriver, LibraryWithoutGetProcAddress) {
  const auto d = Driver::load("libm.so.6");
  EXPECT_FALSE(d->available());
  EXPECT_TRUE(contains(d->error(), "libm.so.6 has no cuGetProcAddress_v2")) << d->error();
}

// The toolkit's stub library has every symbol but no driver behind it: the whole load path runs
// and still ends in a clear error.
TEST(CudaDriver, ToolkitStubLibrary) {
  const std::string stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (!std::filesystem::exists(stub)) GTEST_SKIP() << "no " << stub;
  const auto d = Driver::load(stub);
  EXPECT_FALSE(d->available());
  EXPECT_EQ(d->error(), "no CUDA driver: " + stub +
                           " is the CUDA toolkit's stub library (CUDA_ERROR_STUB_LIBRARY), not a driver");
}

TEST(CudaDriver, ErrorNamesWithoutADriverFallBackToNumbers) {
  const auto d = Driver::load("libattnc_no_such_library.so.1");
  EXPECT_EQ(d->error_name(CUDA_ERROR_OUT_OF_MEMORY), "CUresult 2");
  const CudaError e(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc");
  EXPECT_TRUE(std::string(e.what()).starts_with("cuMemAlloc: ")) << e.what();
  EXPECT_EQ(e.code(), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_NO_THROW(cu_check(CUDA_SUCCESS, "cuInit"));
  EXPECT_THROW(cu_check(CUDA_ERROR_INVALID_VALUE, "cuInit"), CudaError);
}

TEST(Device, ArchForComputeCapability) {
  EXPECT_EQ(arch_for_compute_capability(8, 0), "sm_80");
  EXPECT_EQ(arch_for_compute_capability(8, 6), "sm_86");
  EXPECT_EQ(arch_for_compute_capability(8, 9), "sm_89");
  EXPECT_EQ(arch_for_compute_capability(9, 0), "sm_90a");
  EXPECT_EQ(arch_for_compute_capability(10, 0), "sm_100");
}

}  // namespace
}  // namespace attnc
