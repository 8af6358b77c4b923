// What a failed compile says: the NVRTC log plus the generated or header line each error points
// at, with its number; and the timeout path.
#include <gtest/gtest.h>

#include <sstream>

#include "generator/emit/embedded_templates.h"
#include "runtime/compiler/nvrtc_compiler.h"
#include "runtime/compiler/nvrtc_diagnostics.h"
#include "tests/unit/runtime/compiler/test_kernels.h"

namespace attnc {
namespace {

using namespace std::chrono_literals;

CompileError compile_error(const KernelSource& src, const CompileOptions& opt = {}) {
  try {
    compile_kernel(src, opt);
  } catch (const CompileError& e) {
    return e;
  }
  ADD_FAILURE() << "compiled without error";
  return CompileError("", "", "");
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(NvrtcErrors, SyntaxErrorShowsTheGeneratedLineWithItsNumber) {
  // Lines 1-2: include and blank, 3: signature, 4: first body line, 5: the broken one.
  const auto src = test::plain_kernel("attnc_test_bad", "  float y = x[0] * 2.f;\n  x[1] = y +* ;\n  x[2] = y;");
  const auto e = compile_error(src);
  const std::string what = e.what();
  EXPECT_EQ(e.entry(), "attnc_test_bad");
  EXPECT_EQ(e.arch(), "sm_80");
  EXPECT_TRUE(contains(e.log(), "attnc_test_bad.cu(5): error")) << e.log();
  EXPECT_TRUE(contains(what, "'attnc_test_bad' for sm_80")) << what;
  EXPECT_TRUE(contains(what, "options: --gpu-architecture=sm_80 --ptxas-options=-v -std=c++17")) << what;
  EXPECT_TRUE(contains(what, e.log())) << what;
  EXPECT_TRUE(contains(what, "attnc_test_bad.cu:5\n")) << what;
  EXPECT_TRUE(contains(what, "  >     5 |   x[1] = y +* ;\n")) << what;
  EXPECT_TRUE(contains(what, "        4 |   float y = x[0] * 2.f;\n")) << what;  // context
}

// The line of the embedded header that holds `text`, 1-based.
int header_line(const std::string& path, const std::string& text) {
  for (const auto& f : embedded_templates()) {
    if (f.path != path) continue;
    std::istringstream in{std::string(f.text)};
    std::string line;
    for (int n = 1; std::getline(in, line); ++n)
      if (contains(line, text)) return n;
  }
  return -1;
}

TEST(NvrtcErrors, ErrorInsideAnEmbeddedHeaderPointsAtTheHeaderLine) {
  // A macro that breaks a declaration inside attnc/params/params.h: the error is reported there.
  auto src = test::mma_kernel("sm_80");
  src.source = "#define softcap 3\n" + src.source;
  const int line = header_line("attnc/params/params.h", "float softcap;");
  ASSERT_GT(line, 0);
  const auto e = compile_error(src);
  const std::string what = e.what();
  EXPECT_TRUE(contains(what, "attnc/params/params.h:" + std::to_string(line) + "\n")) << what;
  EXPECT_TRUE(contains(what, "  > " + std::string(5 - std::to_string(line).size(), ' ') + std::to_string(line) +
                                 " |   float softcap;"))
      << what;
}

TEST(NvrtcErrors, MissingHeaderPointsAtTheInclude) {
  auto src = test::plain_kernel("attnc_test_inc", "  x[0] = 1.f;");
  src.source = "#include <cmath>\n" + src.source;
  const std::string what = compile_error(src).what();
  EXPECT_TRUE(contains(what, "attnc_test_inc.cu:1\n")) << what;
  EXPECT_TRUE(contains(what, "  >     1 | #include <cmath>")) << what;
}

TEST(NvrtcErrors, BadOptionIsReported) {
  auto src = test::mma_kernel("sm_80");
  src.options = {"-O3"};  // NVRTC has no -O3
  const std::string what = compile_error(src).what();
  EXPECT_TRUE(contains(what, "NVRTC_ERROR_INVALID_OPTION")) << what;
  EXPECT_TRUE(contains(what, "-O3")) << what;
}

TEST(NvrtcErrors, TimeoutAbandonsTheCompile) {
  CompileOptions opt;
  opt.timeout = 20ms;
  const auto start = std::chrono::steady_clock::now();
  try {
    compile_kernel(test::slow_kernel(), opt);
    FAIL() << "no timeout";
  } catch (const CompileTimeout& e) {
    EXPECT_TRUE(contains(e.what(), "within 20 ms")) << e.what();
    EXPECT_EQ(e.entry(), "attnc_test_slow");
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);  // the slow kernel takes several seconds
  // The service is not wedged by the abandoned compile.
  EXPECT_GT(compile_kernel(test::mma_kernel("sm_80")).report.registers, 0);
}

TEST(NvrtcDiagnostics, ParsesErrorsAndSkipsWarningsAndDuplicates) {
  const std::string source = "a\nb\nc\nd\n";
  const std::string log =
      "k.cu(2): warning #177-D: variable \"i\" was declared but never referenced\n"
      "k.cu(3): error: expected a \";\"\n"
      "   c\n   ^\n"
      "k.cu(3): error: another one on the same line\n"
      "k.cu(1): catastrophic error: cannot open source file \"cmath\"\n"
      "other.h(7): error: not ours\n"
      "2 errors detected in the compilation of \"k.cu\".\n";
  const auto locs = detail::error_locations(log, "k.cu", source);
  ASSERT_EQ(locs.size(), 3u);
  EXPECT_EQ(locs[0].file, "k.cu");
  EXPECT_EQ(locs[0].line, 3);
  EXPECT_EQ(locs[0].excerpt, "        2 | b\n  >     3 | c\n        4 | d\n");
  EXPECT_EQ(locs[1].line, 1);
  EXPECT_EQ(locs[1].excerpt, "  >     1 | a\n        2 | b\n");
  EXPECT_EQ(locs[2].file, "other.h");
  EXPECT_EQ(locs[2].excerpt, "");
  EXPECT_EQ(detail::error_locations(log, "k.cu", source, 1).size(), 1u);
}

}  // namespace
}  // namespace attnc
