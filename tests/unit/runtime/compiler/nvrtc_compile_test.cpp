// compile_kernel / compile_to_ptx on real kernels: cubins for sm_80 and sm_90a, the ptxas report,
// the exact option list, and arch validation.
#include <gtest/gtest.h>

#include <regex>

#include "runtime/compiler/nvrtc_compiler.h"
#include "tests/unit/runtime/compiler/test_kernels.h"

namespace attnc {
namespace {

bool is_elf(const std::vector<char>& bytes) {
  return bytes.size() > 4 && bytes[0] == 0x7f && bytes[1] == 'E' && bytes[2] == 'L' && bytes[3] == 'F';
}

TEST(NvrtcCompile, MmaKernelForSm80) {
  const auto src = test::mma_kernel("sm_80");
  const auto k = compile_kernel(src);
  EXPECT_TRUE(is_elf(k.cubin));
  EXPECT_EQ(k.entry, "attnc_test_mma");
  EXPECT_EQ(k.arch, "sm_80");
  EXPECT_TRUE(std::regex_match(k.nvrtc_version, std::regex(R"(\d+\.\d+)"))) << k.nvrtc_version;
  EXPECT_GT(k.report.registers, 0);
  EXPECT_EQ(k.report.spill_stores, 0);
  EXPECT_NE(k.report.raw.find("attnc_test_mma"), std::string::npos);
  EXPECT_GT(k.compile_ms, 0.0);
  EXPECT_GT(k.ptxas_ms, 0.0);  // ptxas ran (the report above came from it) and timed itself
  EXPECT_LT(k.ptxas_ms, k.compile_ms);
  EXPECT_EQ(k.key, kernel_key(src));
}

TEST(NvrtcCompile, MmaKernelForSm90a) {
  const auto k = compile_kernel(test::mma_kernel("sm_90a"));
  EXPECT_TRUE(is_elf(k.cubin));
  EXPECT_EQ(k.arch, "sm_90a");
  EXPECT_GT(k.report.registers, 0);
  EXPECT_NE(k.log.find("for 'sm_90a'"), std::string::npos) << k.log;
}

TEST(NvrtcCompile, OptionsArchOverridesSourceArch) {
  CompileOptions opt;
  opt.arch = "sm_90a";
  const auto k = compile_kernel(test::mma_kernel("sm_80"), opt);
  EXPECT_EQ(k.arch, "sm_90a");
  EXPECT_NE(k.log.find("for 'sm_90a'"), std::string::npos);
}

TEST(NvrtcCompile, ReportsStaticSharedMemoryAndBarriers) {
  const auto src = test::plain_kernel(
      "attnc_test_smem", "  __shared__ float s[1024];\n  s[threadIdx.x] = x[threadIdx.x];\n  __syncthreads();\n"
                         "  x[threadIdx.x] = s[1023 - threadIdx.x];");
  const auto k = compile_kernel(src);
  EXPECT_EQ(k.report.smem_bytes, 4096);
  EXPECT_EQ(k.report.barriers, 1);
}

// Why the default Hopper target is sm_90a: wgmma is only accepted there.
TEST(NvrtcCompile, WgmmaNeedsSm90a) {
  auto src = test::plain_kernel("attnc_test_wgmma", "  asm volatile(\"wgmma.fence.sync.aligned;\\n\" ::: \"memory\");\n"
                                                    "  x[threadIdx.x] = 1.f;", "sm_90a");
  EXPECT_NO_THROW(compile_kernel(src));
  src.arch = "sm_90";
  EXPECT_THROW(compile_kernel(src), CompileError);
}

TEST(NvrtcCompile, ExactOptionList) {
  auto src = test::mma_kernel("sm_90a");
  EXPECT_EQ(nvrtc_options(src, {}),
            (std::vector<std::string>{"--gpu-architecture=sm_90a", "--ptxas-options=-v", "-std=c++17", "--minimal"}));
  CompileOptions opt;
  opt.line_info = true;
  opt.arch = "sm_80";
  src.options = {"--use_fast_math", "--ptxas-options=-warn-spills"};
  EXPECT_EQ(nvrtc_options(src, opt),
            (std::vector<std::string>{"--gpu-architecture=sm_80", "--ptxas-options=-v", "-std=c++17", "--minimal",
                                      "-lineinfo", "--use_fast_math", "--ptxas-options=-warn-spills"}));
  EXPECT_NO_THROW(compile_kernel(src, opt));
}

TEST(NvrtcCompile, UnsupportedArchRejectedWithAllowedList) {
  for (const std::string arch : {"sm_75", "sm_100a", "compute_90a", ""}) {
    try {
      compile_kernel(test::mma_kernel(arch));
      ADD_FAILURE() << "accepted " << arch;
    } catch (const CompileError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("unsupported arch '" + arch + "'"), std::string::npos) << what;
      EXPECT_NE(what.find("sm_80, sm_86, sm_89, sm_90, sm_90a"), std::string::npos) << what;
      EXPECT_NE(what.find("attnc_test_mma"), std::string::npos) << what;
    }
  }
  EXPECT_THROW(kernel_key(test::mma_kernel("sm_75")), CompileError);
  EXPECT_TRUE(is_supported_arch("sm_89"));
  EXPECT_FALSE(is_supported_arch("sm_87"));
}

TEST(NvrtcCompile, EntryThatTheSourceDoesNotDefineIsAnError) {
  auto src = test::mma_kernel("sm_80");
  src.entry = "attnc_other_name";  // the source still defines attnc_test_mma
  try {
    compile_kernel(src);
    ADD_FAILURE() << "no error";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("no entry of that name"), std::string::npos) << e.what();
    EXPECT_EQ(e.entry(), "attnc_other_name");
  }
}

TEST(NvrtcCompile, PtxForTheVirtualArch) {
  const std::string ptx = compile_to_ptx(test::mma_kernel("sm_90a"));
  EXPECT_NE(ptx.find(".target sm_90a"), std::string::npos);
  EXPECT_NE(ptx.find(".entry attnc_test_mma"), std::string::npos);
  EXPECT_NE(ptx.find("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"), std::string::npos);
  EXPECT_EQ(ptx.find('\0'), std::string::npos);
  EXPECT_NE(compile_to_ptx(test::mma_kernel("sm_80")).find(".target sm_80"), std::string::npos);
}

TEST(NvrtcCompile, LineInfoCompiles) {
  CompileOptions opt;
  opt.line_info = true;
  const auto k = compile_kernel(test::mma_kernel("sm_90a"), opt);
  EXPECT_NE(k.key, kernel_key(test::mma_kernel("sm_90a")));
  EXPECT_NE(compile_to_ptx(test::mma_kernel("sm_90a"), opt).find(".loc"), std::string::npos);
}

TEST(NvrtcCompile, NoDeadlineCompilesOnTheCallingThread) {
  CompileOptions opt;
  opt.timeout = std::chrono::milliseconds(0);
  EXPECT_GT(compile_kernel(test::mma_kernel("sm_80"), opt).report.registers, 0);
}

}  // namespace
}  // namespace attnc
