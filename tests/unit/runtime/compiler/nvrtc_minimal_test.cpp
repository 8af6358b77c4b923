// --minimal is in every compile for speed alone (a cheaper NVRTC front end): the cubins of real
// attnc kernels must be byte-identical with and without it. Decode covers the widest feature set
// (paged K/V, packed GQA, split-KV and its combine entry); merge covers the op families' headers.
#include <gtest/gtest.h>

#include <algorithm>

#include "generator/generate.h"
#include "generator/spec/spec_parse.h"
#include "runtime/compiler/nvrtc_compiler.h"
#include "runtime/compiler/nvrtc_invoke.h"

namespace attnc {
namespace {

KernelSource llama_kernel(KernelKind kind) {
  const Spec s = load_spec(ATTNC_SOURCE_DIR "/specs/llama-3-8b.yaml");
  for (auto& k : spec_kernels(s, "sm_90a"))
    if (k.kind == kind && k.source) return *k.source;
  ADD_FAILURE() << "llama-3-8b generates no " << to_string(kind) << " kernel";
  return {};
}

std::vector<char> cubin(const KernelSource& src, std::vector<std::string> options) {
  auto out = detail::run_nvrtc({src.entry + ".cu", src.source, std::move(options), true}, std::chrono::milliseconds(0));
  EXPECT_EQ(out.status, NVRTC_SUCCESS) << out.log;
  return out.output;
}

TEST(NvrtcMinimal, SameCubinWithAndWithout) {
  for (const KernelKind kind : {KernelKind::decode, KernelKind::merge}) {
    const KernelSource src = llama_kernel(kind);
    const auto with = nvrtc_options(src, {});
    ASSERT_NE(std::find(with.begin(), with.end(), "--minimal"), with.end());
    auto without = with;
    without.erase(std::find(without.begin(), without.end(), "--minimal"));
    const auto a = cubin(src, with), b = cubin(src, without);
    EXPECT_FALSE(a.empty());
    EXPECT_TRUE(a == b) << to_string(kind) << ": --minimal changed the cubin (" << a.size() << " vs " << b.size()
                        << " bytes)";
  }
}

}  // namespace
}  // namespace attnc
