// The dispatcher without a GPU (a described device): where a bucket's config comes from (pin,
// tuning record, heuristic), that a bucket's record is read once (a miss too), the split clamp to
// the workspace, JIT off, and the errors for kinds the spec lacks.
#include "runtime/dispatch/dispatcher.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "generator/plan/plan_prefill_sm90.h"
#include "runtime/driver/cuda_driver.h"
#include "runtime/driver/device.h"
#include "tests/unit/cache/cache_test_util.h"
#include "tests/unit/runtime/dispatch/dispatch_test_util.h"

namespace attnc {
namespace {

using test::kSmallSpecYaml;
using test::test_device;

class Dispatcher : public ::testing::Test {
 protected:
  Dispatcher() : spec_(parse_spec(kSmallSpecYaml, "small.yaml")), db_(dir_.file("attnc.db")) {}

  AttentionOptions options() const {
    AttentionOptions o;
    o.db = db_;
    o.device_info = test_device();
    o.no_jit = false;
    return o;
  }
  // A record for decode bucket b4.q1.k1024: block_n 32 (the default is 64), 3 splits.
  TunedChoice tuned() const {
    TunedChoice c;
    c.config = default_config(spec_, KernelKind::decode, "sm_90a");
    c.config.block_n = 32;
    c.num_splits = 3;
    return c;
  }
  void put_tuned(const std::string& bucket, const std::string& json) const {
    test::put_record(db_, test::key_for(spec_, test_device(), KernelKind::decode, bucket), json);
  }

