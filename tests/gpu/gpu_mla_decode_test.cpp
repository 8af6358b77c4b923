// mla_decode (DeepSeek MLA absorbed decode, templates/attnc/families/mla_decode.cuh) planned from
// the shipped deepseek-v3 spec at H = 16, 32, 64, 128 query heads, compiled by NVRTC and run
// against the float64 reference (check/attention_check.h: fresh random inputs, poisoned outputs,
// LSE and split workspace, a poisoned cache whose unused slots are NaN): one and two query tokens
// per request (causal between them), ragged KV lengths that are and are not multiples of 64 (empty
// requests too), split-KV off, forced and heuristic, q_pe given apart, every page-table form, page
// sizes 64 and 128; fp8 e4m3 / e5m2 latent caches with a per-tensor scale, a [batch, 1] descale
// or both (the reference reads the dequantised cache). The ptxas report of every kernel is printed and must show no local memory.
// With ATTNC_MLA_BENCH=1 it also times the bench shapes (docs/kernels-mla-decode.md). Skips
// without an sm_90a device (the compile-only test runs anywhere).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

#include "check/attention_check.h"
#include "generator/emit/emit.h"
#include "generator/plan/plan_mla_decode.h"
#include "generator/spec/spec_parse.h"
#include "runtime/compiler/nvrtc_compiler.h"
#include "runtime/driver/cuda_driver.h"
#include "runtime/driver/device.h"
#include "runtime/driver/module.h"

namespace attnc {
namespace {

const char* kArch = "sm_90a";

// The shipped spec with `heads` query heads (128 is DeepSeek-V3 on one rank; TP8 gives 16).
Spec deepseek(int heads, DType dtype = DType::bf16, KvDType cache = KvDType::same) {
  const char* root = std::getenv("ATTNC_SOURCE_DIR");  // the GPU machine's copy of the repository
  std::ifstream f(std::string(root ? root : ATTNC_SOURCE_DIR) + "/specs/deepseek-v3.yaml");
  std::stringstream text;
  text << f.rdbuf();
  Spec s = parse_spec(text.str(), "deepseek-v3.yaml");
  s.num_q_heads = heads;
  s.num_kv_heads = heads;  // prefill's MHA; decode reads the one latent head
  s.dtype = dtype;
  s.kv_cache.dtype = cache;
  return s;
}

// block_m 0: the default config (16 rows, mla_decode_narrow, over an fp8 cache with H <= 16; else 64).
// warps 8 (block_m 16 only): one consumer warpgroup, three byte stages.
KernelPlan plan_for(int heads, DType dtype = DType::bf16, KvDType cache = KvDType::same, int block_m = 0,
                    int warps = 0) {
  const Spec s = deepseek(heads, dtype, cache);
  Config c = default_config(s, KernelKind::decode, kArch);
  if (block_m > 0) c.block_m = block_m;
  if (warps > 0) c.warps = warps, c.stages = warps == 8 ? 3 : 2;
  return plan_kernel(s, KernelKind::decode, c, kArch);
}

struct Loaded {
  KernelPlan plan;
  std::optional<Module> module;
  std::optional<Kernel> kernel, combine;
};

class MlaDecode : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::vector<KernelSource> sources;
    std::vector<KernelPlan> plans;
    for (int h : {16, 32, 64, 128}) plans.push_back(plan_for(h));
    plans.push_back(plan_for(64, DType::fp16));
    for (int h : {16, 128}) plans.push_back(plan_for(h, DType::bf16, KvDType::fp8_e4m3));
    plans.push_back(plan_for(64, DType::fp16, KvDType::fp8_e5m2));
    // The narrow layout with two tokens in one row block (H = 8) and over two row blocks of one
    // token (H = 32, e5m2 under fp16); the 64-row layout at H = 16 (what the narrow one replaced).
    plans.push_back(plan_for(8, DType::bf16, KvDType::fp8_e4m3));
    plans.push_back(plan_for(32, DType::fp16, KvDType::fp8_e5m2, 16));
    plans.push_back(plan_for(16, DType::bf16, KvDType::fp8_e4m3, 64));
    plans.push_back(plan_for(16, DType::bf16, KvDType::fp8_e4m3, 16, 8));
    plans.push_back(plan_for(8, DType::fp16, KvDType::fp8_e5m2, 16, 8));
    for (const KernelPlan& p : plans) sources.push_back(emit_kernel(p));
    CompileOptions options{kArch};
    options.timeout = std::chrono::minutes(5);
    const std::vector<CompileResult> results = compile_many(sources, options, 0);
    for (size_t i = 0; i < results.size(); ++i) {
      ASSERT_TRUE(results[i].ok()) << sources[i].entry << ": " << results[i].error;
      const CompiledKernel& k = *results[i].kernel;
      std::printf("KERNEL %s regs=%d spill_stores=%d spill_loads=%d stack=%d compile=%.1f s\n", k.entry.c_str(),
                  k.report.registers, k.report.spill_stores, k.report.spill_loads, k.report.stack_bytes,
                  k.compile_ms / 1e3);
      compiled_.push_back({plans[i], k});
    }
    if (Device::count() == 0) return;
    device_ = std::make_unique<Device>(0);
    if (device_->arch() != kArch) return;
    device_->make_current();
    for (size_t i = 0; i < compiled_.size(); ++i) {
      const auto& [plan, k] = compiled_[i];
      Loaded& l = loaded_[k.entry];
      l.plan = plan;
      l.module.emplace(k.cubin);
      l.kernel.emplace(l.module->kernel(k.entry, plan.smem_bytes));
      l.combine.emplace(l.module->kernel(k.entry + "_combine"));
    }
  }
  static void TearDownTestSuite() {
    loaded_.clear();
    device_.reset();
  }

