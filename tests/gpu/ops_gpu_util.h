// Shared by the op GPU tests (merge, cache_write, cascade): one device for the process, a plan
// compiled and loaded, fresh random 16-bit data with the exact values it holds.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "generator/emit/emit.h"
#include "runtime/driver/cuda_driver.h"
#include "runtime/driver/device.h"
#include "check/half.h"
#include "runtime/driver/module.h"
#include "runtime/compiler/nvrtc_compiler.h"

namespace attnc {

// The device every test of the process uses; null without a GPU (tests then skip).
inline Device* test_gpu() {
  static std::unique_ptr<Device> device = Device::count() > 0 ? std::make_unique<Device>(0) : nullptr;
  if (device) device->make_current();
  return device.get();
}

#define ATTNC_REQUIRE_GPU() \
  if (!test_gpu()) GTEST_SKIP() << "no GPU: " << Driver::get().error()

struct LoadedKernel {
  Module module;
  Kernel kernel;
  std::string entry;
};

inline LoadedKernel load_kernel(const KernelPlan& plan) {
  const KernelSource src = emit_kernel(plan);
  const CompiledKernel compiled = compile_kernel(src);
  Module module(compiled.cubin);
  Kernel kernel = module.kernel(src.entry, plan.smem_bytes);
  return {std::move(module), kernel, src.entry};
}

// A fresh seed per run (printed by the tests, so a failure can be replayed).
inline std::uint64_t fresh_seed() {
  return std::uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
}

// n random 16-bit values ~ N(0, sigma); `exact` receives what they hold.
inline std::vector<std::uint16_t> random_half(DType t, size_t n, std::mt19937_64& rng, std::vector<double>* exact,
                                              float sigma = 1.f) {
  std::normal_distribution<float> dist(0.f, sigma);
  std::vector<std::uint16_t> h(n);
  if (exact) exact->resize(n);
  for (size_t i = 0; i < n; ++i) {
    h[i] = to_half(t, dist(rng));
    if (exact) (*exact)[i] = from_half(t, h[i]);
  }
  return h;
}

}  // namespace attnc