  test::TempDir dir_;
  Spec spec_;
  std::string db_;
  const Problem decode_{KernelKind::decode, 3, 1, 1000};  // bucket b4.q1.k1024
};

TEST_F(Dispatcher, TuningRecordThenHeuristic) {
  put_tuned("b4.q1.k1024", tuned().to_json());
  Attention att(spec_, options());
  const Selection s = att.select(decode_, SIZE_MAX);
  EXPECT_EQ(s.bucket.label(), "b4.q1.k1024");
  EXPECT_EQ(s.origin, ChoiceOrigin::tuned);
  EXPECT_EQ(*s.config, tuned().config);
  EXPECT_EQ(s.num_splits, 3);
  EXPECT_FALSE(s.cached);
  EXPECT_FALSE(s.kernel_loaded);
  EXPECT_NE(s.entry->find("n32"), std::string::npos) << *s.entry;

  // Same bucket, other exact sizes: the memory table, no SQLite read.
  const Selection again = att.select({KernelKind::decode, 4, 1, 513}, SIZE_MAX);
  EXPECT_TRUE(again.cached);
  EXPECT_EQ(again.origin, ChoiceOrigin::tuned);
  EXPECT_EQ(again.bucket, s.bucket);

  // Another bucket has no record: default config, heuristic split count.
  const Problem big{KernelKind::decode, 1, 1, 8192};
  const Selection h = att.select(big, SIZE_MAX);
  EXPECT_EQ(h.origin, ChoiceOrigin::heuristic);
  const Config def = default_config(spec_, KernelKind::decode, "sm_90a");
  EXPECT_EQ(*h.config, def);
  const KernelPlan plan = plan_kernel(spec_, KernelKind::decode, def, "sm_90a");
  EXPECT_EQ(h.num_splits, choose_num_splits(plan, 1, 1, 8192, 132));
  EXPECT_GT(h.num_splits, 1);
  EXPECT_TRUE(att.warnings().empty()) << att.warnings();
}

TEST_F(Dispatcher, UseTuningOffIgnoresRecords) {
  put_tuned("b4.q1.k1024", tuned().to_json());
  AttentionOptions o = options();
  o.use_tuning = false;
  Attention att(spec_, o);
  const Selection s = att.select(decode_, SIZE_MAX);
  EXPECT_EQ(s.origin, ChoiceOrigin::heuristic);
  EXPECT_EQ(*s.config, default_config(spec_, KernelKind::decode, "sm_90a"));
}

TEST_F(Dispatcher, MissIsRememberedPerBucket) {
  Attention att(spec_, options());
  EXPECT_EQ(att.select(decode_).origin, ChoiceOrigin::heuristic);
  put_tuned("b4.q1.k1024", tuned().to_json());  // appears after the first look
  const Selection s = att.select(decode_);
  EXPECT_TRUE(s.cached);
  EXPECT_EQ(s.origin, ChoiceOrigin::heuristic);
  // A new Attention reads the record.
  Attention fresh(spec_, options());
  EXPECT_EQ(fresh.select(decode_).origin, ChoiceOrigin::tuned);
}

TEST_F(Dispatcher, RecordForAnotherDeviceDoesNotApply) {
  DeviceInfo other = test_device();
  other.sm_count = 114;
  test::put_record(db_, test::key_for(spec_, other, KernelKind::decode, "b4.q1.k1024"), tuned().to_json());
  Attention att(spec_, options());
  EXPECT_EQ(att.select(decode_).origin, ChoiceOrigin::heuristic);
}

TEST_F(Dispatcher, PinComesFirst) {
  put_tuned("b4.q1.k1024", tuned().to_json());
  Attention att(spec_, options());
  EXPECT_EQ(att.select(decode_).origin, ChoiceOrigin::tuned);
  TunedChoice pinned = tuned();
  pinned.config.block_n = 16;
  pinned.num_splits = 2;
  att.pin(ShapeBucket::of(decode_), pinned);
  const Selection s = att.select(decode_, SIZE_MAX);
  EXPECT_EQ(s.origin, ChoiceOrigin::memory);
  EXPECT_EQ(s.config->block_n, 16);
  EXPECT_EQ(s.num_splits, 2);
}

TEST_F(Dispatcher, UnusableRecordFallsBackWithAWarning) {
  put_tuned("b4.q1.k1024", R"({"family":"decode_split","block_m":7})");
  Attention att(spec_, options());
  const Selection s = att.select(decode_);
  EXPECT_EQ(s.origin, ChoiceOrigin::fallback);
  EXPECT_EQ(*s.config, default_config(spec_, KernelKind::decode, "sm_90a"));
  EXPECT_NE(att.warnings().find("b4.q1.k1024"), std::string::npos) << att.warnings();
}

TEST_F(Dispatcher, BackgroundCompileServesTheHeuristicFirst) {
  put_tuned("b4.q1.k1024", tuned().to_json());
  AttentionOptions o = options();
  o.background_compile = true;
  Attention att(spec_, o);
  const Selection s = att.select(decode_);
  EXPECT_EQ(s.origin, ChoiceOrigin::fallback);  // the tuned kernel is not loaded yet
  EXPECT_EQ(*s.config, default_config(spec_, KernelKind::decode, "sm_90a"));
}

TEST_F(Dispatcher, SplitsAreLoweredToTheWorkspace) {
  put_tuned("b4.q1.k1024", tuned().to_json());
  Attention att(spec_, options());
  const KernelPlan plan = plan_kernel(spec_, KernelKind::decode, tuned().config, "sm_90a");
  const int total_q = decode_.batch * decode_.max_seqlen_q;
  const size_t per_split = attention_workspace_bytes(plan, total_q, 1 + 1) / 2;
  EXPECT_EQ(att.select(decode_, 3 * per_split).num_splits, 3);
  EXPECT_EQ(att.select(decode_, 3 * per_split - 1).num_splits, 2);
  EXPECT_EQ(att.select(decode_, 2 * per_split).num_splits, 2);
  EXPECT_EQ(att.select(decode_, per_split).num_splits, 1);
  EXPECT_EQ(att.select(decode_, 0).num_splits, 1);
  EXPECT_EQ(att.select(decode_).num_splits, 1);  // nothing reserved
  EXPECT_EQ(att.workspace_bytes(), 0u);
  // Prefill never splits.
  EXPECT_EQ(att.select({KernelKind::prefill, 1, 8192, 8192}, SIZE_MAX).num_splits, 1);
}

// The heuristic's count is remembered per kernel for the last shape (select must cost nanoseconds
// on a repeated shape); alternating shapes and workspaces still get the model's own answer.
TEST_F(Dispatcher, RememberedHeuristicSplitsFollowTheShape) {
  Attention att(spec_, options());
  const KernelPlan plan = plan_kernel(spec_, KernelKind::decode, default_config(spec_, KernelKind::decode, "sm_90a"),
                                      "sm_90a");
  const int sms = test_device().sm_count;
  for (int round = 0; round < 3; ++round)
    for (const Problem& p : {Problem{KernelKind::decode, 2, 1, 3000}, Problem{KernelKind::decode, 48, 1, 3000},
                             Problem{KernelKind::decode, 1, 1, 60000}, Problem{KernelKind::decode, 2, 1, 3000}}) {
      const int model = choose_num_splits(plan, p.batch, p.max_seqlen_q, p.max_seqlen_k, sms);
      EXPECT_EQ(att.select(p, SIZE_MAX).num_splits, model) << p.batch << " x " << p.max_seqlen_k;
      EXPECT_EQ(att.select(p, 0).num_splits, 1);  // a remembered count is still lowered to the workspace
    }
}

TEST_F(Dispatcher, WorkspaceNeededCoversSmallerBatches) {
  Attention att(spec_, options());
  const Problem largest{KernelKind::decode, 8, 1, 4096};
  size_t most = 0;
  for (int b = 1; b <= 8; ++b) {
    const Selection s = att.select({KernelKind::decode, b, 1, 4096}, SIZE_MAX);
    const KernelPlan plan = plan_kernel(spec_, KernelKind::decode, *s.config, "sm_90a");
    most = std::max(most, attention_workspace_bytes(plan, b, s.num_splits));
  }
  EXPECT_GT(most, 0u);
  EXPECT_GE(att.workspace_needed(largest), most);
  // Sized that way, every batch up to 8 keeps its split count.
  for (int b = 1; b <= 8; ++b)
    EXPECT_EQ(att.select({KernelKind::decode, b, 1, 4096}, att.workspace_needed(largest)).num_splits,
              att.select({KernelKind::decode, b, 1, 4096}, SIZE_MAX).num_splits);
}

// reserve(32, 8192) then a forced num_splits = 8 once failed with "needs a workspace of 865280
// bytes, got 648960": the workspace covered the dispatcher's own counts only.
TEST_F(Dispatcher, WorkspaceNeededCoversEveryForcedCount) {
  Attention att(spec_, options());
  const Problem largest{KernelKind::decode, 32, 1, 8192};
  const size_t needed = att.workspace_needed(largest);
  for (int b : {1, 7, 32})
    for (int k : {100, 4096, 8192}) {
      const Selection s = att.select({KernelKind::decode, b, 1, k}, needed);
      const KernelPlan plan = plan_kernel(spec_, KernelKind::decode, *s.config, "sm_90a");
      for (int forced = 2; forced <= max_useful_splits(plan, k); ++forced)
        ASSERT_GE(needed, attention_workspace_bytes(plan, b, forced)) << "b " << b << " k " << k << " forced " << forced;
      // Beyond one part per KV tile the extra parts are empty and dropped, so they fit too.
      const int over = decide_num_splits(plan, {b, 1, k, b, test_device().sm_count}, 128, 0, needed);
      EXPECT_LE(attention_workspace_bytes(plan, b, over), needed) << "b " << b << " k " << k;
    }
  // A cap on forced counts: less memory, the dispatcher's own choices still covered.
  const size_t capped = att.workspace_needed(largest, 8);
  EXPECT_LT(capped, needed);
  const KernelPlan plan = plan_kernel(spec_, KernelKind::decode, default_config(spec_, KernelKind::decode, "sm_90a"),
                                      "sm_90a");
  EXPECT_GE(capped, attention_workspace_bytes(plan, 32, 8));
  for (int b = 1; b <= 32; ++b)
    EXPECT_EQ(att.select({KernelKind::decode, b, 1, 8192}, capped).num_splits,
              att.select({KernelKind::decode, b, 1, 8192}, SIZE_MAX).num_splits);
}

// A v_prewiden kernel pinned for `call` is served from `widened` bytes of workspace, not from one
// byte less (then the kernel of the same kind whose producer widens V: the heuristic's tiles for
// that path) nor without a workspace; reserve() covers it.
void expect_v_prewiden_needs(Attention& att, const Spec& s, const Problem& call, size_t widened) {
  TunedChoice once;
  once.config = default_prefill_sm90_config(s, call.kind, VWiden::once_per_call);
  ASSERT_TRUE(once.config.v_prewiden);
  att.pin(ShapeBucket::of(call), once);
  EXPECT_TRUE(att.select(call, widened).config->v_prewiden);
  EXPECT_EQ(*att.select(call, widened - 1).config, default_prefill_sm90_config(s, call.kind, VWiden::producer));
  EXPECT_FALSE(att.select(call).config->v_prewiden);  // nothing reserved
  EXPECT_GE(att.workspace_needed(call), widened);
}

// int8_qkv prefill with V widened once per call (v_prewiden) lives in the workspace: batch x
// max_seqlen_k rows; with the heuristic (no pin) reserve() covers what the heuristic runs.
TEST_F(Dispatcher, VPrewidenNeedsTheWorkspaceElseTheProducerWidens) {
  const Spec s = test::as_int8_qkv(spec_);
  Attention att(s, options());
  const Problem call{KernelKind::prefill, 2, 512, 512};
  const size_t widened = size_t(2) * 512 * s.num_kv_heads * s.head_dim_v * 2;
  expect_v_prewiden_needs(att, s, call, widened);
  Attention heuristic(s, options());
  EXPECT_EQ(heuristic.workspace_needed(call), kVPrewidenIsDefault ? widened : 0u);
}

// Paged: each request's keys at its own rows of the workspace, max_seqlen_k rounded up to whole
// key tiles (500 keys: 512 rows in 128-key tiles).
TEST_F(Dispatcher, PagedVPrewidenNeedsRequestsOfWholeTilesElseTheProducerWidens) {
  const Spec s = test::as_int8_qkv(spec_);
  Attention att(s, options());
  const Problem call{KernelKind::prefill_paged, 2, 500, 500};
  ASSERT_EQ(default_prefill_sm90_config(s, call.kind, VWiden::once_per_call).block_n, 128);
  const size_t widened = size_t(2) * 512 * s.num_kv_heads * s.head_dim_v * 2;
  expect_v_prewiden_needs(att, s, call, widened);
  Attention heuristic(s, options());
  EXPECT_EQ(heuristic.workspace_needed(call) >= widened, kPagedVPrewidenIsDefault);
}

TEST_F(Dispatcher, KindsTheSpecLacks) {
  Attention att(parse_spec("version: 1\nname: p\nhead_dim: 64\nnum_q_heads: 4\nkernels: [prefill]\n", "p.yaml"),
                options());
  try {
    att.select({KernelKind::decode, 1, 1, 100});
    FAIL() << "expected DispatchError";
  } catch (const DispatchError& e) {
    EXPECT_NE(std::string(e.what()).find("spec 'p' has no decode kernel (its kernels: prefill, prefill_paged)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(att.select({KernelKind::merge, 1, 1, 1}), DispatchError);
}

TEST_F(Dispatcher, NoJitNamesTheKernelAndTheCompileLine) {
  AttentionOptions o = options();
  o.no_jit = true;
  o.spec_path = "specs/small.yaml";
  Attention att(spec_, o);
  const std::string entry = *att.select(decode_).entry;
  try {
    att.prepare(decode_);
    FAIL() << "expected JitDisabled";
  } catch (const JitDisabled& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("kernel " + entry), std::string::npos) << m;
    EXPECT_NE(m.find("not in the cache " + db_), std::string::npos) << m;
    EXPECT_NE(m.find("ATTNC_NO_JIT=1"), std::string::npos) << m;
    EXPECT_NE(m.find("attnc compile specs/small.yaml --arch sm_90a --kernel decode --config '{"), std::string::npos)
        << m;
    EXPECT_NE(m.find("--db " + db_), std::string::npos) << m;
  }
}

TEST_F(Dispatcher, NoJitFromTheEnvironment) {
  ::setenv("ATTNC_NO_JIT", "1", 1);
  AttentionOptions o = options();
  o.no_jit.reset();
  Attention att(spec_, o);
  ::unsetenv("ATTNC_NO_JIT");
  EXPECT_THROW(att.prepare(decode_), JitDisabled);
}

TEST_F(Dispatcher, MemoryOnlyDatabase) {
  AttentionOptions o = options();
  o.db = "none";
  o.no_jit = true;
  Attention att(spec_, o);
  EXPECT_EQ(att.select(decode_).origin, ChoiceOrigin::heuristic);
  try {
    att.prepare(decode_);
    FAIL();
  } catch (const JitDisabled& e) {
    EXPECT_NE(std::string(e.what()).find("none (memory only)"), std::string::npos) << e.what();
  }
}

TEST_F(Dispatcher, WithoutADescriptionSelectNeedsTheDriver) {
  if (Device::count() > 0) GTEST_SKIP() << "a GPU is present";
  AttentionOptions o = options();
  o.device_info.reset();
  Attention att(spec_, o);  // constructing needs no GPU
  EXPECT_THROW(att.select(decode_), DriverUnavailable);
}

}  // namespace
}  // namespace attnc