  static const Loaded* kernel(int heads, DType dtype = DType::bf16, KvDType cache = KvDType::same, int block_m = 0,
                              int warps = 0) {
    const auto it = loaded_.find(emit_kernel(plan_for(heads, dtype, cache, block_m, warps)).entry);
    return it == loaded_.end() ? nullptr : &it->second;
  }

  // Two fresh random inputs per case; every one must pass.
  static void check(const Loaded& k, AttentionCase c, const std::string& what) {
    c.num_sms = device_->sm_count();
    const std::uint64_t seed = std::uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
    for (int run = 0; run < 2; ++run) {
      c.seed = seed + run;
      const AttentionReport rep = check_attention(k.plan, *k.kernel, &*k.combine, c);
      std::printf("RESULT %-48s %s\n", what.c_str(), rep.summary().c_str());
      std::fflush(stdout);
      EXPECT_TRUE(rep.passed) << what << ": " << rep.summary();
    }
  }

  static bool runnable() { return device_ && device_->arch() == kArch; }

  static std::vector<std::pair<KernelPlan, CompiledKernel>> compiled_;
  static std::unique_ptr<Device> device_;
  static std::map<std::string, Loaded> loaded_;
};
std::vector<std::pair<KernelPlan, CompiledKernel>> MlaDecode::compiled_;
std::unique_ptr<Device> MlaDecode::device_;
std::map<std::string, Loaded> MlaDecode::loaded_;

TEST_F(MlaDecode, CompilesWithoutLocalMemory) {
  ASSERT_EQ(compiled_.size(), 13u);
  for (const auto& [plan, k] : compiled_) {
    EXPECT_EQ(k.report.spill_stores, 0) << k.entry;
    EXPECT_EQ(k.report.spill_loads, 0) << k.entry;
    EXPECT_EQ(k.report.stack_bytes, 0) << k.entry;
  }
}

