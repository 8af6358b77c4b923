// Inputs that must end at once with one clear error whatever their bytes: stray commas (which sent
// yaml-cpp 0.7.0's LoadAll into an endless, allocating loop: jbeder/yaml-cpp#1040), deep nesting,
// too many values, texts and files over the size limit, and files that are not regular files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "generator/spec/spec_parse.h"

namespace attnc {
namespace {

namespace fs = std::filesystem;

const std::string kGood = "version: 1\nhead_dim: 128\nnum_q_heads: 8\n";

// The one diagnostic of a rejected text.
Diagnostic only_error(const std::string& yaml) {
  try {
    parse_spec(yaml, "bad.yaml");
  } catch (const SpecError& e) {
    EXPECT_EQ(e.diagnostics().size(), 1u) << e.what();
    return e.diagnostics().front();
  }
  ADD_FAILURE() << "accepted: " << yaml.substr(0, 80);
  return {};
}

Diagnostic only_file_error(const std::string& path) {
  try {
    load_spec(path);
  } catch (const SpecError& e) {
    EXPECT_EQ(e.diagnostics().size(), 1u) << e.what();
    return e.diagnostics().front();
  }
  ADD_FAILURE() << "accepted: " << path;
  return {};
}

const std::string kComma =
    "YAML syntax error: unexpected ','; a comma separates the items of a [list] or {mapping} only";

TEST(SpecLimits, AStrayCommaIsALocatedError) {
  const struct {
    std::string yaml;
    int line, column;
  } cases[] = {
      {",\n", 1, 1},
      {",version: 1\n", 1, 1},
      {", 5", 1, 1},
      {"# a comment\n,versin: 1\nname: x\n", 2, 1},
      {"[a, b], c\n", 1, 7},  // after a whole first document
      {"!!str ,\n", 1, 7},    // after a tagged empty root
      {"---\n,\n", 2, 1},
      {kGood + "...\n,\n", 5, 1},
  };
  for (const auto& c : cases) {
    const Diagnostic d = only_error(c.yaml);
    EXPECT_EQ(d.line, c.line) << c.yaml;
    EXPECT_EQ(d.column, c.column) << c.yaml;
    EXPECT_EQ(d.message, kComma) << c.yaml;
  }
}

// The inputs the probe's fuzzer found hanging (tests/fuzz/hangs, also the fuzz test's seeds).
TEST(SpecLimits, TheInputsThatHungAreLocatedErrors) {
  int files = 0;
  for (const auto& e : fs::directory_iterator(ATTNC_SOURCE_DIR "/tests/fuzz/hangs")) {
    const Diagnostic d = only_file_error(e.path().string());
    EXPECT_GT(d.line, 0) << e.path();
    EXPECT_EQ(d.column, 1) << e.path();
    EXPECT_EQ(d.message, kComma) << e.path();
    ++files;
  }
  EXPECT_EQ(files, 4);
}

TEST(SpecLimits, ASecondDocumentIsStillNamed) {
  const Diagnostic d = only_error(kGood + "---\n" + kGood);
  EXPECT_EQ(d.line, 5);
  EXPECT_EQ(d.message, "a second YAML document; a spec file holds exactly one (remove the `---`)");
}

TEST(SpecLimits, DeepNestingNamesTheDepthAndTheLimit) {
  std::string flow_maps = "version: 1\nx: ";
  std::string block_maps = "version: 1\n";
  for (int i = 0; i < 10000; ++i) flow_maps += "{a: ";
  for (int i = 0; i < 200; ++i) block_maps += std::string(i, ' ') + "a:\n";  // 20 kB
  const std::string flow_lists = "version: 1\nx: " + std::string(10000, '[');
  const std::string message =
      "lists and mappings nested more than 64 deep; allowed: a nesting depth of at most 64 (a "
      "spec needs 3: tuning: {warps: [4, 8]})";
  // The top-level mapping is the first level, so the 64th collection under it is too deep. Left
  // open, each '[' after the first is two levels to yaml-cpp (a one-entry mapping whose key is the
  // list), so there the 33rd '[' is too deep.
  const Diagnostic lists = only_error(flow_lists);
  EXPECT_EQ(std::pair(lists.line, lists.column), std::pair(2, 4 + 32));
  EXPECT_EQ(lists.message, message);
  const Diagnostic maps = only_error(flow_maps);
  EXPECT_EQ(std::pair(maps.line, maps.column), std::pair(2, 4 + 63 * 4));
  EXPECT_EQ(maps.message, message);
  const Diagnostic block = only_error(block_maps);
  EXPECT_EQ(std::pair(block.line, block.column), std::pair(66, 65));  // after 64 spaces
  EXPECT_EQ(block.message, message);
}

TEST(SpecLimits, NestingAtTheLimitIsNotAnError) {
  const Diagnostic d = only_error(kGood + "x: " + std::string(63, '[') + std::string(63, ']'));
  EXPECT_EQ(d.path, "x");  // the unknown field, not the nesting
}

TEST(SpecLimits, TooManyValues) {
  std::string yaml = "version: 1\nx: [";
  for (int i = 0; i < kMaxSpecNodes; ++i) yaml += "1, ";
  const Diagnostic d = only_error(yaml + "1]\n");
  EXPECT_EQ(d.line, 2);
  EXPECT_EQ(d.message,
            "more than 10000 YAML values; allowed: at most 10000 (a spec has a few dozen)");
}

// A valid spec padded with a comment to exactly `bytes` bytes.
std::string padded(std::size_t bytes) {
  return kGood + "#" + std::string(bytes - kGood.size() - 2, ' ') + "\n";
}

TEST(SpecLimits, TextSizeLimit) {
  EXPECT_EQ(parse_spec(padded(kMaxSpecBytes), "big.yaml").head_dim, 128);
  try {
    parse_spec(padded(kMaxSpecBytes + 1), "big.yaml");
    FAIL() << "expected SpecError";
  } catch (const SpecError& e) {
    EXPECT_STREQ(e.what(),
                 "big.yaml: error: the spec text is 262145 bytes; allowed: at most 262144 bytes "
                 "(256 KiB)");
  }
}

class SpecFiles : public testing::Test {
 protected:
  void SetUp() override {
    const std::string test = testing::UnitTest::GetInstance()->current_test_info()->name();
    dir_ = fs::path(testing::TempDir()) / ("spec_limits_" + test);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  fs::path dir_;
};

TEST_F(SpecFiles, FileSizeLimit) {
  EXPECT_EQ(load_spec(write("at_limit.yaml", padded(kMaxSpecBytes))).head_dim, 128);
  const std::string big = write("big.yaml", padded(kMaxSpecBytes + 1));
  EXPECT_EQ(only_file_error(big).str(),
            big + ": error: the file is 262145 bytes; allowed: at most 262144 bytes (256 KiB)");
}

TEST_F(SpecFiles, OnlyRegularFiles) {
  fs::create_directories(dir_ / "folder.yaml");
  EXPECT_EQ(only_file_error((dir_ / "folder.yaml").string()).message,
            "is a directory, not a spec file; allowed: a regular file");
  EXPECT_EQ(only_file_error("/dev/null").message,
            "is a character device, not a spec file; allowed: a regular file");
  // FIFOs and /dev/zero are in tests/lit/cli/validate_special_files.test, under a time limit.
}

TEST_F(SpecFiles, MissingFile) {
  const std::string path = (dir_ / "nosuch.yaml").string();
  EXPECT_EQ(only_file_error(path).str(),
            path + ": error: cannot read the spec file: No such file or directory");
}

}  // namespace
}  // namespace attnc
