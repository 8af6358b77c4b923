// The attention grid (tests/gpu/attention_grid.h) on the GPU against the float64 reference:
// contiguous prefill, paged prefill, decode with one token per request and with cu_query_lens,
// every cache layout and page-table form, split-KV forced and heuristic, ALiBi, sinks, softcap,
// windows, both LSE layouts and bases, bf16 and fp16, both int8 modes (tests/gpu/int8_grid.h);
// every prefill case (contiguous, and paged over a 16-bit cache) on prefill_sm80 and again on
// prefill_sm90 (sm_90a devices). The kernels the selected tests need are
// compiled once, in parallel, before the first case; each case runs on two fresh random inputs
// and prints one `RESULT` line per run. Spills are reported (SPILLS lines), not failed: register
// tuning is separate work. Skips without a GPU.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <set>

#include "generator/emit/emit.h"
#include "runtime/driver/cuda_driver.h"
#include "runtime/launch/attention_args.h"
#include "runtime/driver/device.h"
#include "runtime/driver/module.h"
#include "runtime/compiler/nvrtc_compiler.h"
#include "tests/gpu/int8_grid.h"

namespace attnc::grid {

void PrintTo(const GridCase& c, std::ostream* os) { *os << c.name; }

namespace {

// The grid and its int8 cases.
const std::vector<GridCase>& all_cases() {
  static const std::vector<GridCase> all = [] {
    std::vector<GridCase> v = attention_grid();
    for (GridCase& c : int8_grid()) v.push_back(std::move(c));
    return v;
  }();
  return all;
}

struct LoadedKernel {
  std::optional<KernelPlan> plan;
  std::optional<Module> module;
  std::optional<Kernel> kernel, combine;
  std::string error;  // compile or load failure
};

class AttentionGrid : public ::testing::TestWithParam<GridCase> {
 protected:
  static void SetUpTestSuite() {
    if (Device::count() == 0) return;
    device_ = std::make_unique<Device>(0);
    device_->make_current();
    if (!is_supported_arch(device_->arch())) return;
    compile_selected();
  }
  static void TearDownTestSuite() {
    kernels_.clear();
    device_.reset();
  }

  static std::string entry_of(const GridCase& c) {
    return emit_kernel(plan_kernel(c.spec, c.kind, grid_config(c, device_->arch()), device_->arch())).entry;
  }
  // A family the device cannot run (prefill_sm90 off sm_90a) refuses the case: its reason, or "".
  static std::string refusal(const GridCase& c) {
    try {
      plan_kernel(c.spec, c.kind, grid_config(c, device_->arch()), device_->arch());
    } catch (const NotSupportedYet& e) {
      return e.what();
    }
    return "";
  }

  // The cases the filter selected (all when gtest cannot say), their distinct kernels compiled on
  // every core, then loaded.
  static void compile_selected() {
    std::set<std::string> selected;
    if (const ::testing::TestSuite* suite = ::testing::UnitTest::GetInstance()->current_test_suite())
      for (int i = 0; i < suite->total_test_count(); ++i) {
        const ::testing::TestInfo* t = suite->GetTestInfo(i);
        const std::string name = t->name();
        if (t->should_run()) selected.insert(name.substr(name.rfind('/') + 1));
      }
    std::vector<KernelSource> sources;
    std::vector<KernelPlan> plans;
    for (const GridCase& c : all_cases()) {
      if (!selected.empty() && !selected.count(c.name)) continue;
      if (!refusal(c).empty()) continue;
      const KernelPlan plan = plan_kernel(c.spec, c.kind, grid_config(c, device_->arch()), device_->arch());
      KernelSource src = emit_kernel(plan);
      if (kernels_.count(src.entry)) continue;
      kernels_[src.entry].plan = plan;
      plans.push_back(plan);
      sources.push_back(std::move(src));
    }
    CompileOptions options{device_->arch()};
    options.timeout = std::chrono::minutes(5);
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<CompileResult> results = compile_many(sources, options, 0);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("compiled %zu kernels in %.1f s\n", sources.size(), secs);
    for (size_t i = 0; i < sources.size(); ++i) {
      LoadedKernel& k = kernels_[sources[i].entry];
      if (!results[i].ok()) {
        k.error = results[i].error;
        continue;
      }
      const CompiledKernel& ck = *results[i].kernel;
      const PtxasReport& r = ck.report;
      std::printf("KERNEL %-64s regs=%d spill_stores=%d spill_loads=%d compile=%.1f s\n", ck.entry.c_str(),
                  r.registers, r.spill_stores, r.spill_loads, ck.compile_ms / 1e3);
      if (r.spill_stores || r.spill_loads)  // soft check: registers are tuned separately
        std::printf("SPILLS %s stores=%d loads=%d bytes\n", ck.entry.c_str(), r.spill_stores, r.spill_loads);
      try {
        k.module.emplace(ck.cubin);
        k.kernel.emplace(k.module->kernel(ck.entry, plans[i].smem_bytes));
        if (const char* suffix = companion_suffix(plans[i])) k.combine.emplace(k.module->kernel(ck.entry + suffix));
      } catch (const std::exception& e) {
        k.error = e.what();
      }
    }
  }

  static std::unique_ptr<Device> device_;
  static std::map<std::string, LoadedKernel> kernels_;
};
std::unique_ptr<Device> AttentionGrid::device_;
std::map<std::string, LoadedKernel> AttentionGrid::kernels_;

TEST_P(AttentionGrid, MatchesFloat64Reference) {
  if (!device_) GTEST_SKIP() << "no GPU: " << Driver::get().error();
  if (!is_supported_arch(device_->arch())) GTEST_SKIP() << "no kernels for " << device_->arch();
  const GridCase& g = GetParam();
  if (const std::string why = refusal(g); !why.empty()) GTEST_SKIP() << why;
  const auto it = kernels_.find(entry_of(g));
  ASSERT_NE(it, kernels_.end()) << "kernel not compiled for " << g.name;
  const LoadedKernel& k = it->second;
  ASSERT_TRUE(k.error.empty()) << k.error;

  AttentionCase c = g.call;
  c.num_sms = device_->sm_count();
  const std::uint64_t seed = std::uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  for (int run = 0; run < 2; ++run) {  // two fresh inputs: an error that moves would show a race
    c.seed = seed + run;
    const AttentionReport rep = check_attention(*k.plan, *k.kernel, k.combine ? &*k.combine : nullptr, c);
    std::printf("RESULT %-76s %s\n", g.name.c_str(), rep.summary().c_str());
    std::fflush(stdout);
    EXPECT_TRUE(rep.passed) << g.name << " (" << it->first << "): " << rep.summary();
    EXPECT_LT(rep.rel_l2_err, 1e-2) << g.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Grid, AttentionGrid, ::testing::ValuesIn(all_cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace attnc::grid
