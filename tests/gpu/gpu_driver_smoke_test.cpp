// The driver layer on a real GPU: compile for the device's arch, load, launch on random input into a
// poisoned output buffer, check every element. Skips (with the driver's reason) where there is no GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>

#include "attnc/params/params.h"
#include "runtime/driver/cuda_driver.h"
#include "runtime/driver/device.h"
#include "check/half.h"
#include "runtime/driver/module.h"
#include "runtime/compiler/nvrtc_compiler.h"
#include "tests/unit/runtime/compiler/test_kernels.h"

namespace attnc {
namespace {

class DriverSmoke : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Driver::get().available()) GTEST_SKIP() << Driver::get().error();
    device_ = std::make_unique<Device>(0);
    if (!is_supported_arch(device_->arch())) GTEST_SKIP() << "no kernels for " << device_->arch();
  }
  KernelSource source(const std::string& entry, const std::string& text) const {
    KernelSource s;
    s.entry = entry;
    s.source = text;
    s.arch = device_->arch();
    return s;
  }
  std::unique_ptr<Device> device_;
};

// Host mirror of the kernel's parameter struct below.
struct AxpyParams {
  const float* x;
  const float* y;
  float* out;
  float a;
  int n;
};

const char* kAxpy = R"(
struct AxpyParams { const float* x; const float* y; float* out; float a; int n; };
extern "C" __global__ void attnc_smoke_axpy(const AxpyParams p) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += gridDim.x * blockDim.x)
    p.out[i] = p.a * p.x[i] + p.y[i];
}
)";

TEST_F(DriverSmoke, DeviceProperties) {
  const Device& d = *device_;
  std::printf("device %d: %s, cc %d.%d (%s), %d SMs, %.1f GiB, smem opt-in %d B, L2 %d B, driver %d, free %.1f GiB\n",
              d.ordinal(), d.name().c_str(), d.cc_major(), d.cc_minor(), d.arch().c_str(), d.sm_count(),
              d.total_memory() / 1073741824.0, d.max_smem_per_block_optin(), d.l2_bytes(), d.driver_version(),
              d.free_memory() / 1073741824.0);
  EXPECT_FALSE(d.name().empty());
  EXPECT_GE(d.cc_major(), 8);
  EXPECT_GT(d.sm_count(), 0);
  EXPECT_GT(d.total_memory(), 0u);
  EXPECT_GT(d.free_memory(), 0u);
  EXPECT_GE(d.max_smem_per_block_optin(), 48 * 1024);
  EXPECT_GE(d.driver_version(), kCudaAbiVersion);
  EXPECT_GE(Device::count(), 1);
  CUcontext current = nullptr;
  ATTNC_CU(CtxGetCurrent, &current);
  EXPECT_EQ(current, d.context());
  d.synchronize();  // cuCtxSynchronize as of the 12.0 ABI: no argument
}

TEST_F(DriverSmoke, AxpyOnRandomInputWithPoisonedOutput) {
  const auto k = compile_kernel(source("attnc_smoke_axpy", kAxpy));
  Module module(k.cubin);
  const Kernel axpy = module.kernel("attnc_smoke_axpy");

  const int n = (1 << 20) + 37, pad = 64;  // odd length; the padding must stay untouched
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> dist(-2.f, 2.f);
  std::vector<float> x(n), y(n);
  for (auto& v : x) v = dist(rng);
  for (auto& v : y) v = dist(rng);
  auto dx = DeviceBuffer::from(x), dy = DeviceBuffer::from(y);
  DeviceBuffer dout((n + pad) * sizeof(float));
  dout.memset(0xff);  // NaN everywhere: an element the kernel skips cannot pass

  AxpyParams p{dx.as<float>(), dy.as<float>(), dout.as<float>(), 0.75f, n};
  Stream stream;
  Event start, stop;
  start.record(stream.handle());
  axpy.launch({static_cast<unsigned>(device_->sm_count() * 4)}, {256}, 0, stream.handle(), &p);
  stop.record(stream.handle());
  stream.synchronize();
  const float ms = elapsed_ms(start, stop);
  EXPECT_GT(ms, 0.f);
  std::printf("axpy of %d floats: %.3f ms (%.0f GB/s)\n", n, ms, 12.0 * n / (ms * 1e6));

  const auto out = dout.download<float>();
  ASSERT_EQ(out.size(), static_cast<size_t>(n + pad));
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    const float want = 0.75f * x[i] + y[i];
    if (!(std::fabs(out[i] - want) <= 1e-6f * (1.f + std::fabs(want))) && bad++ < 5)
      ADD_FAILURE() << "out[" << i << "] = " << out[i] << ", want " << want;
  }
  EXPECT_EQ(bad, 0);
  for (int i = n; i < n + pad; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, &out[i], 4);
    EXPECT_EQ(bits, 0xffffffffu) << "padding overwritten at " << i;
  }
}

// fp16 bits of a small integer (exact in fp16).
std::uint16_t half_of(int v) { return float_to_fp16(float(v)); }

