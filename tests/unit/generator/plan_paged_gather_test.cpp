// generator/plan: prefill_sm90's paged_gather (Config::paged_gather: 16-bit paged K/V gathered by
// cp.async) — the default where page boxes would hold up to 32 rows, its name, JSON and traits, the same shared memory as the TMA path,
// and where it is refused.
#include <gtest/gtest.h>

#include "generator/emit/emit.h"
#include "generator/plan/plan_attention.h"
#include "generator/plan/plan_prefill_sm90.h"
#include "tests/unit/generator/plan_refusal_util.h"

namespace attnc {
namespace {

Spec llama3(QuantMode quant = QuantMode::none) {
  Spec s;
  s.head_dim = s.head_dim_v = 128;
  s.num_q_heads = 32;
  s.num_kv_heads = 8;
  s.mask = {MaskKind::causal, -1, -1};
  s.quant = quant;
  s.kernels.prefill = true;
  return s;
}

Config gather(const Spec& s) {
  return Config::from_json(R"({"paged_gather": true})", default_config(s, KernelKind::prefill_paged, "sm_90a"));
}

TEST(PlanPagedGather, DefaultWherePageBoxesWouldHoldAtMost32Rows) {
  // gcd(page, block_n) <= 32 (d128: n128, so pages 16, 32 and 48; d256: n80, so every page size but multiples of 80); never
  // for contiguous prefill, int8 or block-sparse.
  for (int page : {16, 32, 48, 64, 256}) {
    Spec s = llama3();
    s.kv_cache.page_size = page;
    EXPECT_FALSE(default_config(s, KernelKind::prefill, "sm_90a").paged_gather) << page;
    EXPECT_EQ(default_config(s, KernelKind::prefill_paged, "sm_90a").paged_gather,
              page == 16 || page == 32 || page == 48)
        << page;
    Spec wide = s;
    wide.head_dim = wide.head_dim_v = 256;
    wide.num_q_heads = 16;
    const Config c = default_config(wide, KernelKind::prefill_paged, "sm_90a");
    ASSERT_EQ(c.block_n, 80);
    EXPECT_TRUE(c.paged_gather) << page;  // 80-key tiles: gcd(page, 80) = 16 at every page size here
  }
  EXPECT_FALSE(default_config(llama3(QuantMode::int8_qk), KernelKind::prefill_paged, "sm_90a").paged_gather);
}

TEST(PlanPagedGather, NameJsonTraitsAndSharedMemory) {
  const Spec s = llama3();
  const Config base = Config::from_json(R"({"paged_gather": false})", default_config(s, KernelKind::prefill_paged, "sm_90a"));
  const Config c = gather(s);
  EXPECT_EQ(base.to_json().find("paged_gather"), std::string::npos);
  EXPECT_EQ(c.short_name(), base.short_name() + "pg");
  EXPECT_NE(c.to_json().find("\"paged_gather\":true"), std::string::npos);
  EXPECT_EQ(Config::from_json(c.to_json()), c);
  const KernelPlan plan = plan_kernel(s, KernelKind::prefill_paged, c, "sm_90a");
  // The same rings and barriers as the TMA path (v_tail stays, unused).
  EXPECT_EQ(plan.smem_bytes, plan_kernel(s, KernelKind::prefill_paged, base, "sm_90a").smem_bytes);
  EXPECT_NE(emit_kernel(plan).source.find("kPagedGather = true"), std::string::npos);
  EXPECT_NE(emit_kernel(plan_kernel(s, KernelKind::prefill_paged, base, "sm_90a")).source.find("kPagedGather = false"),
            std::string::npos);
}

using test::expect_refused;

TEST(PlanPagedGather, RefusedWhereItCannotRun) {
  expect_refused(llama3(), KernelKind::prefill, R"({"paged_gather": true})",
                 "paged_gather gathers K/V tiles from a paged cache; a prefill kernel reads contiguous K/V");
  expect_refused(llama3(QuantMode::int8_qk), KernelKind::prefill_paged, R"({"paged_gather": true})",
                 "paged_gather copies 16-bit caches; quant int8_qk keeps TMA boxes");
  expect_refused(llama3(), KernelKind::prefill_paged, R"({"family": "prefill_sm80", "paged_gather": true})",
                 "paged_gather is prefill_sm90's");
}

}  // namespace
}  // namespace attnc
