// cache_write on the GPU, bit-exact against the host reference (check/ops_reference.h): the whole
// cache buffer, poisoned with 0xff before the call, must equal the reference image byte for byte,
// so every slot is written exactly and nothing else is touched (padded tokens with slot -1, a
// slot past the cache, a guard region after it, the other plane, padded key rows). Covers the
// three layouts by strides (vLLM (2, nb, bs, H, D), the int8 fork's HND (2, nb, H, bs, D),
// FlashInfer (nb, 2, bs, H, D)), block sizes 16/32/64, key/value as strided views of a fused QKV
// buffer, head size 72, fp8 e4m3 and e5m2 with per-tensor and per-head scales over inputs that
// reach both subnormals and saturation, and 32768-page caches written in their last pages (past
// 2^31 elements: catches 32-bit offsets). Fresh random inputs every run; skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <unordered_set>

#include "runtime/launch/cache_write_args.h"
#include "check/ops_reference.h"
#include "tests/gpu/ops_gpu_util.h"

namespace attnc {
namespace {

enum class Layout { vllm, hnd, flashinfer };
const char* name_of(Layout l) { return l == Layout::vllm ? "vllm" : l == Layout::hnd ? "hnd" : "flashinfer"; }

struct Case {
  std::string name;
  DType dtype = DType::bf16;
  KvDType cache = KvDType::same;
  Layout layout = Layout::vllm;
  int block_size = 16;
  int num_blocks = 256;
  int heads = 8, d = 128;
  int tokens = 500;
  bool fused_qkv = false;     // key and value are views of [rows, (4H + 2H) * D]
  bool high_slots = false;    // slots in the last pages of the cache
  bool per_head_scale = false;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Case> cases() {
  std::vector<Case> out;
  for (Layout l : {Layout::vllm, Layout::hnd, Layout::flashinfer})
    for (int bs : {16, 32, 64}) {
      Case c;
      c.name = std::string("b16_") + name_of(l) + "_bs" + std::to_string(bs);
      c.layout = l;
      c.block_size = bs;
      out.push_back(c);
    }
  Case fused{"fp16_vllm_fused_qkv_view", DType::fp16};
  fused.fused_qkv = true;
  out.push_back(fused);
  Case d72{"bf16_hnd_d72_h3", DType::bf16, KvDType::same, Layout::hnd, 32, 64, 3, 72, 400};
  out.push_back(d72);
  out.push_back({"bf16_e4m3_vllm_bs16", DType::bf16, KvDType::fp8_e4m3, Layout::vllm, 16});
  Case e4_head{"bf16_e4m3_hnd_bs32_per_head", DType::bf16, KvDType::fp8_e4m3, Layout::hnd, 32};
  e4_head.per_head_scale = true;
  out.push_back(e4_head);
  out.push_back({"fp16_e5m2_flashinfer_bs64", DType::fp16, KvDType::fp8_e5m2, Layout::flashinfer, 64});
  Case e5_fused{"bf16_e5m2_vllm_fused_per_head", DType::bf16, KvDType::fp8_e5m2, Layout::vllm, 16};
  e5_fused.fused_qkv = e5_fused.per_head_scale = true;
  out.push_back(e5_fused);
  // 2 * 32768 * 64 * 8 * 128 elements: the value plane starts at element 2^31.
  Case big{"b16_vllm_32768_pages_high_slots", DType::bf16, KvDType::same, Layout::vllm, 64, 32768};
  big.tokens = 300;
  big.high_slots = true;
  out.push_back(big);
  // FlashInfer pages are 2^17 elements apart: the last page starts past 2^32 elements.
  Case big8{"bf16_e4m3_flashinfer_32768_pages_high_slots", DType::bf16, KvDType::fp8_e4m3, Layout::flashinfer, 64, 32768};
  big8.tokens = 300;
  big8.high_slots = true;
  out.push_back(big8);
  return out;
}

// Values from 2^-14 to 2^12 times N(0,1): fp8 subnormals, normals and saturation after scaling.
std::vector<std::uint16_t> wide_half(DType t, size_t n, std::mt19937_64& rng) {
  std::normal_distribution<float> normal(0.f, 1.f);
  std::uniform_int_distribution<int> exp(-14, 12);
  std::vector<std::uint16_t> h(n);
  for (auto& x : h) x = to_half(t, std::ldexp(normal(rng), exp(rng)));
  return h;
}

// Distinct slots, every 7th token padding (-1), one slot past the cache (the kernel must skip it).
std::vector<long long> random_slots(const Case& c, std::mt19937_64& rng) {
  const long long num_slots = (long long)c.num_blocks * c.block_size;
  const long long lo = c.high_slots ? num_slots - 4LL * c.tokens : 0;
  std::uniform_int_distribution<long long> dist(lo, num_slots - 1);
  std::unordered_set<long long> used;
  std::vector<long long> slots(c.tokens);
  for (int t = 0; t < c.tokens; ++t) {
    if (t % 7 == 3) { slots[t] = -1; continue; }
    long long s = t == 0 ? num_slots - 1 : dist(rng);  // the very last slot too
    while (used.count(s)) s = dist(rng);
    used.insert(s);
    slots[t] = s;
  }
  slots[c.tokens / 2] = num_slots + 5;
  return slots;
}

struct CacheGeometry {
  long long block, page, head;  // element strides of each plane
  long long value_offset;       // elements from the key plane to the value plane
  long long elements;           // both planes
};

CacheGeometry geometry(const Case& c) {
  const long long nb = c.num_blocks, bs = c.block_size, h = c.heads, d = c.d, plane = nb * bs * h * d;
  switch (c.layout) {
    case Layout::vllm: return {bs * h * d, h * d, d, plane, 2 * plane};
    case Layout::hnd: return {h * bs * d, d, bs * d, plane, 2 * plane};
    case Layout::flashinfer: return {2 * bs * h * d, h * d, d, bs * h * d, 2 * plane};
  }
  return {};
}

class GpuCacheWrite : public ::testing::TestWithParam<Case> {};

TEST_P(GpuCacheWrite, BitExactAndUntouchedElsewhere) {
  ATTNC_REQUIRE_GPU();
  const Case& c = GetParam();
  Spec spec;
  spec.dtype = c.dtype;
  spec.head_dim = spec.head_dim_v = c.d;
  spec.num_kv_heads = c.heads;
  spec.num_q_heads = 4 * c.heads;
  spec.kv_cache.dtype = c.cache;
  spec.kernels.cache_write = true;
  const std::string arch = test_gpu()->arch();
  KernelPlan plan;
  try {
    plan = plan_kernel(spec, KernelKind::cache_write, default_config(spec, KernelKind::cache_write, arch), arch);
  } catch (const NotSupportedYet& e) {
    GTEST_SKIP() << e.what();
  }
  const LoadedKernel k = load_kernel(plan);
  const bool fp8 = c.cache != KvDType::same;
  const int eb = fp8 ? 1 : 2, H = c.heads, D = c.d, rows = c.tokens + 16;  // 16 padded rows never written
  const CacheGeometry g = geometry(c);
  const size_t guard = 4096, cache_bytes = size_t(g.elements) * eb;
  if (test_gpu()->free_memory() < cache_bytes + (size_t(1) << 30)) GTEST_SKIP() << "not enough device memory";

  const int runs = c.num_blocks > 4096 ? 1 : 2;  // the 8 GiB caches once: they test offsets, not data
  for (int run = 0; run < runs; ++run) {
    const std::uint64_t seed = fresh_seed();
    std::mt19937_64 rng(seed);
    // Key and value rows: separate [rows, H, D] tensors, or views of fused QKV [rows, 6H * D].
    const long long row = c.fused_qkv ? 6LL * H * D : (long long)H * D;
    const size_t n = size_t(rows) * row;
    const auto kv_h = fp8 ? wide_half(c.dtype, 2 * n, rng) : random_half(c.dtype, 2 * n, rng, nullptr);
    const long long key_at = c.fused_qkv ? 4LL * H * D : 0, value_at = c.fused_qkv ? 5LL * H * D : (long long)n;
    const std::vector<long long> slots = random_slots(c, rng);
    std::uniform_real_distribution<float> scale_dist(0.05f, 4.f);
    std::vector<float> k_scale(c.per_head_scale ? H : 1), v_scale(k_scale.size());
    for (auto& s : k_scale) s = scale_dist(rng);
    for (auto& s : v_scale) s = scale_dist(rng);

    DeviceBuffer kv_d = DeviceBuffer::from(kv_h), slots_d = DeviceBuffer::from(slots);
    DeviceBuffer ks_d = DeviceBuffer::from(k_scale), vs_d = DeviceBuffer::from(v_scale);
    DeviceBuffer cache_d(cache_bytes + guard);
    cache_d.memset(0xff);

    CacheWriteArgs a;
    a.key = kv_d.as<std::uint16_t>() + key_at;
    a.value = kv_d.as<std::uint16_t>() + value_at;
    a.key_cache = cache_d.as<unsigned char>();
    a.value_cache = cache_d.as<unsigned char>() + g.value_offset * eb;
    a.slot_mapping = slots_d.as<const long long>();
    if (fp8) {
      a.k_scale = ks_d.as<const float>();
      a.v_scale = vs_d.as<const float>();
      a.per_head_scale = c.per_head_scale;
    }
    a.num_tokens = c.tokens;
    a.key_row_stride = a.value_row_stride = row;
    a.key_head_stride = a.value_head_stride = D;
    a.block_size = c.block_size;
    a.num_blocks = c.num_blocks;
    a.key_cache_block_stride = a.value_cache_block_stride = g.block;
    a.key_cache_page_stride = a.value_cache_page_stride = g.page;
    a.key_cache_head_stride = a.value_cache_head_stride = g.head;
    const CacheWriteLaunch launch = prepare_cache_write(plan, a);
    test_gpu()->synchronize();  // uploads and poison (legacy stream) land before the launch
    Stream stream;
    launch_cache_write(k.kernel, launch, stream.handle());
    stream.synchronize();

    std::vector<unsigned char> want(cache_bytes + guard, 0xff);
    HostCacheWrite h;
    h.key = kv_h.data() + key_at;
    h.value = kv_h.data() + value_at;
    h.slot_mapping = slots.data();
    h.key_cache = want.data();
    h.value_cache = want.data() + g.value_offset * eb;
    h.k_scale = k_scale;
    h.v_scale = v_scale;
    reference_cache_write(launch.params, c.dtype, c.cache, h);
    const auto got = cache_d.download<unsigned char>();
    ASSERT_EQ(got.size(), want.size());
    long long bad = 0;
    if (std::memcmp(got.data(), want.data(), want.size()) != 0) {
      for (size_t i = 0; i < want.size(); ++i)
        if (got[i] != want[i] && bad++ < 8)
          ADD_FAILURE() << c.name << " seed " << seed << ": byte " << i
                        << (i >= cache_bytes ? " (guard after the cache)" : "") << " = 0x" << std::hex << int(got[i])
                        << ", want 0x" << int(want[i]) << std::dec;
    }
    std::printf("RESULT %-44s %-32s %s bad_bytes=%lld cache=%.2f GiB seed=%llu\n", c.name.c_str(), k.entry.c_str(),
                bad ? "FAIL" : "PASS", bad,
                cache_bytes / 1073741824.0, static_cast<unsigned long long>(seed));
    EXPECT_EQ(bad, 0) << c.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Grid, GpuCacheWrite, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace attnc