TEST_F(MlaDecode, MatchesFloat64Reference) {
  if (!runnable()) GTEST_SKIP() << "needs an sm_90a device";
  const std::vector<int> lengths = {1, 63, 64, 65, 200, 1000, 0, 2049};
  const PageTableForm forms[] = {PageTableForm::seqused_k, PageTableForm::flashinfer, PageTableForm::cu_seqlens_k};
  int turn = 0;
  for (int heads : {16, 32, 64, 128})
    for (int tokens : {1, 2})
      for (int splits : {1, 3, 0}) {
        const Loaded* k = kernel(heads);
        ASSERT_NE(k, nullptr);
        AttentionCase c;
        c.seqlens_k = lengths;
        if (tokens == 2) {  // request 0 (one key) has a row that sees no key; the empty request no tokens
          c.seqlens_q = std::vector<int>(lengths.size(), 2);
          c.seqlens_q[6] = 0;
        }
        c.num_splits = splits;
        c.page_size = turn % 4 == 3 ? 128 : 64;
        c.page_table = forms[turn % 3];
        c.column_offset = turn % 2;
        c.num_blocks = 600;
        c.softmax_scale = 0.1352f;  // the layer's scale, not 1/sqrt(576)
        c.q_pe_apart = turn % 2 == 1;
        ++turn;
        check(*k, c,
              "H" + std::to_string(heads) + "_q" + std::to_string(tokens) + "_s" + std::to_string(splits) + "_p" +
                  std::to_string(c.page_size) + "_" + to_string(c.page_table) + (c.q_pe_apart ? "_qpe" : ""));
      }
}

TEST_F(MlaDecode, Fp16AndLongContext) {
  if (!runnable()) GTEST_SKIP() << "needs an sm_90a device";
  AttentionCase c;
  c.seqlens_k = {8191, 5, 3000};
  c.page_size = 64;
  c.num_blocks = 300;
  c.num_splits = 0;
  c.softmax_scale = 0.0417f;
  check(*kernel(64, DType::fp16), c, "fp16_H64_long");
  c.seqlens_q = {2, 1, 2};
  c.num_splits = 7;
  check(*kernel(128), c, "bf16_H128_long_mtp");
}

// fp8 latent caches: e4m3 under bf16 queries (H = 16 and 128), e5m2 under fp16 (H = 64); every
// scale kind, one and two tokens, split off / forced / heuristic, q_pe apart, a NaN-poisoned tail.
TEST_F(MlaDecode, Fp8LatentCache) {
  if (!runnable()) GTEST_SKIP() << "needs an sm_90a device";
  struct Case {
    int heads;
    DType dtype;
    KvDType cache;
    int tokens, splits;
    Fp8Scales scales;
    int block_m = 0, warps = 0;  // 0: the default config's
  };
  const Case cases[] = {
      {16, DType::bf16, KvDType::fp8_e4m3, 1, 1, Fp8Scales::per_tensor},
      {16, DType::bf16, KvDType::fp8_e4m3, 2, 3, Fp8Scales::descale},
      {128, DType::bf16, KvDType::fp8_e4m3, 1, 0, Fp8Scales::both},
      {128, DType::bf16, KvDType::fp8_e4m3, 2, 1, Fp8Scales::per_tensor},
      {64, DType::fp16, KvDType::fp8_e5m2, 2, 0, Fp8Scales::both},
      {16, DType::bf16, KvDType::fp8_e4m3, 1, 0, Fp8Scales::both},
      {8, DType::bf16, KvDType::fp8_e4m3, 2, 0, Fp8Scales::per_tensor},
      {8, DType::bf16, KvDType::fp8_e4m3, 1, 1, Fp8Scales::descale},
      {32, DType::fp16, KvDType::fp8_e5m2, 2, 3, Fp8Scales::both, 16},
      {16, DType::bf16, KvDType::fp8_e4m3, 2, 0, Fp8Scales::descale, 64},
      {16, DType::bf16, KvDType::fp8_e4m3, 1, 0, Fp8Scales::both, 16, 8},
      {16, DType::bf16, KvDType::fp8_e4m3, 2, 3, Fp8Scales::per_tensor, 16, 8},
      {8, DType::fp16, KvDType::fp8_e5m2, 2, 1, Fp8Scales::descale, 16, 8},
  };
  int turn = 0;
  for (const Case& k : cases) {
    AttentionCase c;
    c.seqlens_k = {1, 63, 64, 65, 200, 1000, 0, 2049};
    if (k.tokens == 2) {
      c.seqlens_q = std::vector<int>(c.seqlens_k.size(), 2);
      c.seqlens_q[6] = 0;
    }
    c.num_splits = k.splits;
    c.page_size = turn % 2 ? 128 : 64;
    c.num_blocks = 300;
    c.softmax_scale = 0.1352f;
    c.q_pe_apart = turn % 2 == 1;
    c.fp8_scales = k.scales;
    ++turn;
    const Loaded* l = kernel(k.heads, k.dtype, k.cache, k.block_m, k.warps);
    ASSERT_NE(l, nullptr);
    check(*l, c,
          std::string("fp8_") + to_string(k.cache) + "_" + to_string(k.dtype) + "_H" + std::to_string(k.heads) + "_m" +
              std::to_string(l->plan.config.block_m) + "w" + std::to_string(l->plan.config.warps) + "_q" +
              std::to_string(k.tokens) + "_s" + std::to_string(k.splits) + "_" + to_string(k.scales) +
              (c.q_pe_apart ? "_qpe" : ""));
  }
}

