// prefill_sm90 compiled straight from its template (a traits struct and an entry written here, as
// the emitter will write them) and run against the float64 reference: fresh random inputs,
// poisoned outputs, ragged batches, causal / none / window, softcap, ALiBi, sinks, D != Dv, head
// dims 64 / 128 / 192 / 256, bf16 and fp16, ping-pong on and off. Then the bench shapes (B=4 S=4096
// Hq=32 Hkv=8) timed, one TFLOP/s table. Skips without an sm_90a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

#include "check/attention_compare.h"
#include "runtime/driver/cuda_driver.h"
#include "runtime/driver/device.h"
#include "check/half.h"
#include "runtime/driver/module.h"
#include "runtime/compiler/nvrtc_compiler.h"
#include "check/reference.h"
#include "runtime/driver/tensor_map.h"
#include "attnc/params/params.h"
#include "attnc/params/tensor_maps.h"

namespace attnc {
namespace {

struct Sm90Config {
  int block_n = 128, stages = 2, warpgroups = 2;
  bool pingpong = true;
};

struct Sm90Case {
  std::string name;
  DType dtype = DType::bf16;
  int d = 128, dv = 128, hq = 8, hkv = 2;
  int mask = 1;  // 0 none, 1 causal, 2 window
  int window_left = -1, window_right = -1;
  float softcap = 0.f;
  int alibi = 0;
  bool sinks = false;
  int lse = 1;  // 0 none, 1 base e, 2 base 2 (token-major)
  Sm90Config config;
  std::vector<int> lq, lk;
};

int round64(int x) { return (x + 63) / 64 * 64; }

int smem_bytes(const Sm90Case& c) {
  const int bm = 64 * c.config.warpgroups, bn = c.config.block_n;
  return 1024 + bm * round64(c.d) * 2 + c.config.stages * bn * (round64(c.d) + round64(c.dv)) * 2 +
         8 * (1 + 4 * c.config.stages);
}

std::string source(const Sm90Case& c, const std::string& entry) {
  auto b = [](bool v) { return v ? "true" : "false"; };
  char traits[1024];
  std::snprintf(traits, sizeof traits,
                "struct Traits {\n  using Element = attnc::%s;\n"
                "  static constexpr int kHeadDim = %d, kHeadDimV = %d, kGroup = %d;\n"
                "  static constexpr int kBlockM = %d, kBlockN = %d, kStages = %d, kConsumerWarpgroups = %d;\n"
                "  static constexpr bool kPingpong = %s;\n  static constexpr auto kMask = attnc::MaskKind(%d);\n"
                "  static constexpr bool kSoftcap = %s;\n  static constexpr auto kAlibi = attnc::Alibi(%d);\n"
                "  static constexpr bool kSinks = %s;\n  static constexpr auto kLse = attnc::LseOut(%d);\n"
                "  static constexpr bool kPaged = false;\n  static constexpr bool kPersistent = false;\n"
                "  static constexpr bool kMixedTiles = false;\n"
                "  static constexpr bool kPairedTiles = false;\n"
                "  static constexpr bool kPagedGather = false;\n"
                "  static constexpr bool kVPrewiden = false;\n};\n",
                c.dtype == DType::bf16 ? "bf16_t" : "fp16_t", c.d, c.dv, c.hq / c.hkv, 64 * c.config.warpgroups,
                c.config.block_n, c.config.stages, c.config.warpgroups, b(c.config.pingpong), c.mask,
                b(c.softcap > 0), c.alibi, b(c.sinks), c.lse);
  const int threads = 128 * (c.config.warpgroups + 1);
  return "#include \"attnc/families/prefill_sm90.cuh\"\n" + std::string(traits) +
         "static_assert(attnc::PrefillSm90<Traits>::kSmemBytes <= " + std::to_string(smem_bytes(c)) + ");\n" +
         "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(threads) + ", 1) " + entry +
         "(const __grid_constant__ attnc::AttentionParams p, const __grid_constant__ attnc::AttentionTensorMaps maps) {\n"
         "  extern __shared__ unsigned char smem[];\n  attnc::PrefillSm90<Traits>::run(p, maps, smem);\n}\n";
}

// NVRTC needs no GPU: every case compiles (and its ptxas report is checked) on any machine.
CompiledKernel compile_case(const Sm90Case& c) {
  KernelSource s;
  s.entry = "attnc_test_prefill_sm90";
  s.source = source(c, s.entry);
  s.arch = "sm_90a";
  auto k = compile_kernel(s);
  EXPECT_EQ(k.report.spill_stores + k.report.spill_loads + k.report.stack_bytes, 0) << c.name << " spills";
  EXPECT_EQ(k.log.find("C7508"), std::string::npos) << c.name << ": setmaxnreg ignored\n" << k.log;
  EXPECT_EQ(k.log.find("serialized"), std::string::npos) << c.name << ": wgmma serialized\n" << k.log;
  return k;
}

struct Loaded {
  std::unique_ptr<Module> module;
  Kernel kernel;
};
Loaded load(const CompiledKernel& k, const Sm90Case& c) {
  auto m = std::make_unique<Module>(k.cubin);
  Kernel kernel = m->kernel(k.entry, smem_bytes(c));
  return {std::move(m), kernel};
}

TensorMapView view3(const void* base, int d, int heads, int rows, int box_rows) {
  TensorMapView v;
  v.base = base;
  v.rank = 3;
  v.dims[0] = d, v.dims[1] = heads, v.dims[2] = std::max(rows, 1);
  v.strides[1] = d, v.strides[2] = (long long)heads * d;
  v.box[0] = 64, v.box[1] = 1, v.box[2] = box_rows;
  return v;
}

// Device inputs and outputs of one call, and how to launch it.
struct Call {
  DeviceBuffer q, k, v, o, lse, cu_q, cu_k, slopes, sinks;
  AttentionParams p{};
  AttentionTensorMaps maps{};
  Dim3 grid, block;
  int smem = 0;
  void launch(const Kernel& kernel, CUstream stream) const {
    void* args[] = {const_cast<AttentionParams*>(&p), const_cast<AttentionTensorMaps*>(&maps)};
    kernel.launch_args(grid, block, smem, stream, args);
  }
};

template <class T>
DeviceBuffer upload(const std::vector<T>& host) {
  DeviceBuffer b(std::max<size_t>(host.size() * sizeof(T), 16));
  if (!host.empty()) b.upload(host);
  return b;
}

void prepare(Call& call, const Sm90Case& c, const std::vector<int>& cu_q, const std::vector<int>& cu_k,
             const std::vector<std::uint16_t>& q, const std::vector<std::uint16_t>& k,
             const std::vector<std::uint16_t>& v, const std::vector<float>& slopes, const std::vector<float>& sinks) {
  const int batch = int(cu_q.size()) - 1, total_q = cu_q.back(), total_k = cu_k.back();
  int max_q = 0;
  for (int i = 0; i < batch; ++i) max_q = std::max(max_q, cu_q[i + 1] - cu_q[i]);
  call.q = upload(q), call.k = upload(k), call.v = upload(v);
  call.o = DeviceBuffer(size_t(total_q + 1) * c.hq * c.dv * 2);
  call.o.memset(0xff);
  call.lse = DeviceBuffer(size_t(total_q + 1) * c.hq * 4);
  call.lse.memset(0xff);
  call.cu_q = upload(cu_q), call.cu_k = upload(cu_k);
  call.slopes = upload(slopes), call.sinks = upload(sinks);
  AttentionParams& p = call.p;
  p.q = call.q.as(), p.k = call.k.as(), p.v = call.v.as(), p.o = call.o.as();
  p.lse = c.lse ? call.lse.as<float>() : nullptr;
  p.cu_seqlens_q = call.cu_q.as<int>(), p.cu_seqlens_k = call.cu_k.as<int>();
  p.q_row_stride = (long long)c.hq * c.d, p.q_head_stride = c.d;
  p.k_row_stride = (long long)c.hkv * c.d, p.k_head_stride = c.d;
  p.v_row_stride = (long long)c.hkv * c.dv, p.v_head_stride = c.dv;
  p.o_row_stride = (long long)c.hq * c.dv, p.o_head_stride = c.dv;
  p.lse_row_stride = c.hq, p.lse_head_stride = 1;
  p.batch = batch, p.num_q_heads = c.hq, p.num_kv_heads = c.hkv, p.max_seqlen_q = max_q, p.total_q = total_q;
  const float scale = 1.f / std::sqrt(float(c.d));
  p.scale_log2 = scale * 1.4426950408889634f;
  p.softcap = c.softcap;
  p.softcap_inv_scale = c.softcap > 0 ? scale / c.softcap : 0.f;
  p.window_left = c.window_left, p.window_right = c.window_right;
  p.alibi_slopes = c.alibi ? call.slopes.as<float>() : nullptr;
  p.sinks = c.sinks ? call.sinks.as<float>() : nullptr;
  p.num_splits = 1;
  const int bm = 64 * c.config.warpgroups;
  auto tm = [](const CUtensorMap& m) {
    TmaDescriptor d;
    std::memcpy(&d, &m, sizeof d);
    return d;
  };
  call.maps.q = tm(encode_tensor_map(view3(p.q, c.d, c.hq, total_q, bm), "q"));
  call.maps.k = tm(encode_tensor_map(view3(p.k, c.d, c.hkv, total_k, c.config.block_n), "k"));
  call.maps.v = tm(encode_tensor_map(view3(p.v, c.dv, c.hkv, total_k, c.config.block_n), "v"));
  call.grid = {unsigned((max_q + bm - 1) / bm), unsigned(c.hq), unsigned(batch)};
  call.block = {unsigned(128 * (c.config.warpgroups + 1))};
  call.smem = smem_bytes(c);
}

std::vector<int> prefix(const std::vector<int>& lens) {
  std::vector<int> cu(lens.size() + 1, 0);
  for (size_t i = 0; i < lens.size(); ++i) cu[i + 1] = cu[i] + lens[i];
  return cu;
}

class Sm90Device : public ::testing::Test {
 protected:
  // Why the test cannot run here, or "" (then device_ is set).
  std::string no_device() {
    if (!Driver::get().available()) return Driver::get().error();
    device_ = std::make_unique<Device>(0);
    if (device_->arch() != "sm_90a") return "prefill_sm90 needs sm_90a, the device is " + device_->arch();
    return "";
  }
  std::unique_ptr<Device> device_;
};
class PrefillSm90 : public Sm90Device, public ::testing::WithParamInterface<Sm90Case> {};

void PrintTo(const Sm90Case& c, std::ostream* os) { *os << c.name; }

TEST_P(PrefillSm90, MatchesReference) {
  const Sm90Case& c = GetParam();
  const CompiledKernel compiled = compile_case(c);
  if (const std::string why = no_device(); !why.empty()) GTEST_SKIP() << why;
  const Loaded kc = load(compiled, c);
  const auto lk = c.lk.empty() ? c.lq : c.lk;
  const auto cu_q = prefix(c.lq), cu_k = prefix(lk);
  const int total_q = cu_q.back(), total_k = cu_k.back();
  const auto seed = std::uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  auto random = [&](size_t n, std::vector<std::uint16_t>& bits, std::vector<double>& exact) {
    bits.resize(n), exact.resize(n);
    for (size_t i = 0; i < n; ++i) bits[i] = to_half(c.dtype, normal(rng)), exact[i] = from_half(c.dtype, bits[i]);
  };
  std::vector<std::uint16_t> q, k, v;
  std::vector<double> qd, kd, vd;
  random(size_t(total_q) * c.hq * c.d, q, qd);
  random(size_t(total_k) * c.hkv * c.d, k, kd);
  random(size_t(total_k) * c.hkv * c.dv, v, vd);
  std::vector<float> slopes(c.hq), sinks(c.hq);
  std::uniform_real_distribution<float> unit(0.f, 1.f);
  for (int h = 0; h < c.hq; ++h) slopes[h] = std::exp2(-1.f - 7.f * unit(rng)), sinks[h] = normal(rng);

  Call call;
  prepare(call, c, cu_q, cu_k, q, k, v, slopes, sinks);
  ATTNC_CU(CtxSynchronize);
  Stream stream;
  call.launch(kc.kernel, stream.handle());
  stream.synchronize();

  ReferenceOptions opt;
  opt.head_dim = c.d, opt.head_dim_v = c.dv, opt.num_q_heads = c.hq, opt.num_kv_heads = c.hkv;
  opt.causal = c.mask == 1;
  if (c.mask == 2) opt.window_left = c.window_left, opt.window_right = c.window_right;
  opt.softcap = c.softcap;
  opt.alibi = Alibi(c.alibi);
  const std::vector<double> slopes_d(slopes.begin(), slopes.end()), sinks_d(sinks.begin(), sinks.end());
  if (c.alibi) opt.alibi_slopes = &slopes_d;
  if (c.sinks) opt.sinks = &sinks_d;
  std::vector<double> o_ref, lse_ref;
  reference_attention_parallel(opt, cu_q, cu_k, qd, kd, vd, o_ref, lse_ref);

  ErrorTally tally;
  compare_output(c.dtype, call.o.download<std::uint16_t>(), (long long)c.hq * c.dv, total_q, c.hq, c.dv, o_ref,
                 1.5e-2, 1e-2, tally);
  if (c.lse) compare_lse(call.lse.download<float>(), false, c.lse == 1 ? 1.0 : 1.0 / std::log(2.0), total_q, c.hq,
                         lse_ref, tally);
  std::printf("%-34s regs %3d compile %5.0f ms  max_abs %.2e rel_l2 %.2e lse %.2e bad %lld stray %lld seed %llu\n",
              c.name.c_str(), compiled.report.registers, compiled.compile_ms, tally.max_abs, tally.rel_l2, tally.lse_max_abs, tally.bad,
              tally.stray, (unsigned long long)seed);
  EXPECT_EQ(tally.bad, 0);
  EXPECT_EQ(tally.stray, 0);
  EXPECT_LT(tally.rel_l2, 1e-2);
  if (c.lse) {
    EXPECT_LT(tally.lse_max_abs, 1e-2);
  }
}

const std::vector<int> kRaggedQ{1, 17, 130, 333, 800}, kRaggedK{1, 40, 130, 700, 800};

Sm90Case base(const std::string& name, int d, int mask, Sm90Config cfg) {
  Sm90Case c;
  c.name = name, c.d = c.dv = d, c.mask = mask, c.config = cfg, c.lq = kRaggedQ, c.lk = kRaggedK;
  return c;
}

std::vector<Sm90Case> cases() {
  const Sm90Config d64{128, 2, 3, true}, d128{128, 2, 2, true}, d128n{176, 2, 2, true}, d256{80, 2, 2, true};
  std::vector<Sm90Case> out;
  out.push_back(base("d64_causal_w3", 64, 1, d64));
  out.push_back(base("d64_nomask_w3", 64, 0, d64));
  out.push_back(base("d128_causal", 128, 1, d128));
  out.push_back(base("d128_nomask_n176", 128, 0, d128n));
  out.push_back(base("d128_causal_no_pingpong", 128, 1, {128, 2, 2, false}));
  out.push_back(base("d128_nomask_stages3_n96", 128, 0, {96, 3, 2, true}));
  out.push_back(base("d256_causal_n80", 256, 1, d256));
  out.push_back(base("d256_nomask_n80", 256, 0, d256));
  Sm90Case fp16 = base("fp16_d128_causal_lse2", 128, 1, d128);
  fp16.dtype = DType::fp16, fp16.lse = 2;
  out.push_back(fp16);
  Sm90Case mla = base("d192_dv128_causal", 192, 1, {112, 2, 2, true});
  mla.dv = 128;
  out.push_back(mla);
  Sm90Case shorter = base("d128_causal_kv_shorter", 128, 1, d128);
  shorter.lq = {300, 64}, shorter.lk = {100, 64};
  out.push_back(shorter);
  Sm90Case window = base("d128_window_64_0_g1", 128, 2, d128);
  window.window_left = 64, window.window_right = 0, window.hq = window.hkv = 4;
  out.push_back(window);
  Sm90Case gemma = base("d256_softcap50_window255", 256, 2, d256);
  gemma.window_left = 255, gemma.window_right = 0, gemma.softcap = 50.f, gemma.hq = 4;
  out.push_back(gemma);
  Sm90Case alibi = base("d128_alibi_sinks_nolse", 128, 1, d128);
  alibi.alibi = 1, alibi.sinks = true, alibi.lse = 0;
  out.push_back(alibi);
  Sm90Case sqrt_alibi = base("d64_sqrt_alibi_encoder_window", 64, 2, d64);
  sqrt_alibi.alibi = 2, sqrt_alibi.window_left = 31, sqrt_alibi.window_right = 31;
  out.push_back(sqrt_alibi);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Cases, PrefillSm90, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

// The bench shapes (B=4 S=4096 Hq=32 Hkv=8; B=2 at d256): median of 20 timed launches after warm-up
// on random inputs (never zeros); TFLOP/s counts 4 * B * Hq * S^2 * D, halved for causal.
using PrefillSm90Bench = Sm90Device;

TEST_F(PrefillSm90Bench, BenchShapes) {
  if (const std::string why = no_device(); !why.empty()) GTEST_SKIP() << why;
  struct Row { std::string name; int d, mask; Sm90Config cfg; };
  const std::vector<Row> rows = {
      {"d64 causal m192n128", 64, 1, {128, 2, 3, true}},    {"d64 none m192n128", 64, 0, {128, 2, 3, true}},
      {"d128 causal m128n128", 128, 1, {128, 2, 2, true}},  {"d128 causal no-pingpong", 128, 1, {128, 2, 2, false}},
      {"d128 none m128n176", 128, 0, {176, 2, 2, true}},    {"d128 none m128n128", 128, 0, {128, 2, 2, true}},
      {"d128 none no-pingpong n176", 128, 0, {176, 2, 2, false}},
      {"d256 causal m128n80", 256, 1, {80, 2, 2, true}},    {"d256 none m128n80", 256, 0, {80, 2, 2, true}},
  };
  std::printf("\n%-30s %6s %10s %10s\n", "prefill_sm90 (H=32/8, S=4096)", "regs", "ms", "TFLOP/s");
  for (const Row& r : rows) {
    Sm90Case c = base(r.name, r.d, r.mask, r.cfg);
    c.hq = 32, c.hkv = 8;
    const int B = r.d == 256 ? 2 : 4, S = 4096;
    c.lq = c.lk = std::vector<int>(B, S);
    const CompiledKernel compiled = compile_case(c);
    const Loaded kc = load(compiled, c);
    const auto cu = prefix(c.lq);
    std::vector<std::uint16_t> q(size_t(B) * S * c.hq * c.d), k(size_t(B) * S * c.hkv * c.d), v(k.size());
    std::uint32_t x = 12345;
    for (auto* t : {&q, &k, &v})
      for (auto& e : *t) x = x * 1664525u + 1013904223u, e = to_half(c.dtype, float(int(x >> 16) - 32768) / 32768.f);
    Call call;
    prepare(call, c, cu, cu, q, k, v, std::vector<float>(c.hq, 0.f), std::vector<float>(c.hq, 0.f));
    ATTNC_CU(CtxSynchronize);
    Stream stream;
    for (int i = 0; i < 3; ++i) call.launch(kc.kernel, stream.handle());
    std::vector<float> ms;
    for (int i = 0; i < 20; ++i) {
      Event start, stop;
      start.record(stream.handle());
      call.launch(kc.kernel, stream.handle());
      stop.record(stream.handle());
      stop.synchronize();
      ms.push_back(elapsed_ms(start, stop));
    }
    std::sort(ms.begin(), ms.end());
    const double flops = 4.0 * B * c.hq * double(S) * S * c.d / (r.mask == 1 ? 2 : 1);
    std::printf("%-30s %6d %10.3f %10.1f\n", r.name.c_str(), compiled.report.registers, ms[10], flops / (ms[10] * 1e9));
  }
}

}  // namespace
}  // namespace attnc
