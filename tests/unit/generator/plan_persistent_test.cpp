// generator/plan: prefill_sm90's persistent blocks (Config::persistent) — the default for
// block-sparse contiguous prefill, its name, JSON and shared memory, and where it is refused.
#include <gtest/gtest.h>

#include "generator/emit/emit.h"
#include "generator/plan/plan_attention.h"
#include "generator/plan/plan_prefill_sm90.h"

namespace attnc {
namespace {

Spec phi3_small(bool sparse) {
  Spec s;
  s.head_dim = s.head_dim_v = 128;
  s.num_q_heads = 32;
  s.num_kv_heads = 8;
  s.mask = {MaskKind::causal, -1, -1};
  s.kernels.prefill = true;
  if (sparse) {
    BlockSparseSpec& b = s.sparse;
    b.enabled = true;
    b.block_size = 64;
    b.local_blocks = 16;
    b.vert_stride = 8;
    b.head_sliding_step = 1;
    b.active_head_begin = 0;
    b.active_head_end = 32;
    b.q_block_size = 64;
  }
  return s;
}

TEST(PlanPersistent, BlockSparseContiguousPrefillDefaultsToPersistentBlocks) {
  const Config c = default_config(phi3_small(true), KernelKind::prefill, "sm_90a");
  ASSERT_EQ(c.family, "prefill_sm90");
  EXPECT_TRUE(c.persistent);
  EXPECT_EQ(c.short_name(), "m128n128w12s2pspt");  // two warpgroups (Q in registers), paired tiles
  EXPECT_EQ(default_config(phi3_small(true), KernelKind::prefill_paged, "sm_90a").short_name(), "m192n64w16s2");
  EXPECT_FALSE(default_config(phi3_small(true), KernelKind::prefill_paged, "sm_90a").persistent);
  EXPECT_FALSE(default_config(phi3_small(false), KernelKind::prefill, "sm_90a").persistent);
}

TEST(PlanPersistent, JsonNamesItOnlyWhenSet) {
  Config c = default_config(phi3_small(false), KernelKind::prefill, "sm_90a");
  EXPECT_EQ(c.to_json().find("persistent"), std::string::npos);
  c = Config::from_json(R"({"persistent": true})", c);
  EXPECT_TRUE(c.persistent);
  EXPECT_NE(c.to_json().find("\"persistent\":true"), std::string::npos);
  EXPECT_EQ(Config::from_json(c.to_json()), c);
  try {
    Config::from_json(R"({"persistent": 1})");
    FAIL() << "an integer was taken";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "config.persistent: expected true or false");
  }
}

// The output tile (block_m x 64-column blocks of Dv, 2 bytes) and one barrier more.
TEST(PlanPersistent, SharedMemoryAddsTheOutputTileAndABarrier) {
  const Spec s = phi3_small(true);
  Config c = default_config(s, KernelKind::prefill, "sm_90a");
  Config one = c;
  one.persistent = false;
  EXPECT_EQ(prefill_sm90_smem_bytes(s, c, KernelKind::prefill) - prefill_sm90_smem_bytes(s, one, KernelKind::prefill),
            2 * 128 * 128 + 8);
  const KernelPlan p = plan_kernel(s, KernelKind::prefill, c, "sm_90a");
  EXPECT_EQ(p.smem_bytes, prefill_sm90_smem_bytes(s, c, KernelKind::prefill));
  const std::string src = emit_kernel(p).source;
  EXPECT_NE(src.find("static constexpr bool kPersistent = true;"), std::string::npos);
}

TEST(PlanPersistent, RefusedWherePersistentBlocksDoNotExist) {
  const Spec s = phi3_small(false);
  Config paged = default_config(s, KernelKind::prefill_paged, "sm_90a");
  paged.persistent = true;
  try {
    plan_kernel(s, KernelKind::prefill_paged, paged, "sm_90a");
    FAIL() << "a persistent paged kernel was planned";
  } catch (const BadConfig& e) {
    EXPECT_NE(std::string(e.what()).find("persistent prefill_sm90 blocks read contiguous K/V"), std::string::npos)
        << e.what();
  }
  Config sm80 = default_family_config(s, KernelKind::prefill, "sm_90a", "prefill_sm80");
  sm80.persistent = true;
  try {
    plan_kernel(s, KernelKind::prefill, sm80, "sm_90a");
    FAIL() << "a persistent prefill_sm80 kernel was planned";
  } catch (const BadConfig& e) {
    EXPECT_NE(std::string(e.what()).find("persistent blocks are prefill_sm90's"), std::string::npos) << e.what();
  }
}

// int8 Q/K with persistent blocks is not verified on a GPU: refused by name, and never a default
// (a block-sparse int8 spec keeps one item per block).
TEST(PlanPersistent, RefusedForInt8) {
  for (QuantMode quant : {QuantMode::int8_qk, QuantMode::int8_qkv}) {
    Spec s = phi3_small(false);
    s.kv_cache.dtype = KvDType::int8;
    s.quant = quant;
    Config c = default_config(s, KernelKind::prefill, "sm_90a");
    ASSERT_EQ(c.family, "prefill_sm90");
    EXPECT_FALSE(c.persistent);
    c.persistent = true;
    try {
      plan_kernel(s, KernelKind::prefill, c, "sm_90a");
      FAIL() << "a persistent int8 kernel was planned";
    } catch (const BadConfig& e) {
      EXPECT_NE(std::string(e.what()).find("persistent prefill_sm90 blocks are not verified with int8 Q/K (quant " +
                                           std::string(to_string(quant)) + ")"),
                std::string::npos)
          << e.what();
    }
    s.sparse = phi3_small(true).sparse;
    EXPECT_FALSE(default_config(s, KernelKind::prefill, "sm_90a").persistent);
  }
}

// Where the output tile does not fit beside the others (d256 sparse), the default stays one item
// per block rather than narrowing the key tiles.
TEST(PlanPersistent, DefaultOnlyWhereTheOutputTileFits) {
  Spec s = phi3_small(true);
  s.head_dim = s.head_dim_v = 256;
  const Config c = default_config(s, KernelKind::prefill, "sm_90a");
  ASSERT_EQ(c.family, "prefill_sm90");
  EXPECT_FALSE(c.persistent);
  EXPECT_EQ(c.block_n, default_config(s, KernelKind::prefill_paged, "sm_90a").block_n);
}

}  // namespace
}  // namespace attnc