// A small case for compute-sanitizer (tools/gpu-check style): MTP, a split, a tail, an empty request.
TEST_F(MlaDecode, SmallForMemcheck) {
  if (!runnable()) GTEST_SKIP() << "needs an sm_90a device";
  AttentionCase c;
  c.seqlens_k = {1, 130, 0, 64};
  c.seqlens_q = {2, 2, 0, 1};
  c.page_size = 64;
  c.num_blocks = 16;
  c.num_splits = 3;
  c.softmax_scale = 0.1352f;
  for (int heads : {16, 128}) check(*kernel(heads), c, "memcheck_H" + std::to_string(heads));
  for (int heads : {8, 16, 128})
    check(*kernel(heads, DType::bf16, KvDType::fp8_e4m3), c, "memcheck_fp8_H" + std::to_string(heads));
  check(*kernel(32, DType::fp16, KvDType::fp8_e5m2, 16), c, "memcheck_fp8_e5m2_H32_m16");
  check(*kernel(16, DType::bf16, KvDType::fp8_e4m3, 16, 8), c, "memcheck_fp8_H16_m16w8");
}

// Timings of the two bench shapes (no reference check); ATTNC_MLA_BENCH=1.
TEST_F(MlaDecode, Bench) {
  if (!runnable() || !std::getenv("ATTNC_MLA_BENCH")) GTEST_SKIP() << "ATTNC_MLA_BENCH=1 on an sm_90a device";
  struct Shape {
    int batch, length, heads;
    KvDType cache;
    int block_m = 0, warps = 0;  // 0: the default config's
  };
  for (const Shape s : {Shape{128, 4096, 128, KvDType::same}, Shape{64, 8192, 16, KvDType::same},
                        Shape{128, 4096, 128, KvDType::fp8_e4m3}, Shape{64, 8192, 16, KvDType::fp8_e4m3},
                        Shape{64, 8192, 16, KvDType::fp8_e4m3, 64}, Shape{64, 8192, 16, KvDType::fp8_e4m3, 16, 8}}) {
    const Loaded* k = kernel(s.heads, DType::bf16, s.cache, s.block_m, s.warps);
    AttentionCase c;
    c.seqlens_k = std::vector<int>(s.batch, s.length);
    c.page_size = 64;
    c.num_blocks = s.batch * s.length / 64 + 2;
    c.num_splits = 0;
    c.softmax_scale = 0.1352f;
    c.check = false;
    c.timing_reps = 20;
    c.num_sms = device_->sm_count();
    const AttentionReport rep = check_attention(k->plan, *k->kernel, &*k->combine, c);
    const bool fp8 = s.cache != KvDType::same;
    const double bytes = double(s.batch) * s.length * 576 * (fp8 ? 1 : 2);
    std::printf("BENCH mla_decode %s B=%d L=%d H=%d %s splits=%d time=%.3f ms %.1f TFLOP/s %.2f TB/s\n",
                fp8 ? "fp8e4m3" : "bf16", s.batch, s.length, s.heads, k->plan.config.short_name().c_str(),
                rep.num_splits,
                rep.time_ms, rep.tflops,
                bytes / (rep.time_ms * 1e-3) / 1e12);
  }
}

}  // namespace
}  // namespace attnc
