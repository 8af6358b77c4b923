// Good specs: defaults, derived values, every field, and every shipped spec under specs/.
#include "generator/spec/spec_parse.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

namespace attnc {
namespace {

std::vector<std::filesystem::path> shipped_specs() {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::directory_iterator(ATTNC_SOURCE_DIR "/specs"))
    if (e.path().extension() == ".yaml") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

Spec shipped(const std::string& stem) {
  return load_spec(ATTNC_SOURCE_DIR "/specs/" + stem + ".yaml");
}

TEST(SpecParse, MinimalSpecGetsDefaults) {
  const Spec s = parse_spec("version: 1\nhead_dim: 64\nnum_q_heads: 12\n", "min.yaml");
  EXPECT_EQ(s.version, 1);
  EXPECT_EQ(s.name, "min");  // from the file name
  EXPECT_EQ(s.head_dim, 64);
  EXPECT_EQ(s.head_dim_v, 64);    // = head_dim
  EXPECT_EQ(s.num_kv_heads, 12);  // = num_q_heads
  EXPECT_EQ(s.group_size(), 1);
  EXPECT_EQ(s.dtype, DType::bf16);
  EXPECT_EQ(s.kv_cache, KvCacheSpec{});
  EXPECT_EQ(s.mask.kind, MaskKind::causal);
  EXPECT_EQ(s.softcap, 0.0f);
  EXPECT_EQ(s.alibi, Alibi::none);
  EXPECT_FALSE(s.sinks);
  EXPECT_EQ(s.lse, LseSpec{});
  EXPECT_EQ(s.quant, QuantMode::none);
  EXPECT_FALSE(s.mla.enabled);
  EXPECT_FALSE(s.sparse.enabled);
  EXPECT_EQ(s.kernels, (KernelSet{true, false, false, false}));
  EXPECT_EQ(s.tuning, TuningSpaceSpec{});
}

TEST(SpecParse, EveryFieldWritten) {
  const Spec s = parse_spec(R"(
version: 1
name: "every field"
head_dim: 128
head_dim_v: 64
num_q_heads: 32
num_kv_heads: 4
dtype: fp16
kv_cache: {dtype: fp8_e5m2, layout: HND, page_size: 32}
mask: {kind: sliding_window, left: 1023, right: 16}
softcap: 30.5
alibi: sqrt
sinks: true
lse: {layout: token_major, base: 2}
quant: fp8
kernels: [cache_write, decode, merge]
tuning:
  block_m: [128, 64]
  block_n: [64]
  warps: [8, 4]
  stages: [3, 2]
  splits: [4, 1, 2]
  families: [decode_split, prefill_sm80]
)",
                            "every.yaml");
  EXPECT_EQ(s.name, "every field");
  EXPECT_EQ(s.head_dim, 128);
  EXPECT_EQ(s.head_dim_v, 64);
  EXPECT_EQ(s.group_size(), 8);
  EXPECT_EQ(s.dtype, DType::fp16);
  EXPECT_EQ(s.kv_cache, (KvCacheSpec{KvDType::fp8_e5m2, KvLayout::HND, 32}));
  EXPECT_EQ(s.mask, (MaskSpec{MaskKind::sliding_window, 1023, 16}));
  EXPECT_FLOAT_EQ(s.softcap, 30.5f);
  EXPECT_EQ(s.alibi, Alibi::sqrt);
  EXPECT_TRUE(s.sinks);
  EXPECT_EQ(s.lse, (LseSpec{LseLayout::token_major, LseBase::two}));
  EXPECT_EQ(s.quant, QuantMode::fp8);
  EXPECT_EQ(s.kernels, (KernelSet{false, true, true, true}));
  // Search spaces are sets: stored sorted.
  EXPECT_EQ(s.tuning.block_m, (std::vector<int>{64, 128}));
  EXPECT_EQ(s.tuning.warps, (std::vector<int>{4, 8}));
  EXPECT_EQ(s.tuning.splits, (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(s.tuning.families, (std::vector<std::string>{"prefill_sm80", "decode_split"}));
}

TEST(SpecParse, QuotedEnumsAndYamlBooleansRead) {
  const Spec s = parse_spec(
      "version: 1\nhead_dim: 128\nnum_q_heads: 8\ndtype: \"fp16\"\nsinks: True\n"
      "mask: {kind: 'none'}\n",
      "q.yaml");
  EXPECT_EQ(s.dtype, DType::fp16);
  EXPECT_TRUE(s.sinks);
  EXPECT_EQ(s.mask.kind, MaskKind::none);
}

TEST(SpecParse, MlaDerivesHeadDimsAndHeads) {
  const Spec s = parse_spec(
      "version: 1\nnum_q_heads: 16\n"
      "mla: {kv_lora_rank: 512, qk_rope_head_dim: 64, qk_nope_head_dim: 128, v_head_dim: 128}\n",
      "mla.yaml");
  EXPECT_TRUE(s.mla.enabled);
  EXPECT_EQ(s.head_dim, 192);
  EXPECT_EQ(s.head_dim_v, 128);
  EXPECT_EQ(s.num_kv_heads, 16);
  // Written and consistent is fine too.
  const Spec t = parse_spec(
      "version: 1\nnum_q_heads: 16\nnum_kv_heads: 16\nhead_dim: 192\nhead_dim_v: 128\n"
      "mla: {kv_lora_rank: 512, qk_rope_head_dim: 64, qk_nope_head_dim: 128, v_head_dim: 128}\n",
      "mla.yaml");
  EXPECT_EQ(s, t);
}

TEST(SpecParse, BlockSparseResolvesHeadRangeAndStep) {
  const Spec s = parse_spec(
      "version: 1\nhead_dim: 128\nnum_q_heads: 32\nnum_kv_heads: 8\nblock_sparse: {}\n", "bs.yaml");
  EXPECT_TRUE(s.sparse.enabled);
  EXPECT_EQ(s.sparse.block_size, 64);  // Phi-3-small's pattern by default
  EXPECT_EQ(s.sparse.local_blocks, 16);
  EXPECT_EQ(s.sparse.vert_stride, 8);
  EXPECT_EQ(s.sparse.active_head_begin, 0);
  EXPECT_EQ(s.sparse.active_head_end, 32);
  EXPECT_EQ(s.sparse.head_sliding_step, 1);  // max(1, 8 / 32)

  const Spec wide = parse_spec(
      "version: 1\nhead_dim: 128\nnum_q_heads: 4\nblock_sparse: {vert_stride: 16}\n", "bs.yaml");
  EXPECT_EQ(wide.sparse.head_sliding_step, 4);  // 16 / 4

  const Spec homo = parse_spec(
      "version: 1\nhead_dim: 128\nnum_q_heads: 4\nblock_sparse: {homo_head: true}\n", "bs.yaml");
  EXPECT_EQ(homo.sparse.head_sliding_step, 0);

  // One tensor-parallel rank: the head range and step are given.
  const Spec rank = parse_spec(
      "version: 1\nhead_dim: 128\nnum_q_heads: 8\n"
      "block_sparse: {active_heads: [8, 16], head_sliding_step: 2}\n",
      "bs.yaml");
  EXPECT_EQ(rank.sparse.active_head_begin, 8);
  EXPECT_EQ(rank.sparse.active_head_end, 16);
  EXPECT_EQ(rank.sparse.head_sliding_step, 2);
}

TEST(SpecParse, NoneDisablesOptionalSections) {
  const Spec s = parse_spec(
      "version: 1\nhead_dim: 128\nnum_q_heads: 8\nmla: none\nblock_sparse: none\n", "x.yaml");
  EXPECT_FALSE(s.mla.enabled);
  EXPECT_FALSE(s.sparse.enabled);
}

TEST(SpecParse, AnyDivisorIsAGroupSize) {
  const Spec s =
      parse_spec("version: 1\nhead_dim: 128\nnum_q_heads: 28\nnum_kv_heads: 4\n", "q.yaml");
  EXPECT_EQ(s.group_size(), 7);
}

TEST(SpecParse, LseBaseIsNormalisedWithoutAnLse) {
  const Spec s =
      parse_spec("version: 1\nhead_dim: 128\nnum_q_heads: 8\nlse: {base: 2}\n", "x.yaml");
  EXPECT_EQ(s.lse.base, LseBase::e);  // no LSE is written, so its base cannot matter
}

TEST(SpecParse, NameIsKeptAsWrittenOrTakenFromTheFile) {
  EXPECT_EQ(
      parse_spec("version: 1\nhead_dim: 8\nnum_q_heads: 1\nname: 'a: b # c'\n", "f.yaml").name,
      "a: b # c");
  EXPECT_EQ(parse_spec("version: 1\nhead_dim: 8\nnum_q_heads: 1\n", "dir/my-model.yml").name,
            "my-model");
  EXPECT_EQ(parse_spec("version: 1\nhead_dim: 8\nnum_q_heads: 1\n", "<stdin>").name, "");
}

TEST(SpecParse, EveryShippedSpecParses) {
  const auto files = shipped_specs();
  EXPECT_GE(files.size(), 12u);
  for (const auto& f : files) {
    SCOPED_TRACE(f.string());
    Spec s;
    ASSERT_NO_THROW(s = load_spec(f.string())) << f;
    EXPECT_EQ(s.name, f.stem().string()) << "the name should match the file name";
    EXPECT_EQ(parse_spec(to_yaml(s), f.string()), s) << to_yaml(s);
  }
}

TEST(SpecParse, ShippedSpecsSayWhatTheModelsAre) {
  const Spec llama = shipped("llama-3-8b");
  EXPECT_EQ(llama.group_size(), 4);
  EXPECT_EQ(llama.kernels, (KernelSet{true, true, true, true}));

  EXPECT_EQ(shipped("qwen2-7b").group_size(), 7);

  const Spec mistral = shipped("mistral-7b");
  EXPECT_EQ(mistral.mask, (MaskSpec{MaskKind::sliding_window, 4095, 0}));

  const Spec gemma = shipped("gemma-2-9b");
  EXPECT_EQ(gemma.head_dim, 256);
  EXPECT_FLOAT_EQ(gemma.softcap, 50.0f);
  EXPECT_EQ(gemma.mask.window_left, 4095);

  const Spec oss = shipped("gpt-oss-20b");
  EXPECT_TRUE(oss.sinks);
  EXPECT_EQ(oss.head_dim, 64);
  EXPECT_EQ(oss.mask.window_left, 127);

  EXPECT_EQ(shipped("bloom-7b1").alibi, Alibi::linear);
  EXPECT_EQ(shipped("step-sqrt-alibi").alibi, Alibi::sqrt);

  const Spec ds = shipped("deepseek-v3");
  EXPECT_TRUE(ds.mla.enabled);
  EXPECT_EQ(ds.head_dim, 192);
  EXPECT_EQ(ds.head_dim_v, 128);
  EXPECT_EQ(ds.mla.kv_lora_rank + ds.mla.qk_rope_head_dim, 576);
  EXPECT_EQ(ds.num_kv_heads, ds.num_q_heads);

  const Spec phi = shipped("phi-3-small");
  EXPECT_TRUE(phi.sparse.enabled);
  EXPECT_EQ(phi.sparse.block_size, 64);
  EXPECT_EQ(phi.sparse.local_blocks, 16);
  EXPECT_EQ(phi.sparse.vert_stride, 8);

  for (const char* name : {"int8-qkv", "int8-qk"}) {
    const Spec q = shipped(name);
    EXPECT_EQ(q.kv_cache.dtype, KvDType::int8) << name;
    EXPECT_EQ(q.kv_cache.layout, KvLayout::HND) << name;
  }
  EXPECT_EQ(shipped("int8-qkv").quant, QuantMode::int8_qkv);
  EXPECT_EQ(shipped("int8-qk").quant, QuantMode::int8_qk);

  const Spec bert = shipped("bert-base");
  EXPECT_EQ(bert.mask.kind, MaskKind::none);
  EXPECT_EQ(bert.kernels, (KernelSet{true, false, false, false}));
}

TEST(SpecParse, EnumSpellingsRoundTrip) {
  auto check = [](auto e, auto from) {
    for (const char* n : enum_names(e)) {
      const auto v = from(n);
      ASSERT_TRUE(v.has_value()) << n;
      EXPECT_STREQ(to_string(*v), n);
    }
    EXPECT_FALSE(from("nonsense").has_value());
  };
  check(DType{}, dtype_from_string);
  check(KvDType{}, kv_dtype_from_string);
  check(KvLayout{}, kv_layout_from_string);
  check(MaskKind{}, mask_kind_from_string);
  check(Alibi{}, alibi_from_string);
  check(LseLayout{}, lse_layout_from_string);
  check(LseBase{}, lse_base_from_string);
  check(QuantMode{}, quant_from_string);
  EXPECT_STREQ(to_string(LseBase::two), "2");
  EXPECT_EQ(kernel_list(KernelSet{true, false, true, false}),
            (std::vector<std::string>{"prefill", "merge"}));
}

TEST(SpecParse, ToYamlQuotesAwkwardNames) {
  Spec s = parse_spec("version: 1\nhead_dim: 8\nnum_q_heads: 1\n", "x.yaml");
  s.name = "tab\there \"quoted\" back\\slash: # not a comment";
  EXPECT_EQ(parse_spec(to_yaml(s), "x.yaml").name, s.name);
}

TEST(SpecLoad, UnreadableFileNamesThePath) {
  try {
    load_spec("/nonexistent/dir/model.yaml");
    FAIL() << "expected SpecError";
  } catch (const SpecError& e) {
    ASSERT_EQ(e.diagnostics().size(), 1u);
    EXPECT_EQ(std::string(e.what()),
              "/nonexistent/dir/model.yaml: error: cannot read the spec file: No such file or "
              "directory");
  }
  try {
    load_spec(ATTNC_SOURCE_DIR "/specs");
    FAIL() << "expected SpecError";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
  }
}

TEST(SpecDiagnostic, Format) {
  EXPECT_EQ((Diagnostic{"a.yaml", 3, 14, "num_kv_heads", "bad"}).str(),
            "a.yaml:3:14: error: num_kv_heads: bad");
  EXPECT_EQ((Diagnostic{"a.yaml", 2, 1, "", "YAML syntax error: x"}).str(),
            "a.yaml:2:1: error: YAML syntax error: x");
  EXPECT_EQ((Diagnostic{"a.yaml", 0, 0, "", "cannot read"}).str(), "a.yaml: error: cannot read");
  const SpecError e({{"f", 1, 1, "a", "x"}, {"f", 2, 5, "b", "y"}});
  EXPECT_STREQ(e.what(), "f:1:1: error: a: x\nf:2:5: error: b: y");
}

}  // namespace
}  // namespace attnc
