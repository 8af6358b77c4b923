// The C API through libattnc.so, without a GPU (a described device): error codes and messages for
// bad specs, NULL arguments, struct sizes and kinds; select's JSON; JIT off. Only attnc_* symbols
// are visible, so this test links nothing else of attnc.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "attnc.h"
#include "tests/unit/temp_dir.h"

namespace {

const char* kSpec = R"(version: 1
name: capi-test
head_dim: 64
num_q_heads: 8
num_kv_heads: 2
dtype: bf16
mask: causal
kernels: [prefill, decode]
)";


attnc_options default_options() {
  attnc_options o{};
  o.struct_size = sizeof(attnc_options);
  EXPECT_EQ(attnc_options_init(&o), ATTNC_OK) << attnc_last_error();
  return o;
}

attnc_call default_call() {
  attnc_call c{};
  c.struct_size = sizeof(attnc_call);
  EXPECT_EQ(attnc_call_init(&c), ATTNC_OK) << attnc_last_error();
  return c;
}

attnc_options described_options(const std::string& db) {
  attnc_options o = default_options();
  o.db = db.c_str();
  o.device_name = "Test GPU";
  o.device_arch = "sm_90a";
  o.device_sm_count = 132;
  o.device_driver_version = 13000;
  o.no_jit = 0;
  return o;
}

// The version is CMake's project() version, passed to this test separately from the library.
TEST(CApi, Version) { EXPECT_STREQ(attnc_version(), ATTNC_PROJECT_VERSION); }

TEST(CApi, BadSpecNamesTheField) {
  attnc_attention* h = reinterpret_cast<attnc_attention*>(0x1);
  EXPECT_EQ(attnc_attention_create_from_yaml("version: 1\nhead_dim: 65\n", nullptr, &h), ATTNC_ERR_SPEC);
  EXPECT_EQ(h, nullptr);
  EXPECT_NE(std::string(attnc_last_error()).find("head_dim"), std::string::npos) << attnc_last_error();
  EXPECT_EQ(attnc_attention_create_from_file("/nonexistent/spec.yaml", nullptr, &h), ATTNC_ERR_SPEC);
  EXPECT_NE(std::string(attnc_last_error()).find("/nonexistent/spec.yaml"), std::string::npos) << attnc_last_error();
}

// A text that once sent the YAML reader into an endless, allocating loop, and one over the size
// limit: both are spec errors at once.
TEST(CApi, UnboundedTextsAreSpecErrors) {
  attnc_attention* h = nullptr;
  EXPECT_EQ(attnc_attention_create_from_yaml(",\n", nullptr, &h), ATTNC_ERR_SPEC);
  EXPECT_NE(std::string(attnc_last_error()).find(":1:1: error: YAML syntax error: unexpected ','"),
            std::string::npos)
      << attnc_last_error();
  const std::string big = "version: 1\n#" + std::string(256 << 10, ' ') + "\n";
  EXPECT_EQ(attnc_attention_create_from_yaml(big.c_str(), nullptr, &h), ATTNC_ERR_SPEC);
  EXPECT_NE(std::string(attnc_last_error()).find("allowed: at most 262144 bytes (256 KiB)"),
            std::string::npos)
      << attnc_last_error();
}

TEST(CApi, NullArguments) {
  attnc_attention* h = nullptr;
  EXPECT_EQ(attnc_attention_create_from_yaml(nullptr, nullptr, &h), ATTNC_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(attnc_last_error()).find("yaml_text is NULL"), std::string::npos);
  EXPECT_EQ(attnc_attention_create_from_yaml(kSpec, nullptr, nullptr), ATTNC_ERR_INVALID_ARGUMENT);
  attnc_call c = default_call();
  EXPECT_EQ(attnc_attention_run(nullptr, &c, nullptr), ATTNC_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(attnc_last_error()).find("attention is NULL"), std::string::npos);
  EXPECT_EQ(attnc_attention_select(nullptr, ATTNC_KIND_DECODE, 1, 1, 1, nullptr, nullptr, 0),
            ATTNC_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(attnc_attention_reserve(nullptr, ATTNC_KIND_DECODE, 1, 1, 1), ATTNC_ERR_INVALID_ARGUMENT);
  attnc_attention_destroy(nullptr);  // allowed
}

class CApiHandle : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = dir_.file("attnc.db");
    const attnc_options o = described_options(db_);
    ASSERT_EQ(attnc_attention_create_from_yaml(kSpec, &o, &h_), ATTNC_OK) << attnc_last_error();
  }
  void TearDown() override { attnc_attention_destroy(h_); }
  attnc::test::TempDir dir_{"attnc-capi"};
  std::string db_;
  attnc_attention* h_ = nullptr;
};

