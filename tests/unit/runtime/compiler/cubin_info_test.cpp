// The register count read from a cubin's .nv.info agrees with ptxas's own report, for a real
// attnc kernel; unknown entries and non-ELF input are refused.
#include <gtest/gtest.h>

#include "generator/emit/emit.h"
#include "runtime/compiler/cubin_info.h"
#include "runtime/compiler/nvrtc_compiler.h"

namespace attnc {
namespace {

KernelSource llama_like_prefill() {
  Spec s;
  s.head_dim = s.head_dim_v = 128;
  s.num_q_heads = 32;
  s.num_kv_heads = 8;
  return emit_kernel(plan_kernel(s, KernelKind::prefill, default_config(s, KernelKind::prefill, "sm_90a"), "sm_90a"));
}

TEST(CubinInfo, RegisterCountMatchesPtxasReport) {
  const KernelSource src = llama_like_prefill();
  const CompiledKernel k = compile_kernel(src);
  ASSERT_TRUE(k.report.found()) << k.log;
  ASSERT_FALSE(k.report.from_cubin);
  const auto info = cubin_kernel_info(k.cubin, src.entry);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->registers, k.report.registers);
  EXPECT_EQ(info->frame_bytes, k.report.stack_bytes);
}

TEST(CubinInfo, UnknownEntryAndNonElfAreRefused) {
  const KernelSource src = llama_like_prefill();
  const CompiledKernel k = compile_kernel(src);
  EXPECT_FALSE(cubin_kernel_info(k.cubin, src.entry + "_nope").has_value());
  EXPECT_FALSE(cubin_kernel_info(std::vector<char>{'n', 'o', 't', ' ', 'e', 'l', 'f'}, src.entry).has_value());
  EXPECT_FALSE(cubin_kernel_info({}, src.entry).has_value());
}

}  // namespace
}  // namespace attnc
