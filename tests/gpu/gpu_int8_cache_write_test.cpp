// The int8 cache writers and quantiser on the GPU (templates/attnc/families/cache_write_int8.cuh),
// bit-exact against the host reference (check/int8_inputs.h): int8_qkv (the fork's
// reshape_and_cache_flash_int8 with the key quantisation fused: int8 K and V planes) and int8_qk
// (_mix: int8 K plane and a 16-bit V plane, the fork's 3-plane cache), bf16 and fp16, the fork's
// HND cache and vLLM's NHD by strides, page sizes 16/32/64, head sizes 64/128/256, padded tokens
// (slot -1) and a slot past the cache skipped. The whole cache, scale cache and a guard after
// them are poisoned with 0xff and compared byte for byte, so nothing else may change. The
// quantiser: [rows, heads, dim] to int8 and per-(row, head) scales in both scale layouts. Fresh
// random inputs every run; skips without a GPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <ostream>
#include <unordered_set>

#include "check/int8_inputs.h"
#include "runtime/launch/cache_write_args.h"
#include "tests/gpu/ops_gpu_util.h"

namespace attnc {
namespace {

struct Case {
  std::string name;
  DType dtype = DType::bf16;
  QuantMode quant = QuantMode::int8_qkv;
  bool hnd = true;
  int block_size = 16, num_blocks = 128, heads = 8, d = 128, tokens = 300;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Case> cases() {
  return {{"qkv_bf16_hnd_bs16", DType::bf16, QuantMode::int8_qkv, true, 16},
          {"qkv_fp16_nhd_bs32_d64", DType::fp16, QuantMode::int8_qkv, false, 32, 128, 4, 64},
          {"qk_fp16_hnd_bs16", DType::fp16, QuantMode::int8_qk, true, 16},
          {"qk_bf16_nhd_bs64_d256_h2", DType::bf16, QuantMode::int8_qk, false, 64, 64, 2, 256}};
}

Spec int8_spec(const Case& c) {
  Spec s;
  s.dtype = c.dtype;
  s.head_dim = s.head_dim_v = c.d;
  s.num_kv_heads = c.heads;
  s.num_q_heads = 4 * c.heads;
  s.quant = c.quant;
  s.kv_cache.dtype = KvDType::int8;
  s.kv_cache.layout = c.hnd ? KvLayout::HND : KvLayout::NHD;
  s.kv_cache.page_size = c.block_size;
  s.kernels.cache_write = true;
  return s;
}

// Distinct slots, every 7th token padding (-1), one past the cache.
std::vector<long long> random_slots(const Case& c, std::mt19937_64& rng) {
  const long long num_slots = (long long)c.num_blocks * c.block_size;
  std::uniform_int_distribution<long long> dist(0, num_slots - 1);
  std::unordered_set<long long> used;
  std::vector<long long> slots(c.tokens);
  for (int t = 0; t < c.tokens; ++t) {
    if (t % 7 == 3) { slots[t] = -1; continue; }
    long long s = t == 0 ? num_slots - 1 : dist(rng);
    while (used.count(s)) s = dist(rng);
    used.insert(s);
    slots[t] = s;
  }
  slots[c.tokens / 2] = num_slots + 5;
  return slots;
}

long long count_bad(const std::vector<unsigned char>& got, const std::vector<unsigned char>& want, const char* what) {
  long long bad = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if (got[i] != want[i] && bad++ < 4)
      ADD_FAILURE() << what << " byte " << i << " = 0x" << std::hex << int(got[i]) << ", want 0x" << int(want[i]);
  return bad;
}

template <class T>
std::vector<unsigned char> bytes_of(const std::vector<T>& v) {
  std::vector<unsigned char> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

class GpuInt8CacheWrite : public ::testing::TestWithParam<Case> {};

TEST_P(GpuInt8CacheWrite, BitExactAndUntouchedElsewhere) {
  ATTNC_REQUIRE_GPU();
  const Case& c = GetParam();
  const Spec spec = int8_spec(c);
  const std::string arch = test_gpu()->arch();
  const KernelPlan plan =
      plan_kernel(spec, KernelKind::cache_write, default_config(spec, KernelKind::cache_write, arch), arch);
  const LoadedKernel k = load_kernel(plan);
  const bool qk = c.quant == QuantMode::int8_qk;
  const long long H = c.heads, D = c.d, bs = c.block_size, nb = c.num_blocks, plane = nb * bs * H * D;
  const long long block = H * bs * D, page = c.hnd ? D : H * D, head = c.hnd ? bs * D : D;
  // The fork's cache: (2, nb, H, bs, D) int8, or (3, nb, H, bs, D) int8 with planes 1-2 one 16-bit V.
  const size_t guard = 4096, cache_bytes = size_t(qk ? 3 : 2) * plane;
  for (int run = 0; run < 2; ++run) {
    const std::uint64_t seed = fresh_seed();
    std::mt19937_64 rng(seed);
    const int rows = c.tokens + 16;
    const auto key = random_half(c.dtype, size_t(rows) * H * D, rng, nullptr, 3.f);
    const auto value = random_half(c.dtype, size_t(rows) * H * D, rng, nullptr);
    std::vector<float> v_scale(H * D);
    std::uniform_real_distribution<float> sd(0.005f, 0.05f);  // some values saturate at +-127
    for (float& s : v_scale) s = sd(rng);
    const std::vector<long long> slots = random_slots(c, rng);

    DeviceBuffer key_d = DeviceBuffer::from(key), value_d = DeviceBuffer::from(value);
    DeviceBuffer slots_d = DeviceBuffer::from(slots), vs_d = DeviceBuffer::from(v_scale);
    DeviceBuffer cache_d(cache_bytes + guard), ksc_d(size_t(nb * H * bs) * 4 + guard);
    cache_d.memset(0xff);
    ksc_d.memset(0xff);

    CacheWriteArgs a;
    a.key = key_d.as();
    a.value = value_d.as();
    a.key_cache = cache_d.as<unsigned char>();
    a.value_cache = cache_d.as<unsigned char>() + plane;
    a.key_scale_cache = ksc_d.as<float>();
    if (!qk) a.v_scale = vs_d.as<const float>();
    a.slot_mapping = slots_d.as<const long long>();
    a.num_tokens = c.tokens;
    a.num_blocks = c.num_blocks;
    a.key_cache_block_stride = a.value_cache_block_stride = block;
    a.key_cache_page_stride = a.value_cache_page_stride = page;
    a.key_cache_head_stride = a.value_cache_head_stride = head;
    const CacheWriteLaunch launch = prepare_cache_write(plan, a);
    test_gpu()->synchronize();
    Stream stream;
    launch_cache_write(k.kernel, launch, stream.handle());
    stream.synchronize();

    std::vector<unsigned char> want(cache_bytes + guard, 0xff);
    std::vector<unsigned char> want_ksc(size_t(nb * H * bs) * 4 + guard, 0xff);
    reference_int8_cache_write(launch.params, c.dtype, c.quant, key.data(), value.data(), slots.data(),
                               v_scale.data(), reinterpret_cast<std::int8_t*>(want.data()), want.data() + plane,
                               reinterpret_cast<float*>(want_ksc.data()));
    const long long bad = count_bad(cache_d.download<unsigned char>(), want, "cache") +
                          count_bad(ksc_d.download<unsigned char>(), want_ksc, "key_scale_cache");
    std::printf("RESULT %-32s %-40s %s bad_bytes=%lld seed=%llu\n", c.name.c_str(), k.entry.c_str(),
                bad ? "FAIL" : "PASS", bad, static_cast<unsigned long long>(seed));
    EXPECT_EQ(bad, 0) << c.name << " seed " << seed;
  }
}

TEST_P(GpuInt8CacheWrite, QuantizerMatchesHostInBothScaleLayouts) {
  ATTNC_REQUIRE_GPU();
  const Case& c = GetParam();
  const Spec spec = int8_spec(c);
  const std::string arch = test_gpu()->arch();
  const KernelPlan plan =
      plan_kernel(spec, KernelKind::cache_write, default_config(spec, KernelKind::cache_write, arch), arch);
  const KernelSource src = emit_kernel(plan);
  const CompiledKernel compiled = compile_kernel(src);
  Module module(compiled.cubin);
  const Kernel quantize = module.kernel(src.entry + "_quantize", 0);
  const int rows = 77, H = spec.num_q_heads, D = c.d;
  for (bool head_major : {false, true}) {
    const std::uint64_t seed = fresh_seed();
    std::mt19937_64 rng(seed);
    auto x = random_half(c.dtype, size_t(rows) * H * D, rng, nullptr, 2.f);
    std::fill_n(x.begin() + 5 * D, D, std::uint16_t(0));  // an all-zero (row, head): scale 0, zeros
    DeviceBuffer x_d = DeviceBuffer::from(x), out_d(size_t(rows) * H * D + 64), scale_d(size_t(rows) * H * 4 + 64);
    out_d.memset(0xff);
    scale_d.memset(0xff);
    Int8QuantizeArgs a;
    a.x = x_d.as();
    a.out = out_d.as<signed char>();
    a.scale = scale_d.as<float>();
    a.num_rows = rows;
    a.scale_head_major = head_major;
    const Int8QuantizeLaunch launch = prepare_int8_quantize(plan, a);
    test_gpu()->synchronize();
    Stream stream;
    launch_int8_quantize(quantize, launch, stream.handle());
    stream.synchronize();

    std::vector<float> xf(x.size());
    for (size_t i = 0; i < x.size(); ++i) xf[i] = from_half(c.dtype, x[i]);
    std::vector<std::int8_t> q8;
    std::vector<float> scale, scale_img(size_t(rows) * H);
    quantize_int8_rows(xf, rows * H, D, q8, scale);
    for (int r = 0; r < rows; ++r)
      for (int h = 0; h < H; ++h) scale_img[head_major ? size_t(h) * rows + r : size_t(r) * H + h] = scale[r * H + h];
    std::vector<unsigned char> want_out = bytes_of(q8), want_scale = bytes_of(scale_img);
    want_out.resize(want_out.size() + 64, 0xff);
    want_scale.resize(want_scale.size() + 64, 0xff);
    const long long bad = count_bad(out_d.download<unsigned char>(), want_out, "out") +
                          count_bad(scale_d.download<unsigned char>(), want_scale, "scale");
    std::printf("RESULT quantize_%-23s %-8s %s bad_bytes=%lld seed=%llu\n", c.name.c_str(),
                head_major ? "[H,T]" : "[T,H]", bad ? "FAIL" : "PASS", bad, static_cast<unsigned long long>(seed));
    EXPECT_EQ(bad, 0) << c.name << " seed " << seed;
  }
}

INSTANTIATE_TEST_SUITE_P(Int8, GpuInt8CacheWrite, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace attnc
