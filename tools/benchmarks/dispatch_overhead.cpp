// Host cost of the dispatcher on a warm cache, per call (the per_call counter, e.g. "1.2us"):
//   BM_Select      bucket lookup + split choice (no GPU needed: a described H200 without one)
//   BM_RunLaunch   Attention::run incl. prepare_attention and the launch (GPU)
//   BM_DirectLaunch prepare_attention + launch_attention on a loaded kernel: the floor run() adds to
//   BM_PreparePrefill/sm80, /sm90  prepare_attention of a contiguous prefill call; the sm90 one also
//                  encodes the three TMA tensor maps (q, k, v), so the difference is their cost
// Kernels are tiny (decode, batch 8, 512 keys) and the stream is drained every 256 calls outside
// the timing, so the numbers are host time, not GPU time. The cache is a fresh temporary file.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <numeric>
#include <vector>

#include "generator/emit/emit.h"
#include "generator/spec/spec_parse.h"
#include "runtime/launch/attention_launch.h"
#include "runtime/driver/cuda_driver.h"
#include "runtime/driver/device.h"
#include "runtime/dispatch/dispatcher.h"
#include "runtime/compiler/kernel_builder.h"

namespace attnc {
namespace {

const char* kSpec = R"(version: 1
name: bench-llama3
head_dim: 128
num_q_heads: 32
num_kv_heads: 8
dtype: bf16
kv_cache: {dtype: same, layout: NHD, page_size: 16}
mask: causal
kernels: [prefill, decode]
)";

constexpr int kBatch = 8, kLen = 512, kPage = 16;

std::string temp_db() {
  const auto dir = std::filesystem::temp_directory_path() / ("attnc-bench-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / "attnc.db").string();
}

bool have_gpu() {
  static const bool yes = Device::count() > 0;
  return yes;
}

Device& gpu() {
  static Device device(0);
  device.make_current();
  return device;
}

// A decode batch over a vLLM-layout cache; buffers live for the process.
struct Inputs {
  DeviceBuffer q, k, v, o, table, used;
  AttentionArgs args;
  Inputs() {
    const int blocks_per_seq = kLen / kPage, num_blocks = kBatch * blocks_per_seq;
    q = DeviceBuffer(size_t(kBatch) * 32 * 128 * 2);
    o = DeviceBuffer(q.size());
    k = DeviceBuffer(size_t(num_blocks) * kPage * 8 * 128 * 2);
    v = DeviceBuffer(k.size());
    q.memset(0);
    k.memset(0);
    v.memset(0);
    std::vector<int> pages(num_blocks);
    std::iota(pages.begin(), pages.end(), 0);
    table = DeviceBuffer::from(pages);
    used = DeviceBuffer::from(std::vector<int>(kBatch, kLen));
    args.q = q.as<void>();
    args.k = k.as<void>();
    args.v = v.as<void>();
    args.o = o.as<void>();
    args.batch = args.total_q = kBatch;
    args.max_seqlen_q = 1;
    args.max_seqlen_k = kLen;
    args.page_size = kPage;
    args.num_blocks = num_blocks;
    args.k_row_stride = args.v_row_stride = 8 * 128;
    args.k_head_stride = args.v_head_stride = 128;
    args.k_block_stride = args.v_block_stride = kPage * 8 * 128;
    args.block_table = table.as<int>();
    args.block_table_stride = args.max_blocks_per_seq = blocks_per_seq;
    args.seqused_k = used.as<int>();
  }
};

std::unique_ptr<Attention> make_attention() {
  AttentionOptions o;
  o.db = temp_db();
  if (!have_gpu()) o.device_info = DeviceInfo{"NVIDIA H200", "sm_90a", 132, 13000};
  return std::make_unique<Attention>(parse_spec(kSpec, "bench.yaml"), o);
}

void per_call(benchmark::State& state) {
  // Seconds per call, printed with an SI prefix ("1.23us").
  state.counters["per_call"] =
      benchmark::Counter(double(state.iterations()), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_Select(benchmark::State& state) {
  auto att = make_attention();
  const Problem p{KernelKind::decode, 48, 1, 3000};
  att->select(p);  // resolves the bucket once
  for (auto _ : state) benchmark::DoNotOptimize(att->select(p));
  per_call(state);
}
BENCHMARK(BM_Select);

void drain_every(benchmark::State& state, long i, CUstream s) {
  if ((i & 255) != 255) return;
  state.PauseTiming();
  ATTNC_CU(StreamSynchronize, s);
  state.ResumeTiming();
}

void BM_RunLaunch(benchmark::State& state) {
  if (!have_gpu()) return state.SkipWithError("no GPU");
  gpu();
  auto att = make_attention();
  Inputs in;
  Stream stream;
  att->reserve({KernelKind::decode, kBatch, 1, kLen});
  att->run(in.args, KernelKind::decode, stream.handle());  // warm: resolve, compile, load
  stream.synchronize();
  long i = 0;
  for (auto _ : state) {
    att->run(in.args, KernelKind::decode, stream.handle());
    drain_every(state, i++, stream.handle());
  }
  stream.synchronize();
  per_call(state);
  state.SetLabel(att->select({KernelKind::decode, kBatch, 1, kLen}).to_json());
}
BENCHMARK(BM_RunLaunch);

void BM_DirectLaunch(benchmark::State& state) {
  if (!have_gpu()) return state.SkipWithError("no GPU");
  Device& dev = gpu();
  const Spec spec = parse_spec(kSpec, "bench.yaml");
  const KernelPlan plan =
      plan_kernel(spec, KernelKind::decode, default_config(spec, KernelKind::decode, dev.arch()), dev.arch());
  const KernelSource src = emit_kernel(plan);
  KernelBuilder builder(temp_db(), CompileOptions{});
  Module module(builder.build(src).record.cubin);
  const Kernel kernel = module.kernel(src.entry, plan.smem_bytes);
  const Kernel combine = module.kernel(src.entry + "_combine", 0);
  Inputs in;
  Stream stream;
  const int splits = decide_num_splits(plan, {kBatch, 1, kLen, kBatch, dev.sm_count()}, 0);
  DeviceBuffer ws(std::max<size_t>(attention_workspace_bytes(plan, kBatch, splits), 16));
  AttentionArgs args = in.args;
  args.num_splits = splits;
  args.workspace = ws.as<void>();
  args.workspace_bytes = ws.size();
  long i = 0;
  for (auto _ : state) {
    const AttentionLaunch l = prepare_attention(plan, args);
    launch_attention(kernel, &combine, l, stream.handle());
    drain_every(state, i++, stream.handle());
  }
  stream.synchronize();
  per_call(state);
}
BENCHMARK(BM_DirectLaunch);

// A prefill call (4 requests of 512 tokens) prepared for either prefill family: no kernel runs,
// the driver only encodes the sm90 tensor maps.
void BM_PreparePrefill(benchmark::State& state, const char* family) {
  if (!have_gpu()) return state.SkipWithError("no GPU");
  gpu();
  const Spec spec = parse_spec(kSpec, "bench.yaml");
  const KernelPlan plan = plan_kernel(spec, KernelKind::prefill,
                                      config_for(spec, KernelKind::prefill, "sm_90a",
                                                 std::string(R"({"family":")") + family + "\"}"),
                                      "sm_90a");
  constexpr int kRequests = 4, kTokens = kRequests * kLen;
  DeviceBuffer q(size_t(kTokens) * 32 * 128 * 2), kv(size_t(kTokens) * 8 * 128 * 2), cu(64);
  std::vector<int> cu_host(kRequests + 1);
  for (int i = 0; i <= kRequests; ++i) cu_host[i] = i * kLen;
  cu.upload(cu_host);
  AttentionArgs a;
  a.q = q.as<void>(), a.o = q.as<void>(), a.k = kv.as<void>(), a.v = kv.as<void>();
  a.cu_seqlens_q = a.cu_seqlens_k = cu.as<int>();
  a.batch = kRequests, a.max_seqlen_q = kLen, a.total_q = kTokens, a.total_k = kTokens;
  a.lse = nullptr;
  for (auto _ : state) benchmark::DoNotOptimize(prepare_attention(plan, a));
  per_call(state);
}
BENCHMARK_CAPTURE(BM_PreparePrefill, sm80, "prefill_sm80");
BENCHMARK_CAPTURE(BM_PreparePrefill, sm90, "prefill_sm90");

}  // namespace
}  // namespace attnc

BENCHMARK_MAIN();
