// parse_ptxas_report on logs captured from NVRTC 13.0 (--ptxas-options=-v), plus an older format.
#include <gtest/gtest.h>

#include "runtime/compiler/ptxas_report.h"

namespace attnc {
namespace {

// sm_90a, one entry, no shared memory (ptxas then omits "bytes smem").
const char* kSimple = R"(ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'k' for 'sm_90a'
ptxas info    : Function properties for k
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers
ptxas info    : Compile time = 7.272 ms
)";

// sm_80, two entries and a non-inlined device function with its own stack.
const char* kTwoEntries = R"(ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'main_k' for 'sm_80'
ptxas info    : Function properties for main_k
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 1 barriers, 360 bytes cmem[0]
ptxas info    : Compile time = 2.270 ms
ptxas info    : Compiling entry function 'combine' for 'sm_80'
ptxas info    : Function properties for combine
ptxas         .     160 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 160 bytes cumulative stack size, 4096 bytes smem, 360 bytes cmem[0]
ptxas info    : Compile time = 6.868 ms
ptxas info    : Function properties for _Z6helperPfi
ptxas         .     24 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads
)";

// A register-starved kernel: stack and spills.
const char* kSpills = R"(ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'k' for 'sm_80'
ptxas info    : Function properties for k
ptxas         .     1040 bytes stack frame, 16 bytes spill stores, 24 bytes spill loads
ptxas info    : Used 254 registers, used 0 barriers, 1040 bytes cumulative stack size, 360 bytes cmem[0]
ptxas info    : Compile time = 107.933 ms
)";

TEST(PtxasReport, SimpleEntry) {
  const auto r = parse_ptxas_report(kSimple, "k");
  EXPECT_TRUE(r.found());
  EXPECT_EQ(r.registers, 8);
  EXPECT_EQ(r.smem_bytes, 0);
  EXPECT_EQ(r.barriers, 0);
  EXPECT_EQ(r.stack_bytes, 0);
  EXPECT_EQ(r.spill_stores, 0);
  EXPECT_EQ(r.spill_loads, 0);
  EXPECT_TRUE(r.raw.starts_with("ptxas info    : Compiling entry function 'k' for 'sm_90a'\n")) << r.raw;
  EXPECT_EQ(r.raw.find("0 bytes gmem"), std::string::npos);
}

TEST(PtxasReport, PicksTheRightEntryAndIgnoresCallees) {
  const auto main_k = parse_ptxas_report(kTwoEntries, "main_k");
  EXPECT_EQ(main_k.registers, 10);
  EXPECT_EQ(main_k.barriers, 1);
  EXPECT_EQ(main_k.smem_bytes, 0);
  EXPECT_EQ(main_k.raw.find("combine"), std::string::npos);

  const auto combine = parse_ptxas_report(kTwoEntries, "combine");
  EXPECT_EQ(combine.registers, 40);
  EXPECT_EQ(combine.barriers, 1);
  EXPECT_EQ(combine.smem_bytes, 4096);
  EXPECT_EQ(combine.stack_bytes, 160);
  EXPECT_EQ(combine.spill_stores, 0);  // the helper's spills are not the entry's
  EXPECT_EQ(combine.spill_loads, 0);
}

TEST(PtxasReport, StackAndSpills) {
  const auto r = parse_ptxas_report(kSpills, "k");
  EXPECT_EQ(r.registers, 254);
  EXPECT_EQ(r.stack_bytes, 1040);
  EXPECT_EQ(r.spill_stores, 16);
  EXPECT_EQ(r.spill_loads, 24);
}

TEST(PtxasReport, MissingEntry) {
  const auto r = parse_ptxas_report(kTwoEntries, "main");  // a prefix of main_k is not main_k
  EXPECT_FALSE(r.found());
  EXPECT_EQ(r.registers, -1);
  EXPECT_EQ(r.smem_bytes, -1);
  EXPECT_TRUE(r.raw.empty());
  EXPECT_FALSE(parse_ptxas_report("", "k").found());
}

TEST(PtxasReport, OlderFormatWithoutBarriers) {
  const auto r = parse_ptxas_report(
      "ptxas info    : Compiling entry function 'k' for 'sm_80'\n"
      "ptxas info    : Function properties for k\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 32 registers, 16384 bytes smem, 400 bytes cmem[0]\n",
      "k");
  EXPECT_EQ(r.registers, 32);
  EXPECT_EQ(r.smem_bytes, 16384);
  EXPECT_EQ(r.barriers, 0);
}

// ptxas times each entry; its share of the compile is their sum.
TEST(PtxasReport, CompileTimeSumsEveryEntry) {
  EXPECT_DOUBLE_EQ(ptxas_compile_ms(kSimple), 7.272);
  EXPECT_DOUBLE_EQ(ptxas_compile_ms(kTwoEntries), 2.270 + 6.868);
  EXPECT_DOUBLE_EQ(ptxas_compile_ms(kSpills), 107.933);
  EXPECT_EQ(ptxas_compile_ms(""), 0.0);  // an NVRTC cache hit: ptxas did not run
  EXPECT_EQ(ptxas_compile_ms("ptxas info    : Used 8 registers, used 0 barriers\n"), 0.0);
}

}  // namespace
}  // namespace attnc
