// The C API's ops (merge, cache write, cascade, DCP's LSE correction) through libattnc.so without a
// GPU (a described device): their structs' defaults and sizes, NULL arguments, and bad calls
// refused with a message naming the argument before anything is loaded (no GPU is needed to be
// refused). The kernels themselves run in tests/gpu and tests/python/test_gpu.py.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "attnc.h"
#include "tests/unit/temp_dir.h"

namespace {

const char* kSpec = R"(version: 1
name: capi-ops-test
head_dim: 64
num_q_heads: 8
num_kv_heads: 2
dtype: bf16
mask: causal
kernels: [prefill, decode]
)";

class OpsCApi : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = dir_.file("attnc.db");
    h_ = create(kSpec);
  }
  void TearDown() override { attnc_attention_destroy(h_); }

  attnc_attention* create(const char* yaml) {
    attnc_options o{};
    o.struct_size = sizeof o;
    EXPECT_EQ(attnc_options_init(&o), ATTNC_OK);
    o.db = db_.c_str();
    o.device_name = "Test GPU";
    o.device_arch = "sm_90a";
    o.device_sm_count = 132;
    o.device_driver_version = 13000;
    attnc_attention* h = nullptr;
    EXPECT_EQ(attnc_attention_create_from_yaml(yaml, &o, &h), ATTNC_OK) << attnc_last_error();
    return h;
  }
  static void expect_error(int rc, int code, const std::string& says) {
    EXPECT_EQ(rc, code) << attnc_last_error();
    EXPECT_NE(std::string(attnc_last_error()).find(says), std::string::npos) << attnc_last_error();
  }

  attnc::test::TempDir dir_{"attnc-capi-ops"};
  std::string db_;
  attnc_attention* h_ = nullptr;
};

// Stand-ins for device pointers: the checks read none of them.
void* fake(long long n) { return reinterpret_cast<void*>(0x10000 * n); }

TEST_F(OpsCApi, InitSetsDefaultsAndRefusesUnsetSizes) {
  attnc_cascade c{};
  c.struct_size = sizeof c;
  c.num_tokens = 7;
  ASSERT_EQ(attnc_cascade_init(&c), ATTNC_OK);
  EXPECT_EQ(c.num_tokens, 0);
  EXPECT_EQ(c.softcap, -1.f);  // the spec's
  attnc_merge m{};
  expect_error(attnc_merge_init(&m), ATTNC_ERR_INVALID_ARGUMENT, "attnc_merge.struct_size is 0");
  attnc_cache_write w{};
  w.struct_size = 8;
  expect_error(attnc_cache_write_init(&w), ATTNC_ERR_INVALID_ARGUMENT, "sizeof(attnc_cache_write)");
  expect_error(attnc_attention_merge(h_, nullptr, nullptr), ATTNC_ERR_INVALID_ARGUMENT, "attnc_merge is NULL");
  m.struct_size = sizeof m;
  ASSERT_EQ(attnc_merge_init(&m), ATTNC_OK);
  expect_error(attnc_attention_merge(nullptr, &m, nullptr), ATTNC_ERR_INVALID_ARGUMENT, "attention is NULL");
}

TEST_F(OpsCApi, MergeRefusesBadCallsBeforeLoading) {
  attnc_merge m{};
  m.struct_size = sizeof m;
  ASSERT_EQ(attnc_merge_init(&m), ATTNC_OK);
  m.output = fake(1);
  m.prefix_output = fake(2);
  m.suffix_output = fake(3);
  m.prefix_lse = static_cast<float*>(fake(4));
  m.suffix_lse = static_cast<float*>(fake(5));
  m.num_tokens = 4;
  m.num_heads = 6;
  expect_error(attnc_attention_merge(h_, &m, nullptr), ATTNC_ERR_BAD_CALL,
               "merge_attn_states call: merge: num_heads 6 does not match the spec's num_q_heads 8");
  m.num_heads = 0;
  m.head_size = 128;
  expect_error(attnc_attention_merge(h_, &m, nullptr), ATTNC_ERR_BAD_CALL, "head_size 128 does not match");
  m.head_size = 0;
  m.lse_base = 7;
  expect_error(attnc_attention_merge(h_, &m, nullptr), ATTNC_ERR_INVALID_ARGUMENT, "lse_base 7");
}

