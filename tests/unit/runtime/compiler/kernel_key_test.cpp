// kernel_key: stable for the same inputs, different whenever the cubin could differ, blind to what
// cannot change it (timeout, spec id, config text).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>

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

// ATTNC_NVRTC_DEFINES (diagnostic kernel variants): each word a -D option, and so a different key.
TEST(KernelKey, EnvironmentDefinesAreOptionsAndChangeTheKey) {
  const auto base = test::mma_kernel("sm_90a");
  const auto key = kernel_key(base);
  ASSERT_EQ(setenv("ATTNC_NVRTC_DEFINES", " ATTNC_CHAIN_STAMPS  LEVEL=2 ", 1), 0);
  const auto opts = nvrtc_options(base, {});
  const auto stamped = kernel_key(base);
  ASSERT_EQ(setenv("ATTNC_NVRTC_DEFINES", "", 1), 0);
  const auto empty = kernel_key(base);
  unsetenv("ATTNC_NVRTC_DEFINES");
  EXPECT_NE(std::find(opts.begin(), opts.end(), "-DATTNC_CHAIN_STAMPS"), opts.end());
  EXPECT_NE(std::find(opts.begin(), opts.end(), "-DLEVEL=2"), opts.end());
  EXPECT_NE(stamped, key);
  EXPECT_EQ(empty, key);
  EXPECT_EQ(kernel_key(base), key);
}

// A word that is not NAME or NAME=VALUE (NAME a C identifier) is refused by name, not passed to NVRTC.
TEST(KernelKey, EnvironmentDefinesRejectWhatIsNotAMacroDefinition) {
  const auto base = test::mma_kernel("sm_90a");
  for (const char* bad : {"1BAD", "-DFOO", "=2", "A-B=1"}) {
    ASSERT_EQ(setenv("ATTNC_NVRTC_DEFINES", (std::string("OK ") + bad).c_str(), 1), 0);
    try {
      (void)kernel_key(base);
      ADD_FAILURE() << bad << " accepted";
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(std::string("ATTNC_NVRTC_DEFINES: '") + bad + "'"), std::string::npos) << what;
      EXPECT_NE(what.find("NAME or NAME=VALUE"), std::string::npos) << what;
    }
  }
  unsetenv("ATTNC_NVRTC_DEFINES");
  EXPECT_NO_THROW((void)kernel_key(base));
}

}  // namespace
}  // namespace attnc
