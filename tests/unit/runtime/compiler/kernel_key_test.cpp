// kernel_key: stable for the same inputs, different whenever the cubin could differ, blind to what
// cannot change it (timeout, spec id, config text).
#include <gtest/gtest.h>

#include "runtime/compiler/nvrtc_compiler.h"
#include "tests/unit/runtime/compiler/test_kernels.h"

namespace attnc {
namespace {

TEST(KernelKey, StableAndHex) {
  const auto src = test::mma_kernel("sm_90a");
  const auto key = kernel_key(src);
  EXPECT_EQ(key, kernel_key(src));
  EXPECT_EQ(key, kernel_key(test::mma_kernel("sm_90a")));
  ASSERT_EQ(key.size(), 32u);
  EXPECT_EQ(key.find_first_not_of("0123456789abcdef"), std::string::npos);
}

TEST(KernelKey, ChangesWithWhatShapesTheCubin) {
  const auto base = test::mma_kernel("sm_90a");
  const auto key = kernel_key(base);

  auto other_source = base;
  other_source.source += "\n";
  EXPECT_NE(kernel_key(other_source), key);

  auto other_arch = base;
  other_arch.arch = "sm_80";
  EXPECT_NE(kernel_key(other_arch), key);

  CompileOptions arch_override;
  arch_override.arch = "sm_90";
  EXPECT_NE(kernel_key(base, arch_override), key);

  auto other_options = base;
  other_options.options = {"--use_fast_math"};
  EXPECT_NE(kernel_key(other_options), key);

  CompileOptions line_info;
  line_info.line_info = true;
  EXPECT_NE(kernel_key(base, line_info), key);
}

TEST(KernelKey, IgnoresWhatDoesNotShapeTheCubin) {
  const auto base = test::mma_kernel("sm_90a");
  const auto key = kernel_key(base);

  CompileOptions timeout;
  timeout.timeout = std::chrono::milliseconds(5);
  EXPECT_EQ(kernel_key(base, timeout), key);

  CompileOptions same_arch;
  same_arch.arch = "sm_90a";
  EXPECT_EQ(kernel_key(base, same_arch), key);

  auto labels = base;  // two specs that need the same code share one cubin
  labels.spec_id = "another-spec";
  labels.config_json = "{\"block_m\":64}";
  labels.family = "prefill_sm80";
  labels.launch.threads = 256;
  EXPECT_EQ(kernel_key(labels), key);
}

}  // namespace
}  // namespace attnc
