// The spec id: invariant under presentation (key order, comments, style, defaults written or
// not, the name), different for anything that changes the math or the compiled code.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "generator/spec/spec_parse.h"

namespace attnc {
namespace {

std::string id_of(const std::string& yaml) { return spec_id(parse_spec(yaml, "t.yaml")); }

const std::string kBase = "version: 1\nhead_dim: 128\nnum_q_heads: 32\nnum_kv_heads: 8\n";

TEST(SpecId, SixteenHexDigits) {
  const std::string id = id_of(kBase);
  ASSERT_EQ(id.size(), 16u);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos);
}

TEST(SpecId, KeyOrderCommentsAndStyleDoNotMatter) {
  const std::string a = kBase +
                        "kv_cache: {dtype: fp8_e4m3, layout: HND, page_size: 32}\n"
                        "mask: {kind: sliding_window, left: 4095, right: 0}\n";
  const std::string b =
      "# a comment\n"
      "mask:\n"
      "  right: 0          # causal window\n"
      "  left: 4095\n"
      "  kind: sliding_window\n"
      "kv_cache:\n"
      "  page_size: 32\n"
      "  layout: HND\n"
      "  dtype: fp8_e4m3\n"
      "num_kv_heads: 8\n"
      "num_q_heads: 32\n"
      "head_dim: 128\n"
      "version: 1\n";
  EXPECT_EQ(id_of(a), id_of(b));
  EXPECT_EQ(id_of("{version: 1, head_dim: 128, num_q_heads: 32, num_kv_heads: 8}"), id_of(kBase));
}

TEST(SpecId, DefaultsWrittenOrLeftOutDoNotMatter) {
  const std::string all_defaults = kBase +
                                   "head_dim_v: 128\n"
                                   "dtype: bf16\n"
                                   "kv_cache: {dtype: same, layout: NHD, page_size: 16}\n"
                                   "mask: causal\n"
                                   "softcap: 0.0\n"
                                   "alibi: none\n"
                                   "sinks: false\n"
                                   "lse: {layout: none, base: e}\n"
                                   "quant: none\n"
                                   "mla: none\n"
                                   "block_sparse: none\n"
                                   "kernels: [prefill]\n"
                                   "tuning: {block_m: [], families: []}\n";
  EXPECT_EQ(id_of(all_defaults), id_of(kBase));
  EXPECT_EQ(id_of(kBase + "mask: {kind: causal}\nkv_cache: {}\nlse: {}\ntuning: {}\n"),
            id_of(kBase));
  // num_kv_heads defaults to num_q_heads.
  EXPECT_EQ(id_of("version: 1\nhead_dim: 64\nnum_q_heads: 12\n"),
            id_of("version: 1\nhead_dim: 64\nnum_q_heads: 12\nnum_kv_heads: 12\n"));
}

TEST(SpecId, DerivedValuesWrittenOutDoNotMatter) {
  const std::string mla =
      "version: 1\nnum_q_heads: 16\n"
      "mla: {kv_lora_rank: 512, qk_rope_head_dim: 64, qk_nope_head_dim: 128, v_head_dim: 128}\n";
  EXPECT_EQ(id_of(mla), id_of(mla + "head_dim: 192\nhead_dim_v: 128\nnum_kv_heads: 16\n"));
  EXPECT_EQ(id_of(kBase + "block_sparse: {}\n"),
            id_of(kBase + "block_sparse: {block_size: 64, local_blocks: 16, vert_stride: 8, "
                          "homo_head: false, head_sliding_step: 1, active_heads: [0, 32]}\n"));
}

TEST(SpecId, EquivalentSpellingsOfTheSameValueDoNotMatter) {
  EXPECT_EQ(id_of(kBase + "softcap: 50\n"), id_of(kBase + "softcap: 50.0\n"));
  EXPECT_EQ(id_of(kBase + "softcap: 0\n"), id_of(kBase + "softcap: -0.0\n"));
  EXPECT_EQ(id_of(kBase + "kernels: [decode, prefill]\n"),
            id_of(kBase + "kernels: [prefill, decode]\n"));
  EXPECT_EQ(
      id_of(kBase + "tuning: {block_m: [128, 64], families: [decode_split, prefill_sm80]}\n"),
      id_of(kBase + "tuning: {block_m: [64, 128], families: [prefill_sm80, decode_split]}\n"));
  EXPECT_EQ(id_of(kBase + "lse: {layout: none, base: 2}\n"), id_of(kBase));  // no LSE: base unused
  EXPECT_EQ(id_of(kBase + "sinks: True\n"), id_of(kBase + "sinks: true\n"));
}

TEST(SpecId, NameIsNotPartOfTheId) {
  EXPECT_EQ(id_of(kBase + "name: a\n"), id_of(kBase + "name: something else entirely\n"));
  const Spec s = parse_spec(kBase + "name: secret-name\n", "t.yaml");
  EXPECT_EQ(canonical_form(s).find("secret-name"), std::string::npos);
  EXPECT_NE(to_yaml(s).find("secret-name"), std::string::npos);
}

TEST(SpecId, EveryChangeToTheMathOrTheCodeChangesIt) {
  // Each variant differs from kBase in one thing; all ids must differ from each other.
  const std::vector<std::pair<std::string, std::string>> variants = {
      {"base", kBase},
      {"head_dim", "version: 1\nhead_dim: 64\nnum_q_heads: 32\nnum_kv_heads: 8\n"},
      {"head_dim_v", kBase + "head_dim_v: 64\n"},
      {"num_q_heads", "version: 1\nhead_dim: 128\nnum_q_heads: 16\nnum_kv_heads: 8\n"},
      {"num_kv_heads", "version: 1\nhead_dim: 128\nnum_q_heads: 32\nnum_kv_heads: 4\n"},
      {"dtype", kBase + "dtype: fp16\n"},
      {"kv_dtype", kBase + "kv_cache: {dtype: fp8_e4m3}\n"},
      {"kv_dtype_e5m2", kBase + "kv_cache: {dtype: fp8_e5m2}\n"},
      {"layout", kBase + "kv_cache: {layout: HND}\n"},
      {"page_size", kBase + "kv_cache: {page_size: 32}\n"},
      {"mask_none", kBase + "mask: none\n"},
      {"window", kBase + "mask: {kind: sliding_window, left: 4095, right: 0}\n"},
      {"window_left", kBase + "mask: {kind: sliding_window, left: 127, right: 0}\n"},
      {"window_right", kBase + "mask: {kind: sliding_window, left: 127, right: 127}\n"},
      {"softcap", kBase + "softcap: 50\n"},
      {"softcap_other", kBase + "softcap: 30\n"},
      {"alibi", kBase + "alibi: linear\n"},
      {"alibi_sqrt", kBase + "alibi: sqrt\n"},
      {"sinks", kBase + "sinks: true\n"},
      {"lse", kBase + "lse: {layout: head_major}\n"},
      {"lse_token", kBase + "lse: {layout: token_major}\n"},
      {"lse_base", kBase + "lse: {layout: head_major, base: 2}\n"},
      {"quant_fp8", kBase + "quant: fp8\nkv_cache: {dtype: fp8_e4m3}\n"},
      {"quant_int8_qkv", kBase + "quant: int8_qkv\nkv_cache: {dtype: int8}\n"},
      {"quant_int8_qk", kBase + "quant: int8_qk\nkv_cache: {dtype: int8}\n"},
      {"mla",
       "version: 1\nnum_q_heads: 32\nmla: {kv_lora_rank: 512, qk_rope_head_dim: 64, "
       "qk_nope_head_dim: 128, v_head_dim: 128}\n"},
      {"mla_rank",
       "version: 1\nnum_q_heads: 32\nmla: {kv_lora_rank: 256, qk_rope_head_dim: 64, "
       "qk_nope_head_dim: 128, v_head_dim: 128}\n"},
      {"sparse", kBase + "block_sparse: {}\n"},
      {"sparse_block", kBase + "block_sparse: {block_size: 128}\n"},
      {"sparse_local", kBase + "block_sparse: {local_blocks: 4}\n"},
      {"sparse_stride", kBase + "block_sparse: {vert_stride: 4}\n"},
      {"sparse_homo", kBase + "block_sparse: {homo_head: true}\n"},
      {"sparse_step", kBase + "block_sparse: {head_sliding_step: 3}\n"},
      {"sparse_rank", kBase + "block_sparse: {active_heads: [32, 64], head_sliding_step: 1}\n"},
      {"kernels", kBase + "kernels: [prefill, decode]\n"},
      {"kernels_merge", kBase + "kernels: [prefill, merge]\n"},
      {"kernels_write", kBase + "kernels: [cache_write]\n"},
      {"tuning_block_m", kBase + "tuning: {block_m: [64]}\n"},
      {"tuning_block_n", kBase + "tuning: {block_n: [64]}\n"},
      {"tuning_warps", kBase + "tuning: {warps: [4]}\n"},
      {"tuning_stages", kBase + "tuning: {stages: [2]}\n"},
      {"tuning_splits", kBase + "tuning: {splits: [1]}\n"},
      {"tuning_family", kBase + "tuning: {families: [prefill_sm90]}\n"},
  };
  std::map<std::string, std::string> seen;  // id -> variant
  for (const auto& [what, yaml] : variants) {
    const std::string id = id_of(yaml);
    const auto [it, fresh] = seen.emplace(id, what);
    EXPECT_TRUE(fresh) << what << " has the same id as " << it->second;
  }
}

TEST(SpecId, CanonicalFormIsPinned) {
  // Ids key the kernel and tuning caches: a change here invalidates every stored record, so it
  // must be deliberate (bump `version` in the schema if the meaning changes).
  const Spec s = load_spec(ATTNC_SOURCE_DIR "/specs/llama-3-8b.yaml");
  EXPECT_EQ(
      canonical_form(s),
      "version: 1\n"
      "head_dim: 128\n"
      "head_dim_v: 128\n"
      "num_q_heads: 32\n"
      "num_kv_heads: 8\n"
      "dtype: bf16\n"
      "kv_cache: {dtype: same, layout: NHD, page_size: 16}\n"
      "mask: causal\n"
      "softcap: 0\n"
      "alibi: none\n"
      "sinks: false\n"
      "lse: {layout: head_major, base: e}\n"
      "quant: none\n"
      "mla: none\n"
      "block_sparse: none\n"
      "kernels: [prefill, decode, merge, cache_write]\n"
      "tuning: {block_m: [], block_n: [], warps: [], stages: [], splits: [], families: []}\n");
}

TEST(SpecId, CanonicalFormRoundTripsThroughParse) {
  for (const auto& e : std::filesystem::directory_iterator(ATTNC_SOURCE_DIR "/specs")) {
    if (e.path().extension() != ".yaml") continue;
    SCOPED_TRACE(e.path().string());
    const Spec s = load_spec(e.path().string());
    const std::string canon = canonical_form(s);
    const Spec back = parse_spec(canon, e.path().string());
    EXPECT_EQ(canonical_form(back), canon);
    EXPECT_EQ(spec_id(back), spec_id(s));
    Spec unnamed = s;
    unnamed.name = back.name;  // the canonical form has no name
    EXPECT_EQ(back, unnamed);
  }
}

TEST(SpecId, ShippedSpecsHaveDistinctIds) {
  std::map<std::string, std::string> seen;
  for (const auto& e : std::filesystem::directory_iterator(ATTNC_SOURCE_DIR "/specs")) {
    if (e.path().extension() != ".yaml") continue;
    const auto [it, fresh] = seen.emplace(spec_id(load_spec(e.path().string())), e.path().string());
    EXPECT_TRUE(fresh) << e.path() << " and " << it->second;
  }
}

TEST(SpecId, SpecBuiltInCodeMatchesTheParsedOne) {
  // The planner's tests build Specs directly; the sentinels in spec.h must resolve the same way.
  Spec s;
  s.head_dim = 128;
  s.head_dim_v = 128;
  s.num_q_heads = 32;
  s.num_kv_heads = 8;
  s.sparse.enabled = true;  // active_head_end -1 and head_sliding_step 0: derived
  EXPECT_EQ(spec_id(s), id_of(kBase + "block_sparse: {}\n"));

  Spec m;
  m.num_q_heads = 16;
  m.mla = MlaSpec{true, 512, 64, 128, 128};  // head dims and kv heads left at the defaults
  EXPECT_EQ(spec_id(m), id_of("version: 1\nnum_q_heads: 16\nmla: {kv_lora_rank: 512, "
                              "qk_rope_head_dim: 64, qk_nope_head_dim: 128, v_head_dim: 128}\n"));
}

}  // namespace
}  // namespace attnc
