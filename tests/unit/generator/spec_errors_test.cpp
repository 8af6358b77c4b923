// Bad specs: each must fail with a message that names file:line:col, the field, and what is
// allowed. Table-driven: one row per mistake a user could make.
#include <gtest/gtest.h>

#include "generator/spec/spec_parse.h"

namespace attnc {
namespace {

// Lines 1-3 of most cases; the mistake is on line 4 or later.
const std::string B = "version: 1\nhead_dim: 128\nnum_q_heads: 32\n";
const std::string MLA =
    "mla: {kv_lora_rank: 512, qk_rope_head_dim: 64, qk_nope_head_dim: 128, v_head_dim: 128}\n";

struct Case {
  const char* name;
  std::string yaml;
  std::vector<std::string> expect;  // each must appear in what()
  int count = 1;                    // number of diagnostics; 0 = do not check
};

// Test names instead of gtest's byte dump.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::string errors_of(const std::string& yaml, std::size_t* count = nullptr) {
  try {
    parse_spec(yaml, "bad.yaml");
  } catch (const SpecError& e) {
    if (count) *count = e.diagnostics().size();
    return e.what();
  }
  return "<no error>";
}

const Case kCases[] = {
    // --- the file as a whole
    {"syntax",
     "version: 1\nhead_dim: [1, 2\nnum_q_heads: 32\n",
     {"bad.yaml:3:12: error: YAML syntax error: end of sequence flow not found"}},
    {"tab",
     "version: 1\n\thead_dim: 128\n",
     {"bad.yaml:2:1: error: YAML syntax error: ", "tabs cannot indent YAML; use spaces"}},
    {"tab_inside_the_line_gets_no_tab_hint",
     "version: 1\nname: \"a\tb\\q\"\n",
     {"bad.yaml:2:", "error: YAML syntax error: unknown escape character: q"}},
    {"empty", "", {"bad.yaml:1:1: error: empty spec; a spec is a mapping"}},
    {"only_comments", "# nothing here\n\n", {"bad.yaml:1:1: error: empty spec"}},
    {"top_list",
     "- version: 1\n",
     {"bad.yaml:1:1: error: the top level must be a mapping of fields", "got a list"}},
    {"top_scalar",
     "llama\n",
     {"bad.yaml:1:1: error: the top level must be a mapping", "got 'llama'"}},
    {"two_documents",
     B + "---\n" + B,
     {"bad.yaml:5:1: error: a second YAML document; a spec file holds exactly one"}},
    // --- version
    {"version_missing",
     "head_dim: 128\nnum_q_heads: 32\n",
     {"bad.yaml:1:1: error: version: missing; a spec starts with `version: 1`"}},
    {"version_2",
     "version: 2\nhead_dim: 128\nnum_q_heads: 32\n",
     {"bad.yaml:1:10: error: version: 2 is not supported (this attnc reads spec version 1); "
      "allowed: 1"}},
    {"version_quoted",
     "version: \"1\"\nhead_dim: 128\nnum_q_heads: 32\n",
     {"bad.yaml:1:10: error: version: expected an integer, got the string \"1\""}},
    // --- keys
    {"unknown_top_key_suggests",
     B + "head_dimm: 64\n",
     {"bad.yaml:4:1: error: head_dimm: unknown field; did you mean 'head_dim'? allowed: version, "
      "name, head_dim,"}},
    {"misspelt_required_is_not_also_missing",
     "version: 1\nhead_dimm: 128\nnum_q_heads: 32\n",
     {"bad.yaml:2:1: error: head_dimm: unknown field; did you mean 'head_dim'?"}},
    {"unknown_top_key_no_suggestion",
     B + "flash: yes\n",
     {"bad.yaml:4:1: error: flash: unknown field; allowed: version, name, head_dim, head_dim_v, "
      "num_q_heads, num_kv_heads, dtype, kv_cache, mask, softcap, alibi, sinks, lse, quant, mla, "
      "block_sparse, kernels, tuning"}},
    {"unknown_nested_key",
     B + "kv_cache: {pagesize: 16}\n",
     {"bad.yaml:4:12: error: kv_cache.pagesize: unknown field; did you mean 'page_size'? allowed: "
      "dtype, layout, page_size"}},
    {"duplicate_key",
     B + "head_dim: 64\n",
     {"bad.yaml:4:1: error: head_dim: duplicate field (first written at 2:1); write each field "
      "once"}},
    // --- heads and head dims
    {"num_q_heads_missing",
     "version: 1\nhead_dim: 128\n",
     {"bad.yaml:1:1: error: num_q_heads: missing; every spec gives its number of query heads "
      "(1..65535)"}},
    {"num_q_heads_zero",
     "version: 1\nhead_dim: 128\nnum_q_heads: 0\n",
     {"bad.yaml:3:14: error: num_q_heads: 0 is out of range; allowed: 1..65535"}},
    {"num_kv_heads_not_divisor",
     B + "num_kv_heads: 5\n",
     {"bad.yaml:4:15: error: num_kv_heads: 5 does not divide num_q_heads (32)",
      "allowed: a divisor of 32: 1, 2, 4, 8, 16, 32"}},
    {"head_dim_missing",
     "version: 1\nnum_q_heads: 32\n",
     {"bad.yaml:1:1: error: head_dim: missing; allowed: a multiple of 8 in 8..256"}},
    {"head_dim_not_multiple_of_8",
     "version: 1\nhead_dim: 100\nnum_q_heads: 32\n",
     {"bad.yaml:2:11: error: head_dim: 100 is not a multiple of 8; allowed: a multiple of 8 in "
      "8..256"}},
    {"head_dim_too_large",
     "version: 1\nhead_dim: 512\nnum_q_heads: 32\n",
     {"bad.yaml:2:11: error: head_dim: 512 is out of range; allowed: a multiple of 8 in 8..256 "
      "(larger QK dims only through mla)"}},
    {"head_dim_past_int",
     "version: 1\nhead_dim: 2147483648\nnum_q_heads: 32\n",
     {"bad.yaml:2:11: error: head_dim: 2147483648 is out of range; allowed: a multiple of 8 in "
      "8..256 (larger QK dims only through mla)"}},
    {"head_dim_past_long_long",
     "version: 1\nhead_dim: -99999999999999999999\nnum_q_heads: 32\n",
     {"bad.yaml:2:11: error: head_dim: -99999999999999999999 is out of range; allowed: a multiple "
      "of 8 in 8..256"}},
    {"head_dim_v_past_int",
     B + "head_dim_v: 4294967296\n",
     {"bad.yaml:4:13: error: head_dim_v: 4294967296 is out of range; allowed: a multiple of 8 in "
      "8..256"}},
    {"num_q_heads_past_long_long",
     "version: 1\nhead_dim: 128\nnum_q_heads: 99999999999999999999\n",
     {"bad.yaml:3:14: error: num_q_heads: 99999999999999999999 is out of range; allowed: "
      "1..65535"}},
    {"head_dim_tagged_str",
     "version: 1\nhead_dim: !!str 128\nnum_q_heads: 32\n",
     {"bad.yaml:2:11: error: head_dim: expected an integer, got '128' tagged as a string (!!str)"}},
    {"sinks_tagged_int",
     B + "sinks: !!int 1\n",
     {"bad.yaml:4:8: error: sinks: expected true or false, got '1' tagged as an integer (!!int)"}},
    {"head_dim_custom_tag",
     "version: 1\nhead_dim: !dim 128\nnum_q_heads: 32\n",
     {"bad.yaml:2:11: error: head_dim: expected an integer, got '128' tagged !dim"}},
    {"head_dim_not_integer",
     "version: 1\nhead_dim: abc\nnum_q_heads: 32\n",
     {"bad.yaml:2:11: error: head_dim: expected an integer, got 'abc'"}},
    {"head_dim_float",
     "version: 1\nhead_dim: 1.5\nnum_q_heads: 32\n",
     {"bad.yaml:2:11: error: head_dim: expected an integer, got '1.5'"}},
    {"head_dim_empty",
     "version: 1\nhead_dim:\nnum_q_heads: 32\n",
     {"bad.yaml:2:1: error: head_dim: expected an integer, got nothing"}},
    {"head_dim_v_bad",
     B + "head_dim_v: 12\n",
     {"bad.yaml:4:13: error: head_dim_v: 12 is not a multiple of 8"}},
    // --- dtypes and cache
    {"dtype_typo",
     B + "dtype: bf32\n",
     {"bad.yaml:4:8: error: dtype: unknown value 'bf32'; did you mean 'bf16'? allowed: bf16, "
      "fp16"}},
    {"layout_case",
     B + "kv_cache: {layout: nhd}\n",
     {"bad.yaml:4:20: error: kv_cache.layout: unknown value 'nhd'; did you mean 'NHD'? allowed: "
      "NHD, HND"}},
    {"page_size_odd",
     B + "kv_cache: {page_size: 24}\n",
     {"bad.yaml:4:23: error: kv_cache.page_size: 24 is neither a power of two nor a multiple of "
      "16; allowed: 1..1024, a power of two or a multiple of 16"}},
    {"page_size_too_large",
     B + "kv_cache: {page_size: 2048}\n",
     {"bad.yaml:4:23: error: kv_cache.page_size: 2048 is out of range; allowed: 1..1024"}},
    {"kv_cache_not_mapping",
     B + "kv_cache: 16\n",
     {"bad.yaml:4:11: error: kv_cache: expected a mapping such as {dtype: same, layout: NHD, "
      "page_size: 16}, got '16'"}},
    // --- mask
    {"mask_typo",
     B + "mask: causl\n",
     {"bad.yaml:4:7: error: mask: unknown value 'causl'; did you mean 'causal'? allowed: none, "
      "causal, sliding_window"}},
    {"mask_window_without_sides",
     B + "mask: sliding_window\n",
     {"bad.yaml:4:7: error: mask: sliding_window needs its window sides; allowed: a mapping such "
      "as {kind: sliding_window, left: 4095, right: 0}"}},
    {"mask_side_on_causal",
     B + "mask: {kind: causal, left: 3}\n",
     {"bad.yaml:4:28: error: mask.left: only allowed with kind: sliding_window (kind is causal)"}},
    {"mask_window_unbounded",
     B + "mask: {kind: sliding_window, left: -1, right: -1}\n",
     {"bad.yaml:4:7: error: mask: a window unbounded on both sides masks nothing; allowed: at "
      "least one of left, right >= 0"}},
    {"mask_right_missing",
     B + "mask: {kind: sliding_window, left: 4095}\n",
     {"bad.yaml:4:7: error: mask.right: missing; a sliding window needs both sides"}},
    {"mask_left_below_minus_one",
     B + "mask: {kind: sliding_window, left: -2, right: 0}\n",
     {"bad.yaml:4:36: error: mask.left: -2 is out of range; allowed: -1 (unbounded) or a number of "
      "tokens >= 0"}},
    {"mask_kind_missing",
     B + "mask: {left: 5, right: 0}\n",
     {"bad.yaml:4:7: error: mask.kind: missing; allowed: none, causal, sliding_window"}},
    // --- score transforms
    {"softcap_negative",
     B + "softcap: -1\n",
     {"bad.yaml:4:10: error: softcap: -1 is negative; allowed: 0 (off) or a finite number > 0"}},
    {"softcap_nan",
     B + "softcap: .nan\n",
     {"bad.yaml:4:10: error: softcap: '.nan' is not a finite number"}},
    {"softcap_text",
     B + "softcap: high\n",
     {"bad.yaml:4:10: error: softcap: expected a number, got 'high'"}},
    {"alibi_typo",
     B + "alibi: sqr\n",
     {"bad.yaml:4:8: error: alibi: unknown value 'sqr'; did you mean 'sqrt'? allowed: none, "
      "linear, sqrt"}},
    {"sinks_not_bool",
     B + "sinks: yes\n",
     {"bad.yaml:4:8: error: sinks: expected true or false, got 'yes'"}},
    {"lse_layout_typo",
     B + "lse: {layout: head_majr}\n",
     {"bad.yaml:4:15: error: lse.layout: unknown value 'head_majr'; did you mean 'head_major'? "
      "allowed: none, head_major, token_major"}},
    {"lse_base_bad",
     B + "lse: {base: 10}\n",
     {"bad.yaml:4:13: error: lse.base: unknown value '10'; allowed: e, 2"}},
    // --- quantisation
    {"int8_quant_fp8_cache",
     B + "quant: int8_qkv\nkv_cache: {dtype: fp8_e4m3}\n",
     {"bad.yaml:4:8: error: quant: int8_qkv stores K and V in the cache as int8 with scales",
      "but kv_cache.dtype is fp8_e4m3; allowed: kv_cache.dtype: int8 with quant int8_qkv"}},
    {"int8_cache_without_quant",
     B + "kv_cache: {dtype: int8}\n",
     {"bad.yaml:4:19: error: kv_cache.dtype: int8 needs the scales of an int8 quant mode",
      "but quant is none; allowed: quant: int8_qkv or int8_qk with an int8 cache"}},
    {"fp8_quant_same_cache",
     B + "quant: fp8\n",
     {"bad.yaml:4:8: error: quant: fp8 reads an fp8 KV cache with descales",
      "but kv_cache.dtype is same; allowed: kv_cache.dtype fp8_e4m3 or fp8_e5m2"}},
    {"sinks_with_int8",
     B + "quant: int8_qk\nkv_cache: {dtype: int8}\nsinks: true\n",
     {"bad.yaml:6:8: error: sinks: not supported with quant: int8_qk",
      "allowed: sinks: false with an int8 quant mode"}},
    // --- MLA
    {"mla_head_dim_mismatch",
     "version: 1\nnum_q_heads: 16\nhead_dim: 128\n" + MLA,
     {"bad.yaml:3:11: error: head_dim: 128 does not match mla: qk_nope_head_dim + "
      "qk_rope_head_dim = 128 + 64 = 192; allowed: 192 or leave head_dim out"}},
    {"mla_head_dim_v_mismatch",
     "version: 1\nnum_q_heads: 16\nhead_dim_v: 64\n" + MLA,
     {"bad.yaml:3:13: error: head_dim_v: 64 does not match mla.v_head_dim (128)"}},
    {"mla_gqa",
     "version: 1\nnum_q_heads: 16\nnum_kv_heads: 8\n" + MLA,
     {"bad.yaml:3:15: error: num_kv_heads: 8 differs from num_q_heads (16); MLA prefill is "
      "multi-head attention",
      "allowed: 16 or leave num_kv_heads out"}},
    {"mla_field_missing",
     "version: 1\nnum_q_heads: 16\nmla: {kv_lora_rank: 512, qk_rope_head_dim: 64, "
     "qk_nope_head_dim: 128}\n",
     {"bad.yaml:3:6: error: mla.v_head_dim: missing; MLA needs all four dims; allowed: a multiple "
      "of 8 in 8..256"}},
    {"mla_rank_too_large",
     "version: 1\nnum_q_heads: 16\nmla: {kv_lora_rank: 2048, "
     "qk_rope_head_dim: 64, qk_nope_head_dim: 128, v_head_dim: 128}\n",
     {"bad.yaml:3:21: error: mla.kv_lora_rank: 2048 is out of range; allowed: a multiple of 8 in "
      "8..1024"}},
    {"mla_rank_not_multiple",
     "version: 1\nnum_q_heads: 16\nmla: {kv_lora_rank: 500, "
     "qk_rope_head_dim: 64, qk_nope_head_dim: 128, v_head_dim: 128}\n",
     {"bad.yaml:3:21: error: mla.kv_lora_rank: 500 is not a multiple of 8"}},
    {"mla_not_mapping",
     "version: 1\nnum_q_heads: 16\nmla: yes\n",
     {"bad.yaml:3:6: error: mla: expected a mapping such as {kv_lora_rank: 512,", "got 'yes'"}},
    {"mla_alibi",
     "version: 1\nnum_q_heads: 16\nalibi: linear\n" + MLA,
     {"bad.yaml:3:8: error: alibi: linear cannot combine with mla",
      "allowed: alibi: none with mla"}},
    {"mla_int8",
     "version: 1\nnum_q_heads: 16\nquant: int8_qkv\nkv_cache: {dtype: int8}\n" + MLA,
     {"bad.yaml:3:8: error: quant: int8_qkv cannot combine with mla",
      "allowed: none or fp8 with mla"}},
    // --- block-sparse
    {"sparse_softcap",
     B + "block_sparse: {}\nsoftcap: 30\n",
     {"bad.yaml:5:10: error: softcap: 30 cannot combine with block_sparse: block-sparse attention "
      "is causal only",
      "allowed: 0"}},
    {"sparse_alibi",
     B + "block_sparse: {}\nalibi: linear\n",
     {"bad.yaml:5:8: error: alibi: linear cannot combine with block_sparse", "allowed: none"}},
    {"sparse_window",
     B + "block_sparse: {}\nmask: {kind: sliding_window, left: 127, right: 0}\n",
     {"bad.yaml:5:7: error: mask: sliding_window cannot combine with block_sparse",
      "allowed: causal"}},
    {"sparse_non_causal",
     B + "mask: none\nblock_sparse: {}\n",
     {"bad.yaml:4:7: error: mask: none cannot combine with block_sparse", "allowed: causal"}},
    {"sparse_block_not_16",
     B + "block_sparse: {block_size: 40}\n",
     {"bad.yaml:4:28: error: block_sparse.block_size: 40 is not a multiple of 16"}},
    {"sparse_block_not_pages",
     B + "kv_cache: {page_size: 64}\nblock_sparse: {block_size: 32}\n",
     {"bad.yaml:5:28: error: block_sparse.block_size: 32 is not a multiple of kv_cache.page_size "
      "(64): a sparse block must cover whole pages; allowed: a multiple of 16 and of 64"}},
    {"sparse_vert_stride_zero",
     B + "block_sparse: {vert_stride: 0}\n",
     {"bad.yaml:4:29: error: block_sparse.vert_stride: 0 is out of range; allowed: 1..1048576"}},
    {"sparse_local_negative",
     B + "block_sparse: {local_blocks: -1}\n",
     {"bad.yaml:4:30: error: block_sparse.local_blocks: -1 is out of range; allowed: 0..1048576"}},
    {"sparse_heads_count",
     B + "block_sparse: {active_heads: [0, 16], head_sliding_step: 1}\n",
     {"bad.yaml:4:30: error: block_sparse.active_heads: [0, 16) holds 16 heads but num_q_heads is "
      "32; allowed: [begin, begin + 32)"}},
    {"sparse_heads_shape",
     B + "block_sparse: {active_heads: [0, 16, 32]}\n",
     {"bad.yaml:4:30: error: block_sparse.active_heads: expected [begin, end], got a list of 3 "
      "items"}},
    {"sparse_step_underivable",
     B + "block_sparse: {active_heads: [32, 64]}\n",
     {"bad.yaml:4:30: error: block_sparse.head_sliding_step: cannot be derived: with active_heads "
      "this spec is one tensor-parallel rank"}},
    {"sparse_homo_with_step",
     B + "block_sparse: {homo_head: true, head_sliding_step: 2}\n",
     {"bad.yaml:4:52: error: block_sparse.head_sliding_step: 2 contradicts homo_head: true"}},
    {"sparse_q_block_not_multiple",
     B + "block_sparse: {block_size: 64, q_block_size: 96}\n",
     {"error: block_sparse.q_block_size: 96 is not a multiple of "
      "block_sparse.block_size (64): a query block holds whole sparse rows; allowed: 64, 128, ... "
      "or leave it out"}},
    {"sparse_q_block_smaller",
     B + "block_sparse: {q_block_size: 32}\n",
     {"error: block_sparse.q_block_size: 32 is not a multiple of block_sparse.block_size (64)"}},
    {"sparse_kv_slide_mid_group",
     B + "num_kv_heads: 8\nblock_sparse: {active_heads: [2, 34], head_sliding_step: -1}\n",
     {"error: block_sparse.head_sliding_step: -1 slides along KV heads, but active_heads begins at "
      "q head 2, inside a group of 4 q heads; allowed: a begin that is a multiple of 4, or a step >= 0"}},
    {"sparse_homo_not_bool",
     B + "block_sparse: {homo_head: maybe}\n",
     {"bad.yaml:4:27: error: block_sparse.homo_head: expected true or false, got 'maybe'"}},
    // --- kernels and tuning
    {"kernels_empty",
     B + "kernels: []\n",
     {"bad.yaml:4:10: error: kernels: empty; allowed: one or more of prefill, decode, merge, "
      "cache_write"}},
    {"kernels_typo",
     B + "kernels: [prefill, decod]\n",
     {"bad.yaml:4:20: error: kernels[1]: unknown value 'decod'; did you mean 'decode'?"}},
    {"kernels_twice",
     B + "kernels: [prefill, prefill]\n",
     {"bad.yaml:4:20: error: kernels[1]: 'prefill' is listed twice"}},
    {"kernels_scalar",
     B + "kernels: prefill\n",
     {"bad.yaml:4:10: error: kernels: expected a list such as [prefill, decode], got 'prefill'"}},
    {"tuning_zero",
     B + "tuning: {block_m: [64, 0]}\n",
     {"bad.yaml:4:24: error: tuning.block_m[1]: 0 is out of range; allowed: 1..1024"}},
    {"tuning_warps",
     B + "tuning: {warps: [4, 64]}\n",
     {"bad.yaml:4:21: error: tuning.warps[1]: 64 is out of range; allowed: 1..32"}},
    {"tuning_family",
     B + "tuning: {families: [prefill_sm70]}\n",
     {"bad.yaml:4:21: error: tuning.families[0]: unknown value 'prefill_sm70'; did you mean "
      "'prefill_sm80'? allowed: prefill_sm80, prefill_sm90, decode_split"}},
    {"tuning_unknown_key",
     B + "tuning: {blockm: [64]}\n",
     {"bad.yaml:4:10: error: tuning.blockm: unknown field; did you mean 'block_m'?"}},
    {"tuning_duplicate",
     B + "tuning: {block_n: [64, 64]}\n",
     {"bad.yaml:4:24: error: tuning.block_n[1]: 64 is listed twice"}},
    {"name_not_string",
     B + "name: [a]\n",
     {"bad.yaml:4:7: error: name: expected a string, got a list"}},
};

class SpecErrors : public testing::TestWithParam<Case> {};

TEST_P(SpecErrors, MessageNamesPlaceFieldAndRule) {
  const Case& c = GetParam();
  std::size_t count = 0;
  const std::string what = errors_of(c.yaml, &count);
  for (const auto& e : c.expect)
    EXPECT_NE(what.find(e), std::string::npos) << "want: " << e << "\ngot:  " << what;
  if (c.count) {
    EXPECT_EQ(count, static_cast<std::size_t>(c.count)) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(Table, SpecErrors, testing::ValuesIn(kCases),
                         [](const testing::TestParamInfo<Case>& i) {
                           return std::string(i.param.name);
                         });

// The tab hint names the cause only where a tab indents the line the error points at.
TEST(SpecErrorsAll, TabHintOnlyWhereATabIndents) {
  const std::string hint = "tabs cannot indent YAML";
  EXPECT_NE(errors_of("version: 1\n \thead_dim: 128\n").find(hint), std::string::npos);
  EXPECT_EQ(errors_of("version: 1\nname: \"a\tb\\q\"\n").find(hint), std::string::npos);
  const std::string flow_end = errors_of("version: 1\nhead_dim: 128\t]\n");
  EXPECT_NE(flow_end.find("bad.yaml:2:"), std::string::npos) << flow_end;
  EXPECT_EQ(flow_end.find(hint), std::string::npos) << flow_end;
}

TEST(SpecErrorsAll, TableIsLarge) { EXPECT_GE(std::size(kCases), 30u); }

TEST(SpecErrorsAll, EveryErrorOfAFileIsReportedInFileOrder) {
  const std::string yaml =
      "version: 1\n"
      "head_dim: 100\n"  // 2: not a multiple of 8
      "num_q_heads: 32\n"
      "dtype: fp32\n"                             // 4: bad enum
      "kv_cache: {page_size: 24, layout: nhd}\n"  // 5: two errors
      "sinks: maybe\n"                            // 6
      "kernels: [prefill, x]\n";                  // 7
  try {
    parse_spec(yaml, "many.yaml");
    FAIL() << "expected SpecError";
  } catch (const SpecError& e) {
    const auto& d = e.diagnostics();
    ASSERT_EQ(d.size(), 6u) << e.what();
    const std::vector<std::string> paths = {"head_dim",        "dtype", "kv_cache.page_size",
                                            "kv_cache.layout", "sinks", "kernels[1]"};
    for (std::size_t i = 0; i < d.size(); ++i) {
      EXPECT_EQ(d[i].path, paths[i]);
      EXPECT_EQ(d[i].file, "many.yaml");
      if (i) {
        EXPECT_LE(d[i - 1].line, d[i].line);
      }
    }
  }
}

TEST(SpecErrorsAll, ABadFieldDoesNotCascade) {
  // num_q_heads is bad, so "num_kv_heads does not divide it" must not be claimed as well.
  std::size_t n = 0;
  const std::string what =
      errors_of("version: 1\nhead_dim: 128\nnum_q_heads: x\nnum_kv_heads: 5\n", &n);
  EXPECT_EQ(n, 1u) << what;
}

}  // namespace
}  // namespace attnc
