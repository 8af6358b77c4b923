// compile_many: results in input order, failures and timeouts in their own slots, parallel speedup
// reported (not asserted: this machine has two cores and may be busy).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "runtime/compiler/nvrtc_compiler.h"
#include "tests/unit/runtime/compiler/test_kernels.h"

namespace attnc {
namespace {

using namespace std::chrono_literals;

// `steps` sets the work per kernel: 40 compiles in tens of ms, 150 in about 150 ms here.
std::vector<KernelSource> kernels(int n, int steps = 40) {
  std::vector<KernelSource> v;
  for (int i = 0; i < n; ++i) {
    // Different entries and bodies, so nothing is shared between the compiles.
    v.push_back(test::plain_kernel("attnc_many_" + std::to_string(i),
                                   "  float a = x[threadIdx.x];\n#pragma unroll\n  for (int j = 0; j < " +
                                       std::to_string(steps + i) + "; ++j) a = a * x[(j * 3 + threadIdx.x) % n] + " +
                                       std::to_string(i) + ".f;\n  x[threadIdx.x] = a;"));
  }
  return v;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

TEST(CompileMany, ResultsInInputOrderWithErrorsInPlace) {
  auto sources = kernels(5);
  sources[2].source = "#error broken on purpose\n" + sources[2].source;
  const auto results = compile_many(sources, {}, 2);
  ASSERT_EQ(results.size(), sources.size());
  for (size_t i = 0; i < results.size(); ++i) {
    if (i == 2) {
      EXPECT_FALSE(results[i].ok());
      EXPECT_FALSE(results[i].timed_out);
      EXPECT_NE(results[i].error.find("attnc_many_2.cu:1"), std::string::npos) << results[i].error;
      EXPECT_NE(results[i].error.find("broken on purpose"), std::string::npos) << results[i].error;
    } else {
      ASSERT_TRUE(results[i].ok()) << results[i].error;
      EXPECT_EQ(results[i].kernel->entry, sources[i].entry);
      EXPECT_GT(results[i].kernel->report.registers, 0);
      EXPECT_TRUE(results[i].error.empty());
    }
  }
}

TEST(CompileMany, ParallelAgainstSerial) {
  const auto sources = kernels(4, 150);
  compile_many({sources[0]}, {}, 1);  // warm NVRTC up so neither run pays the first-use cost
  auto t = std::chrono::steady_clock::now();
  const auto serial = compile_many(sources, {}, 1);
  const double serial_s = seconds_since(t);
  t = std::chrono::steady_clock::now();
  const auto parallel = compile_many(sources, {}, 2);
  const double parallel_s = seconds_since(t);
  for (size_t i = 0; i < sources.size(); ++i) {
    ASSERT_TRUE(serial[i].ok() && parallel[i].ok());
    EXPECT_EQ(serial[i].kernel->cubin, parallel[i].kernel->cubin);  // deterministic
  }
  std::printf("compile_many of %zu kernels: jobs=1 %.3f s, jobs=2 %.3f s (speedup %.2fx)\n", sources.size(),
              serial_s, parallel_s, serial_s / parallel_s);
  RecordProperty("serial_ms", static_cast<int>(serial_s * 1000));
  RecordProperty("parallel_ms", static_cast<int>(parallel_s * 1000));
}

TEST(CompileMany, TimeoutFillsOnlyItsOwnSlot) {
  std::vector<KernelSource> sources = {test::mma_kernel("sm_80"), test::slow_kernel(), test::mma_kernel("sm_90a")};
  CompileOptions opt;
  opt.timeout = 1500ms;  // ample for the small kernels, far short of the slow one
  const auto results = compile_many(sources, opt, 2);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_TRUE(results[0].ok()) << results[0].error;
  EXPECT_FALSE(results[1].ok());
  EXPECT_TRUE(results[1].timed_out);
  EXPECT_NE(results[1].error.find("attnc_test_slow"), std::string::npos);
  EXPECT_TRUE(results[2].ok()) << results[2].error;
  EXPECT_EQ(results[2].kernel->arch, "sm_90a");
}

TEST(CompileMany, EmptyInput) { EXPECT_TRUE(compile_many({}, {}, 4).empty()); }

}  // namespace
}  // namespace attnc