// mma.sync m16n8k16 through inline PTX, parameters in the shared AttentionParams struct: checks the
// fragment layout the prefill_sm80 family relies on, and that host and NVRTC agree on the struct.
TEST_F(DriverSmoke, MmaTileMatchesHost) {
  // The same mma kernel the compiler unit tests build (tests/unit/runtime/compiler/test_kernels.h).
  const auto k = compile_kernel(test::mma_kernel(device_->arch(), "attnc_smoke_mma"));
  Module module(k.cubin);

  std::mt19937 rng(7);
  std::uniform_int_distribution<int> dist(-4, 4);
  int A[16][16], B[16][8];  // B[k][n]
  for (auto& row : A)
    for (auto& v : row) v = dist(rng);
  for (auto& row : B)
    for (auto& v : row) v = dist(rng);
  // Register fragments per lane (PTX ISA, mma.m16n8k16 .f16): g = lane / 4, t = lane % 4; the lower
  // half of each register holds the lower column (A) or row (B) index.
  auto pack = [](int lo, int hi) { return static_cast<std::uint32_t>(half_of(lo)) | (std::uint32_t(half_of(hi)) << 16); };
  std::vector<std::uint32_t> a_regs(32 * 4), b_regs(32 * 2);
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    a_regs[lane * 4 + 0] = pack(A[g][2 * t], A[g][2 * t + 1]);
    a_regs[lane * 4 + 1] = pack(A[g + 8][2 * t], A[g + 8][2 * t + 1]);
    a_regs[lane * 4 + 2] = pack(A[g][2 * t + 8], A[g][2 * t + 9]);
    a_regs[lane * 4 + 3] = pack(A[g + 8][2 * t + 8], A[g + 8][2 * t + 9]);
    b_regs[lane * 2 + 0] = pack(B[2 * t][g], B[2 * t + 1][g]);
    b_regs[lane * 2 + 1] = pack(B[2 * t + 8][g], B[2 * t + 9][g]);
  }
  auto da = DeviceBuffer::from(a_regs), db = DeviceBuffer::from(b_regs);
  DeviceBuffer dd(32 * 4 * sizeof(float));
  dd.memset(0xff);
  AttentionParams p{};
  p.q = da.as();
  p.k = db.as();
  p.o = dd.as();
  p.scale_log2 = 0.5f;
  module.kernel("attnc_smoke_mma").launch({1}, {32}, 0, nullptr, &p);
  device_->synchronize();
  const auto d = dd.download<float>();
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    const int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {2 * t, 2 * t + 1, 2 * t, 2 * t + 1};
    for (int i = 0; i < 4; ++i) {
      int want = 0;
      for (int kk = 0; kk < 16; ++kk) want += A[rows[i]][kk] * B[kk][cols[i]];
      EXPECT_EQ(d[lane * 4 + i], 0.5f * want) << "lane " << lane << " element " << i;
    }
  }
}

// More than 48 KiB of dynamic shared memory needs the function attribute; Module::kernel sets it.
TEST_F(DriverSmoke, LargeDynamicSharedMemory) {
  const char* text = R"(
extern "C" __global__ void attnc_smoke_smem(const float* in, float* out, int n) {
  extern __shared__ float s[];
  for (int i = threadIdx.x; i < n; i += blockDim.x) s[i] = in[i];
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = s[n - 1 - i];
}
)";
  const int n = 96 * 1024 / 4, bytes = n * 4;
  ASSERT_GE(device_->max_smem_per_block_optin(), bytes);
  const auto k = compile_kernel(source("attnc_smoke_smem", text));
  Module module(k.cubin);
  Kernel small = module.kernel("attnc_smoke_smem");
  std::vector<float> in(n);
  for (int i = 0; i < n; ++i) in[i] = static_cast<float>(i) * 0.5f - 7.f;
  auto din = DeviceBuffer::from(in);
  DeviceBuffer dout(bytes);
  dout.memset(0xff);
  const float* pin = din.as<float>();
  float* pout = dout.as<float>();
  int count = n;
  void* args[] = {&pin, &pout, &count};
  EXPECT_THROW(small.launch_args({1}, {512}, bytes, nullptr, args), std::invalid_argument);

  const Kernel big = module.kernel("attnc_smoke_smem", bytes);
  EXPECT_EQ(big.attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), bytes);
  big.launch_args({1}, {512}, bytes, nullptr, args);
  device_->synchronize();
  const auto out = dout.download<float>();
  for (int i = 0; i < n; ++i) ASSERT_EQ(out[i], in[n - 1 - i]) << i;
}

// A cubin for another major arch does not load, and the error says which call and why.
TEST_F(DriverSmoke, WrongArchCubinIsAClearError) {
  if (device_->cc_major() == 8) GTEST_SKIP() << "sm_80 cubins load on every 8.x device";
  auto src = source("attnc_smoke_axpy", kAxpy);
  src.arch = "sm_80";
  const auto k = compile_kernel(src);
  try {
    Module m(k.cubin);
    FAIL() << "an sm_80 cubin loaded on " << device_->arch();
  } catch (const CudaError& e) {
    EXPECT_EQ(e.code(), CUDA_ERROR_NO_BINARY_FOR_GPU);
    EXPECT_NE(std::string(e.what()).find("cuModuleLoadData: CUDA_ERROR_NO_BINARY_FOR_GPU"), std::string::npos)
        << e.what();
  }
}

TEST_F(DriverSmoke, MissingEntryIsAClearError) {
  const auto k = compile_kernel(source("attnc_smoke_axpy", kAxpy));
  Module module(k.cubin);
  try {
    module.kernel("attnc_not_there");
    FAIL();
  } catch (const CudaError& e) {
    EXPECT_NE(std::string(e.what()).find("cuModuleGetFunction(attnc_not_there): CUDA_ERROR_NOT_FOUND"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace attnc
