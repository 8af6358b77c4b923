// The struct_size contract of include/attnc.h, through libattnc.so: the library reads and writes
// only the bytes a caller's struct has. A first-version ("v1") caller's struct sits in a buffer
// followed by guard bytes: the *_init and every call taking the struct leave the guard alone and
// work. A caller built against a newer, larger header keeps its struct_size and its extra bytes;
// a struct_size below the first version's is refused, by the *_init too, with what to do.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "attnc.h"

namespace {

// The first version's sizes, as the header of that version declared them.
constexpr size_t kOptionsV1 = offsetof(attnc_options, device_driver_version) + sizeof(int);
constexpr size_t kCallV1 = offsetof(attnc_call, workspace_bytes) + sizeof(size_t);
constexpr size_t kSelectionV1 = offsetof(attnc_selection, stages) + sizeof(int);

constexpr size_t kGuardBytes = 64;
constexpr unsigned char kGuard = 0xA5;
constexpr unsigned char kUnset = 0xCC;  // what the caller's memory held before init

const char* kSpec = "version: 1\nname: v1-caller\nhead_dim: 64\nnum_q_heads: 8\nnum_kv_heads: 2\nkernels: [decode]\n";

// A caller's struct of `bytes` bytes claiming `struct_size`, followed by guard bytes.
template <class T>
class CallerStruct {
 public:
  explicit CallerStruct(size_t bytes, size_t struct_size) : bytes_(bytes), buf_(bytes + kGuardBytes, kGuard) {
    std::memset(buf_.data(), kUnset, bytes);
    std::memcpy(buf_.data(), &struct_size, sizeof struct_size);
  }
  explicit CallerStruct(size_t bytes) : CallerStruct(bytes, bytes) {}
  T* get() { return reinterpret_cast<T*>(buf_.data()); }
  T* operator->() { return get(); }

  ::testing::AssertionResult guard_intact() const { return all_equal(bytes_, buf_.size(), kGuard, "guard"); }
  // Bytes [from, to) of the struct still hold what the caller put there.
  ::testing::AssertionResult untouched(size_t from, size_t to) const {
    return all_equal(from, to, kUnset, "caller's byte");
  }

