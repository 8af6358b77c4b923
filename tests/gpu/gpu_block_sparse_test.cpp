// Block-sparse attention (attention-semantics.md §7.4, docs/conventions.md) on the GPU against the
// float64 reference: every family that takes it (prefill_sm90, prefill_sm80 contiguous and paged,
// decode_bw and decode_split with one and several query tokens, split-KV on and off) on parameter
// sets that cover homo_head true and false, sliding on q heads and on kv heads, a tensor-parallel
// head range, a q block of several sparse rows, no local blocks (rows with nothing visible) and
// Phi-3-small itself; lengths not multiples of the block size, kv longer than q. Fresh random
// inputs per run, poisoned outputs (check_attention). Then Phi-3-small at S=8192 timed: sparse
// against the dense causal kernel of the same shape (TIMING lines). Skips without a GPU.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <set>

#include "check/attention_check.h"
#include "generator/plan/plan_attention.h"
#include "generator/emit/emit.h"
#include "runtime/compiler/nvrtc_compiler.h"
#include "runtime/driver/cuda_driver.h"
#include "runtime/driver/device.h"
#include "runtime/driver/module.h"

namespace attnc {
namespace {

struct SparseCase {
  std::string name;
  Spec spec;
  KernelKind kind = KernelKind::prefill;
  std::string family;  // "": the arch's default
  std::vector<int> lq, lk;
  int num_splits = 1;
  std::string config_json;  // sm_90a only: overrides of the default config
};

void PrintTo(const SparseCase& c, std::ostream* os) { *os << c.name; }

Spec sparse_spec(int hq, int hkv, int bs, int local, int vs, int step, int begin, int qbs, bool homo = false) {
  Spec s;
  s.name = "sparse";
  s.head_dim = s.head_dim_v = 128;
  s.num_q_heads = hq;
  s.num_kv_heads = hkv;
  s.mask = {MaskKind::causal, -1, -1};
  s.lse = {LseLayout::token_major, LseBase::e};
  s.kernels.decode = true;
  BlockSparseSpec& b = s.sparse;
  b.enabled = true;
  b.block_size = bs;
  b.local_blocks = local;
  b.vert_stride = vs;
  b.homo_head = homo;
  b.head_sliding_step = step;  // 0 with homo_head
  b.active_head_begin = begin;
  b.active_head_end = begin + hq;
  b.q_block_size = qbs;
  return s;
}

// The mixed_tiles (or paired_tiles) config for a spec's pattern: key tiles of two sparse blocks
// (`extra`: more fields, each followed by a comma).
std::string two_block_tiles(const Spec& s, const std::string& fields) {
  return "{" + fields + R"(,"block_n":)" + std::to_string(2 * s.sparse.block_size) + "}";
}
std::string mixed_tiles(const Spec& s, const std::string& extra = "") {
  return two_block_tiles(s, extra + R"("mixed_tiles":true,"paired_tiles":false)");
}
std::string paired_tiles(const Spec& s, const std::string& extra = "") {
  return two_block_tiles(s, extra + R"("paired_tiles":true)");
}
// Phi-3-small's key tiles of one sparse block (the default before paired tiles).
constexpr const char* kOneBlockTiles = R"("block_n":64,"paired_tiles":false)";

std::vector<SparseCase> cases() {
  const std::vector<std::pair<std::string, Spec>> specs = {
      {"scaled_phi3", sparse_spec(8, 2, 32, 4, 4, 1, 0, 32)},
      {"homo_head", sparse_spec(8, 2, 16, 3, 5, 0, 0, 16, true)},
      {"kv_slide_rank8", sparse_spec(8, 2, 32, 2, 3, -1, 8, 32)},
      {"step2_rank5", sparse_spec(8, 4, 16, 1, 6, 2, 5, 16)},
      {"qblock48", sparse_spec(8, 2, 16, 2, 4, 1, 0, 48)},
      {"local0", sparse_spec(4, 1, 32, 0, 3, 1, 0, 32)},
  };
  const std::vector<int> lq{1, 37, 300, 777}, lk_longer{1, 100, 500, 1029};
  std::vector<SparseCase> out;
  for (const auto& [tag, spec] : specs) {
    out.push_back({"prefill_" + tag, spec, KernelKind::prefill, "", lq, lq});
    out.push_back({"prefill_sm80_" + tag, spec, KernelKind::prefill, "prefill_sm80", lq, lk_longer});
    out.push_back({"paged_" + tag, spec, KernelKind::prefill_paged, "", lq, lk_longer});
    out.push_back({"decode_" + tag, spec, KernelKind::decode, "", {}, {1, 100, 777, 1500}});
    out.push_back({"decodeN_split3_" + tag, spec, KernelKind::decode, "", {3, 1, 5, 2}, {40, 1, 900, 1337}, 3});
    out.push_back({"decode_split_" + tag, spec, KernelKind::decode, "decode_split", {}, {1, 100, 777, 1500}, 0});
    // Mixed tiles (opt-in): the band on tiles of two sparse blocks, the vertical blocks on one.
    out.push_back({"prefill_mixed_" + tag, spec, KernelKind::prefill, "", lq, lq, 1, mixed_tiles(spec)});
    // Paired tiles: every tile two sparse blocks of the visible list, adjacent or not.
    out.push_back({"prefill_paired_" + tag, spec, KernelKind::prefill, "", lq, lq, 1, paired_tiles(spec)});
  }
  // Mixed tiles with more keys than queries (positions shifted: q tiles straddle sparse blocks).
  out.push_back({"prefill_mixed_kv_longer_scaled_phi3", specs[0].second, KernelKind::prefill, "", lq, lk_longer, 1,
                 mixed_tiles(specs[0].second)});
  out.push_back({"prefill_paired_kv_longer_scaled_phi3", specs[0].second, KernelKind::prefill, "", lq, lk_longer, 1,
                 paired_tiles(specs[0].second)});
  const Spec phi3 = sparse_spec(32, 8, 64, 16, 8, 1, 0, 64);
  // Persistent blocks of two warpgroups holding Q in registers on paired tiles (the sm_90a default
  // here) walk 2 x 32 x 24 = 1536 items on 132 SMs; the one-item-per-block kernel again; key tiles
  // of one sparse block, persistent with two warpgroups and with three (Q in shared memory).
  out.push_back({"prefill_phi3_small", phi3, KernelKind::prefill, "", {3000, 1100}, {3000, 1100}});
  out.push_back({"prefill_phi3_small_one_item_per_block", phi3, KernelKind::prefill, "", {3000, 1100}, {3000, 1100},
                 1, R"({"persistent":false})"});
  out.push_back({"prefill_phi3_small_one_block_tiles", phi3, KernelKind::prefill, "", {3000, 1100}, {3000, 1100}, 1,
                 std::string("{") + kOneBlockTiles + "}"});
  out.push_back({"prefill_phi3_small_m192_persistent", phi3, KernelKind::prefill, "", {3000, 1100}, {3000, 1100}, 1,
                 std::string(R"({"block_m":192,"warps":16,)") + kOneBlockTiles + "}"});
  // Mixed tiles on Phi-3-small: persistent (Q in registers) and one item per block.
  out.push_back({"prefill_phi3_small_mixed", phi3, KernelKind::prefill, "", {3000, 1100}, {3000, 1100}, 1,
                 mixed_tiles(phi3)});
  out.push_back({"prefill_phi3_small_mixed_one_item_per_block", phi3, KernelKind::prefill, "", {3000, 1100},
                 {3000, 1100}, 1, mixed_tiles(phi3, R"("persistent":false,)")});
  out.push_back({"prefill_sm80_phi3_small", phi3, KernelKind::prefill, "prefill_sm80", {1500}, {1500}});
  out.push_back({"decode_phi3_small", phi3, KernelKind::decode, "", {}, {5000, 64, 2049}, 0});
  return out;
}

Config config_of(const SparseCase& c, const std::string& arch) {
  if (!c.config_json.empty() && arch == "sm_90a") return config_for(c.spec, c.kind, arch, c.config_json);
  return c.family.empty() ? default_config(c.spec, c.kind, arch)
                          : default_family_config(c.spec, c.kind, arch, c.family);
}

struct Loaded {
  KernelPlan plan;
  std::optional<Module> module;
  std::optional<Kernel> kernel, combine;
  std::string error;
};

class GpuBlockSparse : public ::testing::TestWithParam<SparseCase> {
 protected:
  // The selected cases' kernels compiled at once, on every core.
  static void SetUpTestSuite() {
    if (Device::count() == 0) return;
    device_ = std::make_unique<Device>(0);
    device_->make_current();
    if (!is_supported_arch(device_->arch())) return;
    std::set<std::string> selected;
    if (const ::testing::TestSuite* suite = ::testing::UnitTest::GetInstance()->current_test_suite())
      for (int i = 0; i < suite->total_test_count(); ++i)
        if (suite->GetTestInfo(i)->should_run()) {
          const std::string name = suite->GetTestInfo(i)->name();
          selected.insert(name.substr(name.rfind('/') + 1));
        }
    std::vector<KernelSource> sources;
    std::vector<KernelPlan> plans;
    for (const SparseCase& c : cases()) {
      if (!selected.empty() && !selected.count(c.name)) continue;
      KernelPlan plan;
      try {
        plan = plan_kernel(c.spec, c.kind, config_of(c, device_->arch()), device_->arch());
      } catch (const NotSupportedYet&) {
        continue;  // the test reports it
      }
      KernelSource src = emit_kernel(plan);
      if (loaded_.count(src.entry)) continue;
      loaded_[src.entry].plan = plan;
      plans.push_back(plan);
      sources.push_back(std::move(src));
    }
    CompileOptions options{device_->arch()};
    options.timeout = std::chrono::minutes(5);
    const std::vector<CompileResult> results = compile_many(sources, options, 0);
    for (size_t i = 0; i < sources.size(); ++i) {
      Loaded& k = loaded_[sources[i].entry];
      if (!results[i].ok()) {
        k.error = results[i].error;
        continue;
      }
      const CompiledKernel& ck = *results[i].kernel;
      std::printf("KERNEL %-72s regs=%d spills=%d\n", ck.entry.c_str(), ck.report.registers,
                  ck.report.spill_stores + ck.report.spill_loads);
      k.module.emplace(ck.cubin);
      k.kernel.emplace(k.module->kernel(ck.entry, plans[i].smem_bytes));
      if (plans[i].split_kv) k.combine.emplace(k.module->kernel(ck.entry + "_combine"));
    }
  }
  static void TearDownTestSuite() {
    loaded_.clear();
    device_.reset();
  }
  static std::unique_ptr<Device> device_;
  static std::map<std::string, Loaded> loaded_;
};
std::unique_ptr<Device> GpuBlockSparse::device_;
std::map<std::string, Loaded> GpuBlockSparse::loaded_;

TEST_P(GpuBlockSparse, MatchesFloat64Reference) {
  if (!device_) GTEST_SKIP() << "no GPU: " << Driver::get().error();
  const SparseCase& c = GetParam();
  KernelPlan plan;
  try {
    plan = plan_kernel(c.spec, c.kind, config_of(c, device_->arch()), device_->arch());
  } catch (const NotSupportedYet& e) {
    if (c.family.empty()) FAIL() << "the default family refuses block-sparse: " << e.what();
    GTEST_SKIP() << e.what();
  }
  const auto it = loaded_.find(emit_kernel(plan).entry);
  ASSERT_NE(it, loaded_.end());
  const Loaded& k = it->second;
  ASSERT_TRUE(k.error.empty()) << k.error;
  AttentionCase ac;
  ac.seqlens_q = c.lq;
  ac.seqlens_k = c.lk;
  ac.num_splits = c.num_splits;
  ac.num_sms = device_->sm_count();
  for (int run = 0; run < 2; ++run) {  // two fresh inputs: an error that moves would show a race
    const AttentionReport rep = check_attention(plan, *k.kernel, k.combine ? &*k.combine : nullptr, ac);
    std::printf("RESULT %-34s %-72s %s\n", c.name.c_str(), it->first.c_str(), rep.summary().c_str());
    EXPECT_TRUE(rep.passed) << c.name << ": " << rep.summary();
    EXPECT_LT(rep.rel_l2_err, 1e-2) << c.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Grid, GpuBlockSparse, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

// Phi-3-small's pattern at S=8192 (B=1, Hq 32, Hkv 8, d128, bf16) against the dense causal kernel
// of the same shape, both on the arch's default prefill family and on a few key-tile configs
// (mixed and paired tiles among them).
TEST(GpuBlockSparseTiming, Phi3SmallS8192) {
  if (Device::count() == 0) GTEST_SKIP() << "no GPU: " << Driver::get().error();
  Device device(0);
  device.make_current();
  const std::string arch = device.arch();
  if (!is_supported_arch(arch)) GTEST_SKIP() << "no kernels for " << arch;
  const Spec sparse = sparse_spec(32, 8, 64, 16, 8, 1, 0, 64);
  Spec dense = sparse;
  dense.sparse = BlockSparseSpec{};
  struct Run {
    std::string label;
    Spec spec;
    std::string config_json;
  };
  std::vector<Run> runs = {{"dense_causal_default", dense, ""}, {"sparse_default", sparse, ""}};
  // The default is persistent with Q in registers on paired tiles (m128n128s2pspt); one item per
  // block; key tiles of one sparse block (the default before), persistent and not, 3 stages, 192
  // rows (Q in shared memory); dense causal persistent.
  if (arch == "sm_90a") {
    const std::string one = kOneBlockTiles;
    for (const std::string& cfg :
         {std::string(R"({"persistent":false})"), "{" + one + "}", R"({"persistent":false,)" + one + "}",
          R"({"stages":3,)" + one + "}", R"({"block_m":192,"warps":16,)" + one + "}"})
      runs.push_back({"sparse_" + cfg, sparse, cfg});
    runs.push_back({R"(dense_causal_{"persistent":true})", dense, R"({"persistent":true})"});
    // Mixed tiles (docs/kernels-block-sparse.md, "Mixed tiles"): predicted ~0.33 ms, <= 0.37 ms for 2.5x.
    for (const std::string& cfg : {mixed_tiles(sparse), mixed_tiles(sparse, R"("persistent":false,)")})
      runs.push_back({"sparse_" + cfg, sparse, cfg});
  }
  std::vector<KernelSource> sources;
  std::vector<KernelPlan> plans;
  for (const Run& r : runs) {
    plans.push_back(plan_kernel(r.spec, KernelKind::prefill, config_for(r.spec, KernelKind::prefill, arch, r.config_json),
                                arch));
    sources.push_back(emit_kernel(plans.back()));
  }
  CompileOptions options{arch};
  options.timeout = std::chrono::minutes(5);
  const std::vector<CompileResult> results = compile_many(sources, options, 0);
  double dense_ms = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    ASSERT_TRUE(results[i].ok()) << results[i].error;
    Module module(results[i].kernel->cubin);
    const Kernel kernel = module.kernel(sources[i].entry, plans[i].smem_bytes);
    AttentionCase ac;
    ac.seqlens_q = ac.seqlens_k = {8192};
    ac.check = false;
    ac.timing_reps = 30;
    const AttentionReport rep = check_attention(plans[i], kernel, nullptr, ac);
    if (i == 0) dense_ms = rep.time_ms;
    std::printf("TIMING %-60s %-64s %.3f ms %.1f TFLOP/s (visible pairs) %.2fx dense\n", runs[i].label.c_str(),
                sources[i].entry.c_str(), rep.time_ms, rep.tflops, dense_ms / rep.time_ms);
  }
}

}  // namespace
}  // namespace attnc
