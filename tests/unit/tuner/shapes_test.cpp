// --shapes presets and files, the sweep's task order, and --shard.
#include "tuner/shapes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "generator/spec/spec_parse.h"

namespace attnc {
namespace {

Spec spec(int d = 128) {
  return parse_spec("version: 1\nname: t\nhead_dim: " + std::to_string(d) +
                        "\nnum_q_heads: 32\nnum_kv_heads: 8\nkernels: [prefill, decode]\n",
                    "t.yaml");
}

std::string labels(const std::vector<ShapeBucket>& bs) {
  std::string s;
  for (const auto& b : bs) s += std::string(s.empty() ? "" : " ") + to_string(b.kind) + ":" + b.label();
  return s;
}

TEST(Shapes, Presets) {
  EXPECT_EQ(labels(sweep_tasks(preset_shapes("anchors", spec()),
                               {KernelKind::prefill, KernelKind::prefill_paged, KernelKind::decode})),
            "prefill:b4.q4096.k4096 prefill_paged:b4.q4096.k4096 decode:b16.q1.k32768 decode:b64.q1.k8192 "
            "decode:b128.q1.k2048");
  EXPECT_EQ(preset_shapes("anchors", spec(256)).front().batch, 2);
  EXPECT_EQ(labels(preset_shapes("smoke", spec())),
            "prefill:b2.q256.k256 prefill_paged:b2.q256.k256 decode:b4.q1.k1024");
  EXPECT_EQ(preset_shapes("serving", spec()).size(), 8u + 20u);
  EXPECT_THROW(preset_shapes("huge", spec()), std::invalid_argument);
}

TEST(Shapes, FileRoundsToBucketsAndDropsDuplicates) {
  const auto bs = parse_shapes_yaml(
      "- {kind: decode, batch: 60, seqlen_q: 1, seqlen_k: 8000}\n"
      "- {kind: decode, batch: 64, seqlen_q: 1, seqlen_k: 8192}\n"
      "- kind: prefill\n  batch: 1\n  seqlen_q: 3000\n  seqlen_k: 3000\n",
      "s.yaml");
  EXPECT_EQ(labels(sweep_tasks(bs, {KernelKind::prefill, KernelKind::decode})),
            "prefill:b1.q4096.k4096 decode:b64.q1.k8192");
  EXPECT_EQ(sweep_tasks(bs, {KernelKind::decode}).size(), 1u);  // kinds the spec lacks are left out
}

void expect_error(const std::string& yaml, const std::string& needle) {
  try {
    parse_shapes_yaml(yaml, "s.yaml");
    FAIL() << "accepted: " << yaml;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Shapes, FileErrorsNameEntryAndField) {
  expect_error("kind: decode", "s.yaml: expected a list");
  expect_error("[]", "the list is empty");
  expect_error("- [1, 2]", "s.yaml:1: entry 0: expected a list of {kind");
  expect_error(
      "- {kind: decode, batch: 1, seqlen_q: 1, seqlen_k: 4}\n- {kind: merge, batch: 1, seqlen_q: 1, "
      "seqlen_k: 4}",
      "s.yaml:2: entry 1: kind: 'merge' is not a tunable kernel kind; allowed: prefill, prefill_paged, decode");
  expect_error("- {kind: decode, batch: 0, seqlen_q: 1, seqlen_k: 4}", "entry 0: batch: '0' is not a positive integer");
  expect_error("- {kind: decode, batch: 2, seqlen_q: 1, seqlen_k: 4k}", "seqlen_k: '4k' is not a positive integer");
  expect_error("- {kind: decode, batch: 2, seqlen_k: 4}", "entry 0: seqlen_q: missing");
  expect_error("- {kind: decode, batch: 2, seqlen_q: 1, seqlen_k: 4, pages: 3}", "pages: unknown field");
  expect_error("- {kind: decode\n", "not valid YAML");
  EXPECT_THROW(load_shapes_file("/nonexistent/shapes.yaml"), std::invalid_argument);
}

TEST(Shard, ParsesAndRejects) {
  const Shard s = parse_shard("1/4");
  EXPECT_EQ(s.index, 1);
  EXPECT_EQ(s.count, 4);
  for (const char* bad : {"4/4", "1", "a/b", "-1/3", "1/0", "/3", "1/", "1/3/4"}) {
    try {
      parse_shard(bad);
      FAIL() << "accepted " << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("--shard: '" + std::string(bad) + "'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("i/N with 0 <= i < N"), std::string::npos) << e.what();
    }
  }
}

TEST(Shard, EveryTaskInExactlyOneShard) {
  const auto tasks = sweep_tasks(preset_shapes("serving", spec()),
                                 {KernelKind::prefill, KernelKind::prefill_paged, KernelKind::decode});
  for (int n : {1, 2, 3, 5, 7, 40}) {
    std::multiset<std::uint64_t> seen;
    for (int i = 0; i < n; ++i)
      for (const auto& t : shard_tasks(tasks, {i, n})) seen.insert(t.key());
    EXPECT_EQ(seen.size(), tasks.size()) << n;
    for (const auto& t : tasks) EXPECT_EQ(seen.count(t.key()), 1u) << n << " " << t.label();
  }
}

}  // namespace
}  // namespace attnc