TEST_F(CApiHandle, StructSizeTooSmall) {
  attnc_call c = default_call();
  c.struct_size = 16;
  EXPECT_EQ(attnc_attention_run(h_, &c, nullptr), ATTNC_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(attnc_last_error()).find("attnc_call.struct_size is 16, expected at least"), std::string::npos)
      << attnc_last_error();
  c.struct_size = 0;
  EXPECT_EQ(attnc_attention_run(h_, &c, nullptr), ATTNC_ERR_INVALID_ARGUMENT);
  attnc_options o = described_options(db_);
  o.struct_size = 8;
  attnc_attention* h = nullptr;
  EXPECT_EQ(attnc_attention_create_from_yaml(kSpec, &o, &h), ATTNC_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(attnc_last_error()).find("attnc_options.struct_size is 8"), std::string::npos);
  attnc_selection s{};
  s.struct_size = 4;
  EXPECT_EQ(attnc_attention_select(h_, ATTNC_KIND_DECODE, 1, 1, 100, &s, nullptr, 0), ATTNC_ERR_INVALID_ARGUMENT);
}

TEST_F(CApiHandle, BadKind) {
  attnc_call c = default_call();
  c.kind = 7;
  EXPECT_EQ(attnc_attention_run(h_, &c, nullptr), ATTNC_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(attnc_last_error()).find("kind 7: expected ATTNC_KIND_PREFILL (0)"), std::string::npos);
}

TEST_F(CApiHandle, SelectWithoutAGpu) {
  attnc_selection s{};
  s.struct_size = sizeof s;
  char json[1024];
  ASSERT_EQ(attnc_attention_select(h_, ATTNC_KIND_DECODE, 1, 1, 8192, &s, json, sizeof json), ATTNC_OK)
      << attnc_last_error();
  EXPECT_EQ(s.origin, ATTNC_ORIGIN_HEURISTIC);
  EXPECT_EQ(s.num_splits, 1);  // nothing reserved: the split count is lowered to 1
  EXPECT_EQ(s.cached, 0);
  const std::string j = json;
  EXPECT_NE(j.find("\"bucket\":\"b1.q1.k8192\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"origin\":\"heuristic\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"family\":\"decode_bw\""), std::string::npos) << j;
  char small[8];
  EXPECT_EQ(attnc_attention_select(h_, ATTNC_KIND_DECODE, 1, 1, 8192, nullptr, small, sizeof small),
            ATTNC_ERR_BUFFER_TOO_SMALL);
  size_t bytes = 0;
  ASSERT_EQ(attnc_attention_workspace_needed(h_, ATTNC_KIND_DECODE, 1, 1, 8192, &bytes), ATTNC_OK);
  EXPECT_GT(bytes, 0u);
}

TEST_F(CApiHandle, KindNotInTheSpec) {
  attnc_attention* h = nullptr;
  const attnc_options o = described_options(db_);
  ASSERT_EQ(attnc_attention_create_from_yaml("version: 1\nname: p\nhead_dim: 64\nnum_q_heads: 4\n", &o, &h), ATTNC_OK);
  EXPECT_EQ(attnc_attention_select(h, ATTNC_KIND_DECODE, 1, 1, 100, nullptr, nullptr, 0), ATTNC_ERR_DISPATCH);
  EXPECT_NE(std::string(attnc_last_error()).find("has no decode kernel"), std::string::npos) << attnc_last_error();
  attnc_attention_destroy(h);
}

TEST(CApi, NoJitError) {
  const attnc::test::TempDir dir("attnc-capi");
  const std::string db = dir.file("attnc.db");
  attnc_options o = described_options(db);
  o.no_jit = 1;
  attnc_attention* h = nullptr;
  ASSERT_EQ(attnc_attention_create_from_yaml(kSpec, &o, &h), ATTNC_OK) << attnc_last_error();
  int origin = -1;
  EXPECT_EQ(attnc_attention_prepare(h, ATTNC_KIND_DECODE, 1, 1, 100, &origin), ATTNC_ERR_NO_JIT);
  const std::string m = attnc_last_error();
  EXPECT_NE(m.find("is not in the cache"), std::string::npos) << m;
  EXPECT_NE(m.find("attnc compile"), std::string::npos) << m;
  attnc_attention_destroy(h);
}

TEST(CApi, RunWithoutAGpuSaysSo) {
  attnc_options o = default_options();
  o.db = "none";
  attnc_attention* h = nullptr;
  ASSERT_EQ(attnc_attention_create_from_yaml(kSpec, &o, &h), ATTNC_OK) << attnc_last_error();
  attnc_call c = default_call();
  const int rc = attnc_attention_run(h, &c, nullptr);
  if (rc == ATTNC_ERR_NO_GPU)
    EXPECT_NE(std::string(attnc_last_error()), "");
  else
    EXPECT_EQ(rc, ATTNC_ERR_BAD_CALL) << attnc_last_error();  // with a GPU: batch 0 is refused
  attnc_attention_destroy(h);
}

TEST(CApi, ExportsOnlyTheCApi) {
  void* self = dlopen(nullptr, RTLD_NOW);
  ASSERT_NE(self, nullptr);
  EXPECT_NE(dlsym(self, "attnc_attention_run"), nullptr);
  // A C++ symbol of the runtime (attnc::nvrtc_version()) stays inside the library.
  EXPECT_EQ(dlsym(self, "_ZN5attnc13nvrtc_versionB5cxx11Ev"), nullptr);
  dlclose(self);
}

}  // namespace
