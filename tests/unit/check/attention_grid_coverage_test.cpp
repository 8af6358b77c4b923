// The GPU attention grid (tests/gpu/attention_grid.h) covers every value of every axis and the
// pairs that interact, plans and emits every kernel, keeps the float64 reference bounded, and the
// compute-sanitizer subset in tools/gpu-check names cases that exist. Runs without a GPU.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "generator/emit/emit.h"
#include "tests/gpu/int8_grid.h"

namespace attnc::grid {
namespace {

const std::vector<GridCase>& cases() {
  static const std::vector<GridCase> all = attention_grid();
  return all;
}

std::string kind_of(const GridCase& c) {
  if (c.kind != KernelKind::decode) return to_string(c.kind);
  return c.decode_multi ? "decode_multi" : "decode_single";
}

// Every (a, b) for a in as, b in bs must appear among the cases' (fa, fb).
template <class A, class B, class FA, class FB>
void expect_pairs(const std::string& what, const std::vector<A>& as, const std::vector<B>& bs, FA fa, FB fb,
                  std::function<bool(const GridCase&)> only = nullptr) {
  std::set<std::pair<A, B>> seen;
  for (const GridCase& c : cases())
    if (!only || only(c)) seen.insert({fa(c), fb(c)});
  for (const A& a : as)
    for (const B& b : bs)
      EXPECT_TRUE(seen.count({a, b})) << what << ": no case with " << ::testing::PrintToString(a) << " x "
                                      << ::testing::PrintToString(b);
}

const std::vector<std::string> kKinds = {"prefill", "prefill_paged", "decode_single", "decode_multi"};
bool paged(const GridCase& c) { return c.kind != KernelKind::prefill; }
bool decode(const GridCase& c) { return c.kind == KernelKind::decode; }

TEST(AttentionGrid, CoversEveryHeadDimAndHeadPairInEveryKind) {
  expect_pairs("head dim x kind", std::vector<int>{40, 64, 72, 80, 96, 128, 192, 256},
               std::vector<std::string>{"prefill", "prefill_paged", "decode_single", "decode_multi"},
               [](const GridCase& c) { return c.spec.head_dim; }, kind_of);
  expect_pairs("heads x kind", std::vector<std::pair<int, int>>{{4, 4}, {8, 2}, {16, 2}, {7, 1}}, kKinds,
               [](const GridCase& c) { return std::make_pair(c.spec.num_q_heads, c.spec.num_kv_heads); }, kind_of);
  bool dv128 = false;
  for (const GridCase& c : cases()) dv128 |= c.spec.head_dim == 192 && c.spec.head_dim_v == 128;
  EXPECT_TRUE(dv128);
}

TEST(AttentionGrid, CoversFeaturesInEveryKind) {
  auto feature = [](const GridCase& c) {
    std::vector<std::string> f;
    const Spec& s = c.spec;
    f.push_back(to_string(s.dtype));
    if (s.softcap > 0) f.push_back("softcap");
    if (s.mask.kind == MaskKind::sliding_window && s.mask.window_right == 0) f.push_back("window");
    if (s.mask.kind == MaskKind::causal) f.push_back("causal");
    if (s.mask.kind == MaskKind::none) f.push_back("nomask");
    if (s.alibi != Alibi::none) f.push_back(std::string("alibi_") + to_string(s.alibi));
    if (s.sinks) f.push_back("sinks");
    f.push_back(std::string("lse_") + to_string(s.lse.layout) + (s.lse.layout == LseLayout::none ? "" : std::string("_") + to_string(s.lse.base)));
    return f;
  };
  std::map<std::string, std::set<std::string>> kinds_of;
  for (const GridCase& c : cases())
    for (const auto& f : feature(c)) kinds_of[f].insert(kind_of(c));
  for (const std::string f : {"bf16", "fp16", "softcap", "window", "causal", "nomask", "alibi_linear", "alibi_sqrt",
                              "sinks", "lse_none", "lse_head_major_e", "lse_head_major_2", "lse_token_major_e",
                              "lse_token_major_2"})
    for (const std::string& k : kKinds) EXPECT_TRUE(kinds_of[f].count(k)) << f << " never runs as " << k;
  bool encoder = false;
  for (const GridCase& c : cases())
    encoder |= c.spec.mask.kind == MaskKind::sliding_window && c.spec.mask.window_left == c.spec.mask.window_right;
  EXPECT_TRUE(encoder) << "a symmetric (encoder) window";
}

TEST(AttentionGrid, CoversPagingPairs) {
  auto layout = [](const GridCase& c) { return std::string(to_string(c.call.layout)); };
  auto form = [](const GridCase& c) { return std::string(to_string(c.call.page_table)); };
  auto page = [](const GridCase& c) { return c.call.page_size; };
  std::vector<std::string> layouts, forms;
  for (auto l : all_kv_cache_layouts()) layouts.push_back(to_string(l));
  for (auto f : all_page_table_forms()) forms.push_back(to_string(f));
  expect_pairs("layout x form", layouts, forms, layout, form, paged);
  expect_pairs("layout x page size", layouts, kPageSizes, layout, page, paged);
  expect_pairs("form x page size", forms, kPageSizes, form, page, paged);
  expect_pairs("layout x kind", layouts, std::vector<std::string>{"prefill_paged", "decode_single", "decode_multi"},
               layout, kind_of, paged);
  expect_pairs("form x kind", forms, std::vector<std::string>{"prefill_paged", "decode_single", "decode_multi"}, form,
               kind_of, paged);
  expect_pairs("block-table form x column offset", std::vector<std::string>{"seqused_k", "cu_seqlens_k"},
               std::vector<bool>{false, true}, form, [](const GridCase& c) { return c.call.column_offset > 0; },
               [](const GridCase& c) { return paged(c) && c.call.page_table != PageTableForm::flashinfer; });
  std::set<int> indptr_offsets;
  for (const GridCase& c : cases())
    if (paged(c) && c.call.page_table == PageTableForm::flashinfer) {
      EXPECT_GT(c.call.indptr_offset, 0) << c.name << ": FlashInfer indptr must not start at 0";
      indptr_offsets.insert(c.call.indptr_offset);
    }
  EXPECT_GE(indptr_offsets.size(), 2u);
}

TEST(AttentionGrid, CoversSplitsWithEveryDecodeVariantAndFeature) {
  auto splits = [](const GridCase& c) { return c.call.num_splits; };
  expect_pairs("decode variant x splits", std::vector<std::string>{"decode_single", "decode_multi"}, kSplits, kind_of,
               splits, decode);
  auto split_feature = [&](const char* what, auto has) {
    std::set<int> s;
    for (const GridCase& c : cases())
      if (decode(c) && has(c.spec)) s.insert(c.call.num_splits);
    for (int n : {3, 16}) EXPECT_TRUE(s.count(n)) << what << " never runs with " << n << " splits";
  };
  split_feature("sinks", [](const Spec& s) { return s.sinks; });
  split_feature("softcap", [](const Spec& s) { return s.softcap > 0; });
  split_feature("window", [](const Spec& s) { return s.mask.kind == MaskKind::sliding_window; });
  split_feature("alibi", [](const Spec& s) { return s.alibi != Alibi::none; });
  split_feature("head-major LSE", [](const Spec& s) { return s.lse.layout == LseLayout::head_major; });
  split_feature("token-major LSE", [](const Spec& s) { return s.lse.layout == LseLayout::token_major; });
}

TEST(AttentionGrid, CoversStridedViewsScalesAndTheTopOfBigCaches) {
  std::set<std::string> strided, scaled;
  bool past_2e31 = false;
  for (const GridCase& c : cases()) {
    if (c.call.qo_row_pad) strided.insert(kind_of(c));
    if (c.call.softmax_scale > 0) scaled.insert(kind_of(c));
    if (paged(c)) {
      const KvCacheStrides s = kv_cache_strides(c.call.layout, c.call.num_blocks, c.call.page_size,
                                                c.spec.num_kv_heads, c.spec.head_dim, c.spec.head_dim_v);
      past_2e31 |= s.v_index(c.call.num_blocks - 1, 0, 0, 0) > (1LL << 31);
    }
  }
  for (const std::string& k : kKinds) {
    EXPECT_TRUE(strided.count(k)) << "no strided q/o in " << k;
    EXPECT_TRUE(scaled.count(k)) << "no explicit softmax scale in " << k;
  }
  EXPECT_TRUE(past_2e31) << "no case reads a page past element 2^31";
}

TEST(AttentionGrid, EveryKernelPlansAndCasesAreBounded) {
  std::set<std::string> names, entries;
  double flops = 0;
  const std::regex valid("[A-Za-z0-9_]+");
  for (const GridCase& c : cases()) {
    EXPECT_TRUE(names.insert(c.name).second) << "duplicate name " << c.name;
    EXPECT_TRUE(std::regex_match(c.name, valid)) << c.name;
    const KernelPlan plan = plan_kernel(c.spec, c.kind, grid_config(c, "sm_90a"), "sm_90a");
    entries.insert(emit_kernel(plan).entry);
    flops += 2 * reference_work(plan, c.call) * (plan.head_dim + plan.head_dim_v);
  }
  std::printf("grid: %zu cases, %zu kernels, %.3g reference flops per run of every case\n", names.size(),
              entries.size(), flops);
  // Prefill runs on both prefill families: ~35 contiguous prefill_sm90 kernels (~1 s each) and 10
  // paged ones (measured: compiled in 2.4 s together); the fp8 KV cases add 16 (measured: the
  // grid's 119 decode and fp8 cases compile and run in 26 s); the persistent prefill_sm90 twins
  // (`sm90p_`) 18 (measured: compiled and run in 3 s).
  EXPECT_LT(entries.size(), 185u) << "compile time (in parallel on the GPU host: ~0.6-1 s a kernel over 16 cores)";
  EXPECT_LT(flops, 2e11) << "the float64 reference runs twice per case on the GPU host's 16 cores";
}

// On sm_90 the decode cases run on decode_bw (the default there, Dv 256 included), and each
// grid-kernel decode case again on decode_split (`_decode_split`), so both families see every axis.
TEST(AttentionGrid, DecodeCasesRunOnBothDecodeFamilies) {
  std::map<std::string, std::string> family_of;
  for (const GridCase& c : cases())
    if (decode(c)) family_of[c.name] = grid_config(c, "sm_90a").family;
  int twins = 0, bw = 0;
  for (const auto& [name, family] : family_of) {
    const std::string suffix = "_decode_split";
    const bool twin = name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    if (twin) {
      ++twins;
      EXPECT_EQ(family, "decode_split") << name;
      EXPECT_TRUE(family_of.count(name.substr(0, name.size() - suffix.size()))) << name << " has no original";
    }
    bw += family == "decode_bw";
  }
  EXPECT_GE(twins, 30);
  EXPECT_GE(bw, 40);  // every decode case but int8 past d192, the head-dim sweep's included
}

// Every paged 16-bit prefill_sm90 case runs again with the cp.async gather (`sm90g_`), so the gather
// meets every page-table form, page sizes below 64 (16, 32, 48: where it is meant to serve) and
// head dims from 64 to 256, windows, softcap and sinks.
TEST(AttentionGrid, PagedGatherTwinsEverySm90PagedCase) {
  std::set<std::string> names;
  for (const GridCase& c : cases()) names.insert(c.name);
  std::set<int> sizes, dims;
  std::set<PageTableForm> forms;
  bool window = false, softcap = false, sinks = false, kv_longer = false;
  int twins = 0;
  for (const GridCase& c : cases()) {
    if (!c.paged_gather) {
      if (c.family == "prefill_sm90" && c.kind == KernelKind::prefill_paged && c.spec.quant == QuantMode::none)
        EXPECT_TRUE(names.count("sm90g_" + c.name.substr(5))) << c.name << " has no gather twin";
      continue;
    }
    ++twins;
    EXPECT_EQ(grid_config(c, "sm_90a").family, "prefill_sm90") << c.name;
    EXPECT_TRUE(grid_config(c, "sm_90a").paged_gather) << c.name;
    sizes.insert(c.call.page_size);
    dims.insert(c.spec.head_dim);
    forms.insert(c.call.page_table);
    window |= c.spec.mask.kind == MaskKind::sliding_window;
    softcap |= c.spec.softcap > 0;
    sinks |= c.spec.sinks;
    for (size_t r = 0; r < c.call.seqlens_q.size(); ++r) kv_longer |= c.call.seqlens_k[r] > c.call.seqlens_q[r];
  }
  EXPECT_GE(twins, 10);
  for (int size : {16, 32, 48}) EXPECT_TRUE(sizes.count(size)) << "no gather case at page " << size;
  for (int d : {64, 128, 256}) EXPECT_TRUE(dims.count(d)) << "no gather case at d" << d;
  EXPECT_EQ(forms.size(), all_page_table_forms().size());
  EXPECT_TRUE(window && softcap && sinks && kv_longer);
}

// fp8 caches: both formats and every scale kind in every paged kind, decode on both families.
TEST(AttentionGrid, Fp8CasesCoverFormatsScaleKindsAndBothDecodeFamilies) {
  const std::vector<std::string> kinds = {"prefill_paged", "decode_single", "decode_multi"};
  auto fp8 = [](const GridCase& c) { return c.spec.kv_cache.dtype != KvDType::same; };
  auto format = [](const GridCase& c) { return std::string(to_string(c.spec.kv_cache.dtype)); };
  auto scales = [](const GridCase& c) { return std::string(to_string(c.call.fp8_scales)); };
  expect_pairs("fp8 kind x format", kinds, std::vector<std::string>{"fp8_e4m3", "fp8_e5m2"}, kind_of, format, fp8);
  expect_pairs("fp8 kind x scales", kinds, std::vector<std::string>{"scale", "descale", "scale_descale"}, kind_of,
               scales, fp8);
  expect_pairs("fp8 decode family x format", std::vector<std::string>{"decode_bw", "decode_split"},
               std::vector<std::string>{"fp8_e4m3", "fp8_e5m2"},
               [](const GridCase& c) { return grid_config(c, "sm_90a").family; }, format,
               [&](const GridCase& c) { return fp8(c) && decode(c); });
}

// int8 prefill, contiguous and paged, runs on both prefill families: each case on prefill_sm80 and
// its `sm90_` twin on prefill_sm90 (paged int8's default is prefill_sm80 until a GPU run confirms
// prefill_sm90's, so the twins name the family), every kernel's head dims being multiples of 16;
// int8_qkv, contiguous and paged, also as an `sm90w_` twin with V widened once per call (v_prewiden).
TEST(AttentionGrid, Int8PrefillCasesRunOnBothPrefillFamilies) {
  std::map<std::string, GridCase> by_name;
  for (const GridCase& c : int8_grid()) by_name[c.name] = c;
  int planned[2] = {0, 0}, originals[2] = {0, 0}, qkv[2] = {0, 0}, prewidened[2] = {0, 0};  // contiguous, paged
  for (const auto& [name, c] : by_name) {
    if (c.kind == KernelKind::decode || name.rfind("sm90", 0) == 0) continue;  // sm90_ and sm90w_ twins
    ++originals[c.kind == KernelKind::prefill_paged];
    EXPECT_EQ(grid_config(c, "sm_90a").family, "prefill_sm80") << name;
    EXPECT_EQ(plan_kernel(c.spec, c.kind, grid_config(c, "sm_90a"), "sm_90a").family, "prefill_sm80") << name;
    ASSERT_TRUE(by_name.count("sm90_" + name)) << name << " has no prefill_sm90 twin";
    const GridCase& twin = by_name.at("sm90_" + name);
    EXPECT_EQ(twin.family, "prefill_sm90");
    const KernelPlan plan = plan_kernel(twin.spec, twin.kind, grid_config(twin, "sm_90a"), "sm_90a");
    EXPECT_EQ(plan.family, "prefill_sm90") << twin.name;
    EXPECT_EQ(plan.paged, c.kind == KernelKind::prefill_paged) << twin.name;
    ++planned[plan.paged];
    EXPECT_FALSE(plan.config.v_prewiden) << twin.name;  // the producer widens
    // int8_qkv a third time, V widened once per call.
    if (c.spec.quant != QuantMode::int8_qkv) continue;
    ++qkv[plan.paged];
    ASSERT_TRUE(by_name.count("sm90w_" + name)) << name << " has no v_prewiden twin";
    const GridCase& once = by_name.at("sm90w_" + name);
    EXPECT_TRUE(plan_kernel(once.spec, once.kind, grid_config(once, "sm_90a"), "sm_90a").config.v_prewiden);
    ++prewidened[plan.paged];
  }
  EXPECT_GE(qkv[0], 4);  // every int8_qkv kernel contiguous, and the paged ones, have their twin
  EXPECT_GE(qkv[1], 3);
  EXPECT_EQ(prewidened[0], qkv[0]);
  EXPECT_EQ(prewidened[1], qkv[1]);
  EXPECT_EQ(planned[0], originals[0]);
  EXPECT_EQ(planned[1], originals[1]);
  EXPECT_GE(originals[1], 6);  // every int8 kernel paged
}

TEST(AttentionGrid, SanitizerSubsetInGpuCheckNamesRealCases) {
  std::ifstream in(std::string(ATTNC_SOURCE_DIR) + "/tools/gpu-check");
  std::stringstream text;
  text << in.rdbuf();
  const std::string script = text.str();
  std::smatch m;
  std::regex_search(script, m, std::regex("sanitize_filter='([^']*)'"));
  ASSERT_EQ(m.size(), 2u) << "tools/gpu-check has no sanitize_filter='...'";
  std::stringstream filter(m[1].str());
  std::string pattern;
  int n = 0;
  while (std::getline(filter, pattern, ':')) {
    const std::string name = pattern.substr(pattern.rfind('/') + 1);
    EXPECT_TRUE(std::any_of(cases().begin(), cases().end(), [&](const GridCase& c) { return c.name == name; }))
        << "sanitize_filter names " << name << ", which the grid does not have";
    ++n;
  }
  EXPECT_GE(n, 4);
}

}  // namespace
}  // namespace attnc::grid
