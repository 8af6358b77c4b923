// The search space and its pruning, on the CPU: what is enumerated, what is dropped and why.
#include "tuner/search_space.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "attnc/params/split_combine_shape.h"
#include "generator/decode_model.h"
#include "generator/spec/spec_parse.h"

namespace attnc {
namespace {

Spec spec_from(const std::string& extra = "", int d = 128) {
  return parse_spec("version: 1\nname: t\nhead_dim: " + std::to_string(d) +
                        "\nnum_q_heads: 32\nnum_kv_heads: 8\ndtype: bf16\nkernels: [prefill, decode]\n" + extra,
                    "t.yaml");
}

TEST(SearchSpace, DefaultConfigComesFirstAndOnce) {
  const Spec s = spec_from();
  for (KernelKind kind : {KernelKind::prefill, KernelKind::prefill_paged, KernelKind::decode}) {
    const auto configs = config_space(s, kind, "sm_90a");
    ASSERT_FALSE(configs.empty());
    EXPECT_EQ(configs.front(), default_config(s, kind, "sm_90a"));
    for (std::size_t i = 0; i < configs.size(); ++i)
      for (std::size_t j = i + 1; j < configs.size(); ++j) EXPECT_FALSE(configs[i] == configs[j]);
  }
}

// prefill_sm80 configs of a prefill space; its default on an arch without prefill_sm90.
Config sm80(const Spec& s) { return config_for(s, KernelKind::prefill, "sm_90a", R"({"family":"prefill_sm80"})"); }

TEST(SearchSpace, PrefillAxes) {
  const auto on_sm80 = config_space(spec_from(), KernelKind::prefill, "sm_80");
  EXPECT_EQ(on_sm80.size(), 18u);  // 3 warps x 3 block_n x 2 stages; no prefill_sm90 off sm_90a
  // sm_90a: prefill_sm90's default first, its space (2 block_m x 4 block_n, one of them the
  // default, and the default with 3 stages, without ping-pong and persistent), then the 18 sm80
  // points.
  const auto configs = config_space(spec_from(), KernelKind::prefill, "sm_90a");
  EXPECT_EQ(configs.size(), 29u);
  EXPECT_EQ(configs.front().family, "prefill_sm90");
  int sm80_points = 0, sm90_points = 0;
  for (const Config& c : configs) {
    EXPECT_EQ(c.to_json().find("splits"), std::string::npos);  // compiled configs carry no split count
    if (c.family == "prefill_sm80") {
      ++sm80_points;
      EXPECT_EQ(c.block_m, 16 * c.warps);
      EXPECT_TRUE(c.warps == 2 || c.warps == 4 || c.warps == 8) << c.short_name();
      EXPECT_TRUE(c.stages == 2 || c.stages == 3) << c.short_name();
    } else {
      ++sm90_points;
      EXPECT_EQ(c.family, "prefill_sm90");
      EXPECT_EQ(c.warps, c.block_m / 16 + 4) << c.short_name();
      EXPECT_TRUE(c.block_m == 128 || c.block_m == 192) << c.short_name();
      EXPECT_TRUE(c.block_n == 64 || c.block_n == 96 || c.block_n == 128 || c.block_n == 176) << c.short_name();
    }
  }
  EXPECT_EQ(sm80_points, 18);
  EXPECT_EQ(sm90_points, 11);
  const Spec only80 = spec_from("tuning: {families: [prefill_sm80]}\n");
  for (const Config& c : config_space(only80, KernelKind::prefill, "sm_90a")) EXPECT_EQ(c.family, "prefill_sm80");
}

// int8 prefill_sm90 keeps one block per item (persistent int8 is not verified on a GPU and the
// planner refuses it): its space never flips persistence on; the 16-bit space does.
TEST(SearchSpace, Int8PrefillNeverTriesPersistentBlocks) {
  const auto has_persistent = [](const std::vector<Config>& configs) {
    return std::any_of(configs.begin(), configs.end(), [](const Config& c) { return c.persistent; });
  };
  EXPECT_TRUE(has_persistent(config_space(spec_from(), KernelKind::prefill, "sm_90a")));
  for (const char* quant : {"int8_qk", "int8_qkv"}) {
    const Spec s = spec_from("kv_cache: {dtype: int8}\nquant: " + std::string(quant) + "\n");
    const auto configs = config_space(s, KernelKind::prefill, "sm_90a");
    ASSERT_EQ(configs.front().family, "prefill_sm90") << quant;
    EXPECT_FALSE(has_persistent(configs)) << quant;
  }
}

// 16-bit paged prefill tries the cp.async gather both ways (the default gathers at page 16, where
// TMA boxes would hold 16 rows; the call's page size may be another); int8 and contiguous never.
TEST(SearchSpace, PagedPrefillTriesTheGatherBothWays) {
  const auto gathers = [](const std::vector<Config>& configs) {
    std::set<bool> out;
    for (const Config& c : configs)
      if (c.family == "prefill_sm90") out.insert(c.paged_gather);
    return out;
  };
  for (int page : {16, 64}) {
    const Spec s = spec_from("kv_cache: {page_size: " + std::to_string(page) + "}\n");
    const auto configs = config_space(s, KernelKind::prefill_paged, "sm_90a");
    EXPECT_EQ(configs.front().paged_gather, page == 16) << page;
    EXPECT_EQ(gathers(configs), (std::set<bool>{false, true})) << page;
    EXPECT_EQ(gathers(config_space(s, KernelKind::prefill, "sm_90a")), std::set<bool>{false}) << page;
  }
  const Spec int8 = spec_from("kv_cache: {dtype: int8}\nquant: int8_qk\n");
  EXPECT_EQ(gathers(config_space(int8, KernelKind::prefill_paged, "sm_90a")), std::set<bool>{false});
}

// Paged prefill, 16-bit and int8, tries both families (prefill_sm90 the heuristic's pick).
TEST(SearchSpace, PagedInt8PrefillTriesBothFamilies) {
  const auto families = [](const std::vector<Config>& configs) {
    std::set<std::string> out;
    for (const Config& c : configs) out.insert(c.family);
    return out;
  };
  EXPECT_EQ(families(config_space(spec_from(), KernelKind::prefill_paged, "sm_90a")),
            (std::set<std::string>{"prefill_sm80", "prefill_sm90"}));
  for (const char* quant : {"int8_qk", "int8_qkv"}) {
    const Spec s = spec_from("kv_cache: {dtype: int8}\nquant: " + std::string(quant) + "\n");
    EXPECT_EQ(families(config_space(s, KernelKind::prefill_paged, "sm_90a")),
              (std::set<std::string>{"prefill_sm80", "prefill_sm90"}))
        << quant;
  }
}

// Block-sparse contiguous prefill at block size 64 and d128 defaults to paired tiles; its space
// holds the one-block tiles of before (the grid's other widths) and no mixed tiles (measured
// slower: an explicit config only). At block size 32 (one-block tiles by default) it tries paired
// tiles once, and the candidate survives pruning; dense and paged never pair.
TEST(SearchSpace, BlockSparsePrefillTriesPairedAndOneBlockTiles) {
  const auto count = [](const std::vector<Config>& configs, bool Config::*field) {
    return std::count_if(configs.begin(), configs.end(), [&](const Config& c) { return c.*field; });
  };
  const auto named = [](const std::vector<Config>& configs, const std::string& name) {
    return std::count_if(configs.begin(), configs.end(), [&](const Config& c) { return c.short_name() == name; });
  };
  const Spec s = spec_from("mask: causal\nblock_sparse: {block_size: 64, local_blocks: 16, vert_stride: 8}\n");
  const auto configs = config_space(s, KernelKind::prefill, "sm_90a");
  EXPECT_EQ(configs.front().short_name(), "m128n128w12s2pspt");
  EXPECT_EQ(named(configs, "m128n64w12s2ps"), 1);
  EXPECT_EQ(count(configs, &Config::mixed_tiles), 0);
  for (const Config& c : configs) {
    if (c.paired_tiles) {
      EXPECT_EQ(c.block_n, 128) << c.short_name();
    }
    if (c.family != "prefill_sm90") {
      EXPECT_FALSE(c.persistent || c.paired_tiles) << c.family << " " << c.short_name();
    }
  }
  const Spec s32 = spec_from("mask: causal\nblock_sparse: {block_size: 32, local_blocks: 16, vert_stride: 8}\n");
  const auto configs32 = config_space(s32, KernelKind::prefill, "sm_90a");
  EXPECT_FALSE(configs32.front().paired_tiles);
  ASSERT_EQ(count(configs32, &Config::paired_tiles), 1);
  const Config c = *std::find_if(configs32.begin(), configs32.end(), [](const Config& c) { return c.paired_tiles; });
  EXPECT_EQ(c.short_name(), "m128n64w12s2pspt");
  EXPECT_EQ(prune_reason(s32, KernelKind::prefill, c, "sm_90a", 0), "");
  EXPECT_EQ(Config::from_json(c.to_json()), c);
  EXPECT_EQ(count(config_space(s, KernelKind::prefill_paged, "sm_90a"), &Config::paired_tiles), 0);
  EXPECT_EQ(count(config_space(spec_from(), KernelKind::prefill, "sm_90a"), &Config::paired_tiles), 0);
}

TEST(SearchSpace, Sm90PruningFollowsTheConsumerRegisterBudget) {
  const Spec s = spec_from("", 64);
  Config c = default_config(s, KernelKind::prefill, "sm_90a");  // 3 consumer warpgroups at d64
  ASSERT_EQ(c.short_name(), "m192n128w16s2");
  EXPECT_EQ(register_limit(c), 160);
  EXPECT_EQ(prune_reason(s, KernelKind::prefill, c, "sm_90a", 0), "");
  c.block_n = 176;  // S 88 + P 44 + O 32 + the rest: over 160
  EXPECT_NE(prune_reason(s, KernelKind::prefill, c, "sm_90a", 0).find("registers"), std::string::npos);
  c.block_m = 128;
  c.warps = 12;  // two consumers get 240
  EXPECT_EQ(prune_reason(s, KernelKind::prefill, c, "sm_90a", 0), "");
}

TEST(SearchSpace, DecodeAxesCoverBothFamiliesTheDefaultsFirst) {
  const auto configs = config_space(spec_from(), KernelKind::decode, "sm_90a");
  ASSERT_EQ(configs.size(), 54u);  // 27 of each family; each default is one of its 27
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const Config& c = configs[i];
    EXPECT_EQ(c.family, i < 27 ? "decode_bw" : "decode_split") << i;
    EXPECT_EQ(c.block_m, c.family == "decode_bw" ? 16 : 16 * c.warps) << c.short_name();
    if (c.family == "decode_bw") {
      EXPECT_TRUE(c.block_n == 16 || c.block_n == 32 || c.block_n == 64) << c.short_name();
      EXPECT_TRUE(c.warps == 2 || c.warps == 4 || c.warps == 8) << c.short_name();
    }
  }
  // Before sm_90 decode_split is the baseline and its space comes first.
  const auto sm80 = config_space(spec_from(), KernelKind::decode, "sm_80");
  EXPECT_EQ(sm80.front().family, "decode_split");
  EXPECT_EQ(sm80.back().family, "decode_bw");
  // A spec's families list keeps the baseline and searches only what it names.
  const auto named = config_space(spec_from("tuning: {families: [decode_split]}\n"), KernelKind::decode, "sm_90a");
  ASSERT_EQ(named.size(), 28u);
  EXPECT_EQ(named.front().family, "decode_bw");
  EXPECT_EQ(named.back().family, "decode_split");
  // decode_bw needs block_m 16: a block_m list without it leaves only decode_split's points.
  const auto m64 = config_space(spec_from("tuning: {block_m: [64]}\n"), KernelKind::decode, "sm_90a");
  ASSERT_EQ(m64.size(), 10u);  // the baseline, then decode_split at 4 warps: 3 block_n x 3 stages
  for (std::size_t i = 1; i < m64.size(); ++i) EXPECT_EQ(m64[i].short_name().substr(0, 3), "m64");
}

TEST(SearchSpace, SpecTuningListsNarrowTheAxes) {
  const Spec s = spec_from("tuning: {warps: [4], block_n: [64], stages: [3]}\n");
  const auto configs = config_space(s, KernelKind::prefill, "sm_90a");
  // The default baseline, the baseline family's (prefill_sm90) two block_m at n64 s3, then the
  // one sm80 point.
  ASSERT_EQ(configs.size(), 4u);
  EXPECT_EQ(configs[1].short_name(), "m128n64w12s3");
  EXPECT_EQ(configs[2].short_name(), "m192n64w16s3");
  EXPECT_EQ(configs[3].short_name(), "m64n64w4s3");
  const Spec m = spec_from("tuning: {block_m: [32, 128]}\n");
  for (const Config& c : config_space(m, KernelKind::prefill, "sm_90a"))
    if (!(c == default_config(m, KernelKind::prefill, "sm_90a"))) {
      EXPECT_TRUE(c.block_m == 32 || c.block_m == 128);
    }
}

TEST(SearchSpace, SplitCountsFitTheKvLength) {
  const Spec s = spec_from();
  Config c = default_config(s, KernelKind::decode, "sm_90a");
  c.block_n = 128;
  ShapeBucket b{KernelKind::decode, 4, 1, 1024};  // 8 tiles of 128
  EXPECT_EQ(split_counts(s, KernelKind::decode, c, b), (std::vector<int>{0, 1, 2, 4, 8}));
  b.seqlen_k = 32768;
  EXPECT_EQ(split_counts(s, KernelKind::decode, c, b), (std::vector<int>{0, 1, 2, 4, 8, 16, 32}));
  b.seqlen_k = 64;  // one tile: no split but the heuristic and off
  EXPECT_EQ(split_counts(s, KernelKind::decode, c, b), (std::vector<int>{0, 1}));
  EXPECT_EQ(split_counts(s, KernelKind::prefill, c, b), (std::vector<int>{0}));
  const Spec t = spec_from("tuning: {splits: [3, 500]}\n");  // 500 is over kMaxSplits
  b.seqlen_k = 1 << 20;
  EXPECT_EQ(split_counts(t, KernelKind::decode, c, b), (std::vector<int>{0, 3}));
}

TEST(SearchSpace, PrunesWhatCannotWork) {
  const Spec s = spec_from();
  Config c = sm80(s);
  EXPECT_EQ(prune_reason(s, KernelKind::prefill, c, "sm_90a", 227 * 1024), "");
  Config bad = c;
  bad.block_m = 96;  // not 16 * warps: the planner refuses it
  EXPECT_NE(prune_reason(s, KernelKind::prefill, bad, "sm_90a", 0).find("block_m"), std::string::npos);
  Config big = c;
  big.block_n = 128;
  big.stages = 3;  // 224 KiB: fits sm_90a, not a device that allows 100 KiB
  EXPECT_EQ(prune_reason(s, KernelKind::prefill, big, "sm_90a", 227 * 1024), "");
  EXPECT_NE(prune_reason(s, KernelKind::prefill, big, "sm_90a", 100 * 1024).find("shared memory"), std::string::npos);
}

TEST(SearchSpace, RegisterEstimatePrunesWideTilesAtHeadDim256) {
  const Spec s = spec_from("", 256);
  Config c = sm80(s);  // m64n32w4: fits
  EXPECT_LE(estimate_registers(s, KernelKind::prefill, c), kMaxRegistersPerThread);
  EXPECT_EQ(prune_reason(s, KernelKind::prefill, c, "sm_90a", 0), "");
  c.block_n = 128;  // O (128) + S (64) + P (32) + the rest: clearly over (and too much shared memory)
  EXPECT_GT(estimate_registers(s, KernelKind::prefill, c), kMaxRegistersPerThread);
  EXPECT_NE(prune_reason(s, KernelKind::prefill, c, "sm_90a", 0), "");
  // Dv 256 with a small D fits shared memory at BN 128 but not the register file.
  const Spec v = spec_from("head_dim_v: 256\n", 64);
  Config w = sm80(v);
  w.block_n = 128;
  EXPECT_NE(prune_reason(v, KernelKind::prefill, w, "sm_90a", 0).find("registers"), std::string::npos)
      << prune_reason(v, KernelKind::prefill, w, "sm_90a", 0);
  // d128 at BN 64 is estimated near what ptxas reports (171).
  const Spec t = spec_from();
  Config d = sm80(t);
  EXPECT_NEAR(estimate_registers(t, KernelKind::prefill, d), 171, 20);
}

TEST(SearchSpace, PointsListBaselineFirstAndPrunedOnce) {
  const Spec s = spec_from("", 256);
  const ShapeBucket b{KernelKind::decode, 64, 1, 8192};
  const auto points = search_space(s, KernelKind::decode, b, "sm_90a", 227 * 1024);
  ASSERT_FALSE(points.empty());
  EXPECT_TRUE(points.front().baseline);
  EXPECT_EQ(points.front().choice.num_splits, 0);
  EXPECT_EQ(points.front().choice.config, default_config(s, KernelKind::decode, "sm_90a"));
  int baselines = 0, pruned = 0;
  for (const auto& p : points) {
    baselines += p.baseline;
    if (!p.pruned.empty()) {
      ++pruned;
      EXPECT_EQ(p.choice.num_splits, 0);
      EXPECT_EQ(std::count_if(points.begin(), points.end(),
                              [&](const SpacePoint& q) { return q.choice.config == p.choice.config; }),
                1);
    }
    EXPECT_LE(p.choice.num_splits, kMaxSplits);
  }
  EXPECT_EQ(baselines, 1);
  EXPECT_GT(pruned, 0);  // d256 at BN 128
}

// With the SM count, decode_bw's configs keep 0 and the model's three best split counts and come
// in the order of their best prediction (the search's budget goes to the likely winners first);
// decode_split's keep every count. Without it the space is the full one.
TEST(SearchSpace, DecodeBwPointsFollowTheModel) {
  const Spec s = spec_from();
  const ShapeBucket b{KernelKind::decode, 64, 1, 8192};
  const auto full = search_space(s, KernelKind::decode, b, "sm_90a", 227 * 1024);
  const auto modelled = search_space(s, KernelKind::decode, b, "sm_90a", 227 * 1024, 132);
  EXPECT_LT(modelled.size(), full.size());
  ASSERT_FALSE(modelled.empty());
  EXPECT_TRUE(modelled.front().baseline);
  const Problem p = b.representative();
  const SplitShape call{p.batch, 1, p.max_seqlen_k, p.batch, 132};
  double last = 0;
  Config current;
  int counts = 0;
  for (std::size_t i = 1; i < modelled.size(); ++i) {
    const SpacePoint& pt = modelled[i];
    if (!pt.pruned.empty() || pt.choice.config.family != "decode_bw") continue;
    if (pt.choice.config == modelled.front().choice.config) continue;  // the baseline leads, whatever its prediction
    if (!(pt.choice.config == current)) {
      current = pt.choice.config;
      counts = 0;
      const KernelPlan plan = plan_kernel(s, KernelKind::decode, current, "sm_90a");
      double best = predict_decode_seconds(plan, call, best_decode_splits(plan, call));
      for (int n : split_counts(s, KernelKind::decode, current, b))
        if (n > 0) best = std::min(best, predict_decode_seconds(plan, call, n));
      EXPECT_GE(best, last * (1 - 1e-9)) << current.short_name();  // (two units may round differently)
      last = best;
    }
    EXPECT_LE(++counts, 1 + kModelledSplits) << current.short_name();
  }
  EXPECT_GT(last, 0);
}

}  // namespace
}  // namespace attnc