 private:
  ::testing::AssertionResult all_equal(size_t from, size_t to, unsigned char want, const char* what) const {
    for (size_t i = from; i < to; ++i)
      if (buf_[i] != want)
        return ::testing::AssertionFailure() << what << " at offset " << i << " was written (0x" << std::hex
                                             << int(buf_[i]) << ")";
    return ::testing::AssertionSuccess();
  }
  size_t bytes_;
  std::vector<unsigned char> buf_;
};

bool error_has(const char* part) { return std::string(attnc_last_error()).find(part) != std::string::npos; }

// Memory-only cache; a described device lets select work without a GPU.
void set_options(attnc_options* o, bool describe_device) {
  o->db = "none";
  if (!describe_device) return;
  o->device_name = "Test GPU";
  o->device_arch = "sm_90a";
  o->device_sm_count = 132;
  o->device_driver_version = 13000;
}

// A handle made through the contract with today's full-size options.
attnc_attention* make_handle(bool describe_device) {
  attnc_options o{};
  o.struct_size = sizeof(attnc_options);
  EXPECT_EQ(attnc_options_init(&o), ATTNC_OK) << attnc_last_error();
  set_options(&o, describe_device);
  attnc_attention* h = nullptr;
  EXPECT_EQ(attnc_attention_create_from_yaml(kSpec, &o, &h), ATTNC_OK) << attnc_last_error();
  return h;
}

// Without a GPU, run stops at the driver; with one, at the empty call: either way past the struct.
void expect_run_took_the_call(attnc_attention* h, const attnc_call* c) {
  const int rc = attnc_attention_run(h, c, nullptr);
  EXPECT_TRUE(rc == ATTNC_ERR_NO_GPU || rc == ATTNC_ERR_BAD_CALL) << rc << ": " << attnc_last_error();
}

TEST(StructSize, V1OptionsInitAndCreateStayInside) {
  CallerStruct<attnc_options> o(kOptionsV1);
  ASSERT_EQ(attnc_options_init(o.get()), ATTNC_OK) << attnc_last_error();
  EXPECT_TRUE(o.guard_intact());
  EXPECT_EQ(o->struct_size, kOptionsV1);
  EXPECT_EQ(o->db, nullptr);
  EXPECT_EQ(o->use_tuning, 1);
  EXPECT_EQ(o->no_jit, -1);
  EXPECT_EQ(o->device_name, nullptr);

  set_options(o.get(), /*describe_device=*/true);
  attnc_attention* h = nullptr;
  ASSERT_EQ(attnc_attention_create_from_yaml(kSpec, o.get(), &h), ATTNC_OK) << attnc_last_error();
  EXPECT_TRUE(o.guard_intact());

  CallerStruct<attnc_selection> s(kSelectionV1);
  ASSERT_EQ(attnc_attention_select(h, ATTNC_KIND_DECODE, 1, 1, 4096, s.get(), nullptr, 0), ATTNC_OK)
      << attnc_last_error();
  EXPECT_TRUE(s.guard_intact());
  EXPECT_EQ(s->struct_size, kSelectionV1);
  EXPECT_EQ(s->origin, ATTNC_ORIGIN_HEURISTIC);
  EXPECT_GT(s->stages, 0);  // the last v1 field
  attnc_attention_destroy(h);
}

TEST(StructSize, V1CallInitAndRunStayInside) {
  CallerStruct<attnc_call> c(kCallV1);
  ASSERT_EQ(attnc_call_init(c.get()), ATTNC_OK) << attnc_last_error();
  EXPECT_TRUE(c.guard_intact());
  EXPECT_EQ(c->struct_size, kCallV1);
  EXPECT_EQ(c->kind, ATTNC_KIND_PREFILL);
  EXPECT_EQ(c->dtype, ATTNC_DTYPE_UNSET);
  EXPECT_EQ(c->softcap, -1.f);
  EXPECT_EQ(c->window_left, -2);
  EXPECT_EQ(c->q, nullptr);
  EXPECT_EQ(c->workspace_bytes, 0u);  // the last v1 field

  attnc_attention* h = make_handle(/*describe_device=*/false);
  ASSERT_NE(h, nullptr);
  c->kind = ATTNC_KIND_DECODE;
  expect_run_took_the_call(h, c.get());
  EXPECT_TRUE(c.guard_intact());
  attnc_attention_destroy(h);
}

// A header newer than this library declares a larger attnc_call: init fills the fields both know,
// keeps the caller's struct_size and leaves the newer fields alone; run reads the known ones.
TEST(StructSize, NewerCallerKeepsItsSizeAndExtraFields) {
  const size_t newer = sizeof(attnc_call) + 32;
  CallerStruct<attnc_call> c(newer);
  ASSERT_EQ(attnc_call_init(c.get()), ATTNC_OK) << attnc_last_error();
  EXPECT_EQ(c->struct_size, newer);
  EXPECT_TRUE(c.untouched(sizeof(attnc_call), newer));
  EXPECT_TRUE(c.guard_intact());
  EXPECT_EQ(c->window_right, -2);

  attnc_attention* h = make_handle(/*describe_device=*/false);
  ASSERT_NE(h, nullptr);
  c->kind = ATTNC_KIND_DECODE;
  expect_run_took_the_call(h, c.get());
  attnc_attention_destroy(h);
}

TEST(StructSize, InitRefusesASizeBelowTheFirstVersion) {
  CallerStruct<attnc_call> c(sizeof(attnc_call), /*struct_size=*/0);
  EXPECT_EQ(attnc_call_init(c.get()), ATTNC_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_has(("attnc_call.struct_size is 0, expected at least " + std::to_string(kCallV1) +
                         ": set it to sizeof(attnc_call) before attnc_call_init")
                            .c_str()))
      << attnc_last_error();
  EXPECT_TRUE(c.untouched(sizeof(size_t), sizeof(attnc_call)));  // nothing written

  CallerStruct<attnc_options> o(sizeof(attnc_options), /*struct_size=*/8);
  EXPECT_EQ(attnc_options_init(o.get()), ATTNC_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_has("attnc_options.struct_size is 8, expected at least")) << attnc_last_error();
  EXPECT_TRUE(o.untouched(sizeof(size_t), sizeof(attnc_options)));

  EXPECT_EQ(attnc_call_init(nullptr), ATTNC_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_has("attnc_call is NULL")) << attnc_last_error();
  EXPECT_EQ(attnc_options_init(nullptr), ATTNC_ERR_INVALID_ARGUMENT);
}

TEST(StructSize, SelectionBelowTheFirstVersionSaysWhatToSet) {
  attnc_attention* h = make_handle(/*describe_device=*/true);
  ASSERT_NE(h, nullptr);
  attnc_selection s{};
  s.struct_size = 4;
  EXPECT_EQ(attnc_attention_select(h, ATTNC_KIND_DECODE, 1, 1, 100, &s, nullptr, 0), ATTNC_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_has("attnc_selection.struct_size is 4, expected at least")) << attnc_last_error();
  EXPECT_TRUE(error_has("set it to sizeof(attnc_selection)")) << attnc_last_error();
  EXPECT_FALSE(error_has("_init")) << attnc_last_error();  // there is no attnc_selection_init
  attnc_attention_destroy(h);
}

}  // namespace