TEST_F(OpsCApi, CacheWriteChecksHostSlotsBeforeLoading) {
  attnc_cache_write w{};
  w.struct_size = sizeof w;
  ASSERT_EQ(attnc_cache_write_init(&w), ATTNC_OK);
  w.key = fake(1);
  w.value = fake(2);
  w.key_cache = fake(3);
  w.value_cache = fake(4);
  w.slot_mapping = static_cast<long long*>(fake(5));
  const long long slots[] = {0, -1, 5000};
  w.host_slot_mapping = slots;
  w.num_tokens = 3;
  w.num_blocks = 4;  // 4 pages of 16
  expect_error(attnc_attention_cache_write(h_, &w, nullptr), ATTNC_ERR_BAD_CALL,
               "reshape_and_cache_flash call: ");
  EXPECT_NE(std::string(attnc_last_error()).find("slot_mapping[2] = 5000 points past the cache"), std::string::npos)
      << attnc_last_error();
  w.num_kv_heads = 3;
  expect_error(attnc_attention_cache_write(h_, &w, nullptr), ATTNC_ERR_BAD_CALL, "num_kv_heads 3 does not match");
}

TEST_F(OpsCApi, CascadeWorkspaceAndRefusals) {
  size_t bytes = 0;
  ASSERT_EQ(attnc_attention_cascade_workspace_needed(h_, 100, &bytes), ATTNC_OK) << attnc_last_error();
  EXPECT_GE(bytes, size_t(2) * 100 * 8 * (64 * 2 + 4));  // two 16-bit partial outputs and fp32 LSEs
  expect_error(attnc_attention_cascade_workspace_needed(h_, -1, &bytes), ATTNC_ERR_INVALID_ARGUMENT,
               "num_tokens must be >= 0");
  attnc_cascade c{};
  c.struct_size = sizeof c;
  ASSERT_EQ(attnc_cascade_init(&c), ATTNC_OK);
  c.num_tokens = 4;
  c.num_reqs = 2;
  c.page_size = 16;
  c.common_prefix_len = 24;
  expect_error(attnc_attention_cascade(h_, &c, nullptr), ATTNC_ERR_BAD_CALL,
               "common_prefix_len 24 is not a multiple of page_size 16");
  attnc_attention* alibi = create("version: 1\nname: a\nhead_dim: 64\nnum_q_heads: 8\nalibi: linear\n");
  c.common_prefix_len = 32;
  expect_error(attnc_attention_cascade(alibi, &c, nullptr), ATTNC_ERR_BAD_CALL, "cascade call: ");
  EXPECT_NE(std::string(attnc_last_error()).find("ALiBi"), std::string::npos) << attnc_last_error();
  attnc_attention_destroy(alibi);
}

// reserve covers every forced split count; a cap on them needs less.
TEST_F(OpsCApi, WorkspaceNeededWithCappedSplits) {
  size_t all = 0, capped = 0;
  ASSERT_EQ(attnc_attention_workspace_needed(h_, ATTNC_KIND_DECODE, 32, 1, 8192, &all), ATTNC_OK);
  ASSERT_EQ(attnc_attention_workspace_needed_splits(h_, ATTNC_KIND_DECODE, 32, 1, 8192, 8, &capped), ATTNC_OK);
  EXPECT_GE(capped, size_t(8) * 32 * 8 * (64 + 1) * sizeof(float));
  EXPECT_LT(capped, all);
  size_t zero = 0;
  ASSERT_EQ(attnc_attention_workspace_needed_splits(h_, ATTNC_KIND_DECODE, 32, 1, 8192, 0, &zero), ATTNC_OK);
  EXPECT_EQ(zero, all);
  expect_error(attnc_attention_workspace_needed_splits(h_, ATTNC_KIND_DECODE, 32, 1, 8192, -2, &zero),
               ATTNC_ERR_INVALID_ARGUMENT, "max_num_splits must be >= 0");
}

}  // namespace

