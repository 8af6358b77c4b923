// Decode context parallelism's shard arithmetic (generator/plan/dcp.h) against a brute-force deal
// of every token to its rank, and the context pass's layer: what it changes and what it refuses.
#include <gtest/gtest.h>

#include <vector>

#include "generator/plan/dcp.h"
#include "generator/plan/plan.h"
#include "generator/spec/spec_parse.h"

namespace attnc {
namespace {

TEST(DcpShard, ArithmeticMatchesDealingTokensOneByOne) {
  for (long long n : {1, 2, 3, 4, 8})
    for (long long inter : {1, 2, 16, 64}) {
      const DcpShard s{n, inter};
      std::vector<long long> held(n, 0);  // tokens dealt so far to each rank
      for (long long t = 0; t < 700; ++t) {
        // Dealing: runs of `inter` tokens go to ranks 0, 1, ..., n-1, 0, ...
        const long long rank = (t / inter) % n;
        ASSERT_EQ(dcp_rank_of(s, t), rank) << "N " << n << " I " << inter << " t " << t;
        ASSERT_EQ(dcp_local_index(s, t), held[rank]) << "N " << n << " I " << inter << " t " << t;
        ASSERT_EQ(dcp_global_position(s, rank, held[rank]), t);
        ++held[rank];
        for (long long r = 0; r < n; ++r)
          ASSERT_EQ(dcp_local_len(s, r, t + 1), held[r]) << "N " << n << " I " << inter << " len " << t + 1;
        long long most = 0;
        for (long long h : held) most = std::max(most, h);
        ASSERT_GE(dcp_max_local_len(s, t + 1), most);
        ASSERT_LT(dcp_max_local_len(s, t + 1), most + inter);  // at most a partial run of waste
      }
      for (long long r = 0; r < n; ++r) EXPECT_EQ(dcp_local_len(s, r, 0), 0);
    }
}

TEST(DcpShard, VllmsWorkedValues) {
  // get_dcp_local_seq_lens([17], N=2, I=4): ranks hold 4+4+1 = 9 and 4+4 = 8 tokens.
  EXPECT_EQ(dcp_local_len({2, 4}, 0, 17), 9);
  EXPECT_EQ(dcp_local_len({2, 4}, 1, 17), 8);
  EXPECT_EQ(dcp_max_local_len({2, 4}, 17), 12);  // ceil(17 / 8) * 4
  EXPECT_THROW(check_dcp_shard({0, 1}), std::invalid_argument);
  EXPECT_THROW(check_dcp_shard({2, 0}), std::invalid_argument);
}

Spec layer(const std::string& extra = "", const std::string& mask = "causal") {
  return parse_spec("version: 1\nname: l\nhead_dim: 128\nnum_q_heads: 4\nnum_kv_heads: 1\nmask: " + mask +
                        "\nkernels: [decode, merge]\n" + extra,
                    "layer.yaml");
}

TEST(DcpContextSpec, GathersHeadsDropsTheMaskAndReturnsTheLse) {
  const Spec c = dcp_context_spec(layer("softcap: 30\n"), 2);
  EXPECT_EQ(c.num_q_heads, 8);
  EXPECT_EQ(c.num_kv_heads, 1);
  EXPECT_EQ(c.mask.kind, MaskKind::none);
  EXPECT_EQ(c.lse.layout, LseLayout::head_major);
  EXPECT_EQ(c.lse.base, LseBase::e);
  EXPECT_FLOAT_EQ(c.softcap, 30.f);
  EXPECT_TRUE(c.kernels.decode);
  EXPECT_FALSE(c.kernels.prefill);
  EXPECT_EQ(c.name, "l-dcp2");
  // The layer's own LSE convention is kept, and the YAML reads back to the same spec.
  const Spec t = dcp_context_spec(layer("lse: {layout: token_major, base: 2}\n"), 4);
  EXPECT_EQ(t.lse.layout, LseLayout::token_major);
  EXPECT_EQ(t.lse.base, LseBase::two);
  EXPECT_EQ(t.num_q_heads, 16);
  EXPECT_EQ(parse_spec(to_yaml(t), "context.yaml"), t);
}

// DeepSeek-V3 under TP8 (16 heads a rank) with 2 DCP ranks: the shard pass is the absorbed decode
// of 32 heads over the one latent head, planned on mla_decode.
TEST(DcpContextSpec, MlaRunsTheAbsorbedDecodeOverTheLatentShard) {
  const Spec local = parse_spec("version: 1\nname: ds\nnum_q_heads: 16\nkv_cache: {dtype: same, layout: NHD, "
                                "page_size: 64}\nmask: causal\nlse: {layout: head_major, base: e}\nmla: "
                                "{kv_lora_rank: 512, qk_rope_head_dim: 64, qk_nope_head_dim: 128, v_head_dim: 128}\n"
                                "kernels: [prefill, decode]\n",
                                "ds.yaml");
  const Spec c = dcp_context_spec(local, 2);
  EXPECT_TRUE(c.mla.enabled);
  EXPECT_EQ(c.num_q_heads, 32);
  EXPECT_EQ(c.num_kv_heads, 32);  // the MHA prefill's; decode reads the one latent head
  EXPECT_EQ(c.mask.kind, MaskKind::none);
  EXPECT_EQ(c.lse.layout, LseLayout::head_major);
  EXPECT_TRUE(c.kernels.decode);
  EXPECT_FALSE(c.kernels.prefill);
  EXPECT_EQ(parse_spec(to_yaml(c), "context.yaml"), c);
  const KernelPlan p = plan_kernel(c, KernelKind::decode, default_config(c, KernelKind::decode, "sm_90a"), "sm_90a");
  EXPECT_EQ(p.family, "mla_decode");
  EXPECT_EQ(p.group, 32);
  EXPECT_EQ(p.head_dim_v, 512);
}

TEST(DcpContextSpec, RefusesWhatAShardCannotCompute) {
  auto refused = [](const std::string& extra, const std::string& what, const std::string& mask = "causal") {
    try {
      dcp_context_spec(layer(extra, mask), 2);
      ADD_FAILURE() << "accepted: " << extra;
    } catch (const NotSupportedYet& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  refused("alibi: linear\n", "ALiBi with decode context parallelism");
  refused("sinks: true\n", "attention sinks with decode context parallelism");
  refused("", "sliding windows with decode context parallelism", "{kind: sliding_window, left: 128, right: 0}");
  EXPECT_THROW(dcp_context_spec(layer(), 0), std::invalid_argument);
  EXPECT_THROW(dcp_context_spec(layer(), 20000), std::invalid_argument);
}

}  // namespace
}  // namespace attnc