// Decode context parallelism: the LSE correction's struct and refusals, the context pass's layer
// (a spec that parses and builds a handle), and the shard lengths.
TEST_F(OpsCApi, LseCorrectRefusesBadCallsBeforeLoading) {
  attnc_lse_correct c{};
  expect_error(attnc_lse_correct_init(&c), ATTNC_ERR_INVALID_ARGUMENT, "attnc_lse_correct.struct_size is 0");
  c.struct_size = sizeof c;
  c.rank = 5;
  ASSERT_EQ(attnc_lse_correct_init(&c), ATTNC_OK);
  EXPECT_EQ(c.rank, 0);
  EXPECT_EQ(c.heads_per_chunk, 0);
  c.output = fake(1);
  c.partial = fake(2);
  c.lses = static_cast<float*>(fake(3));
  c.num_tokens = 4;
  c.world_size = 2;
  c.rank = 2;
  expect_error(attnc_attention_lse_correct(h_, &c, nullptr), ATTNC_ERR_BAD_CALL,
               "lse_correct call: lse_correct: rank must be in [0, world_size = 2), got 2");
  c.rank = 1;
  c.heads_per_chunk = 3;
  expect_error(attnc_attention_lse_correct(h_, &c, nullptr), ATTNC_ERR_BAD_CALL,
               "heads_per_chunk 3 must divide num_heads 8");
  c.heads_per_chunk = 4;
  c.lse_base = 9;
  expect_error(attnc_attention_lse_correct(h_, &c, nullptr), ATTNC_ERR_INVALID_ARGUMENT, "attnc_lse_correct.lse_base 9");
  expect_error(attnc_attention_lse_correct(h_, nullptr, nullptr), ATTNC_ERR_INVALID_ARGUMENT,
               "attnc_lse_correct is NULL");
}

TEST_F(OpsCApi, DcpContextYamlBuildsTheGatheredHeadsLayer) {
  char yaml[4096];
  ASSERT_EQ(attnc_attention_dcp_context_yaml(h_, 4, yaml, sizeof yaml), ATTNC_OK) << attnc_last_error();
  attnc_attention* ctx = create(yaml);
  ASSERT_NE(ctx, nullptr);
  char json[4096];
  ASSERT_EQ(attnc_attention_spec_json(ctx, json, sizeof json), ATTNC_OK);
  const std::string j = json;
  EXPECT_NE(j.find("\"num_q_heads\":32"), std::string::npos) << j;
  EXPECT_NE(j.find("\"num_kv_heads\":2"), std::string::npos) << j;
  EXPECT_NE(j.find("\"lse_layout\":\"head_major\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"kernels\":[\"decode\"]"), std::string::npos) << j;
  EXPECT_NE(std::string(yaml).find("mask: none"), std::string::npos) << yaml;
  attnc_attention_destroy(ctx);

  expect_error(attnc_attention_dcp_context_yaml(h_, 4, yaml, 8), ATTNC_ERR_BUFFER_TOO_SMALL, "the buffer holds 8");
  expect_error(attnc_attention_dcp_context_yaml(h_, 0, yaml, sizeof yaml), ATTNC_ERR_INVALID_ARGUMENT,
               "world_size must be >= 1, got 0");
  attnc_attention* alibi = create("version: 1\nhead_dim: 64\nnum_q_heads: 8\nalibi: linear\nkernels: [decode]\n");
  expect_error(attnc_attention_dcp_context_yaml(alibi, 2, yaml, sizeof yaml), ATTNC_ERR_NOT_SUPPORTED,
               "not supported yet: ALiBi with decode context parallelism");
  attnc_attention_destroy(alibi);
}

TEST(DcpCApi, LocalSeqLensAsVllm) {
  const int lens[] = {0, 1, 16, 17, 33, 100};
  int r0[6], r1[6];
  ASSERT_EQ(attnc_dcp_local_seq_lens(2, 0, 16, lens, 6, r0), ATTNC_OK);
  ASSERT_EQ(attnc_dcp_local_seq_lens(2, 1, 16, lens, 6, r1), ATTNC_OK);
  const int want0[] = {0, 1, 16, 16, 17, 52}, want1[] = {0, 0, 0, 1, 16, 48};
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(r0[i], want0[i]) << "len " << lens[i];
    EXPECT_EQ(r1[i], want1[i]) << "len " << lens[i];
    EXPECT_EQ(r0[i] + r1[i], lens[i]);
  }
  EXPECT_EQ(attnc_dcp_local_seq_lens(2, 2, 1, lens, 6, r0), ATTNC_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(attnc_last_error()).find("rank must be in [0, world_size = 2), got 2"), std::string::npos);
  EXPECT_EQ(attnc_dcp_local_seq_lens(2, 0, 0, lens, 6, r0), ATTNC_ERR_INVALID_ARGUMENT);
  const int negative[] = {-3};
  EXPECT_EQ(attnc_dcp_local_seq_lens(2, 0, 1, negative, 1, r0), ATTNC_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(attnc_last_error()).find("seq_lens[0] must be >= 0, got -3"), std::string::npos);
  EXPECT_EQ(attnc_dcp_local_seq_lens(2, 0, 1, nullptr, 0, nullptr), ATTNC_OK);
}
