// The Hopper tile toolkit (templates/attnc/sm90/) op by op on known data: mbarrier phases, a TMA
// box load (128-byte swizzle, zero fill past the tensor) and store (clipped), wgmma from shared
// memory (K-major A and B, across 64-column blocks) and with A in registers (MN-major B across
// column blocks), setmaxnreg with named barriers and elect.sync. Inputs are small integers, so
// every product is exact. Skips without a GPU or where the device is not sm_90a.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "runtime/driver/cuda_driver.h"
#include "runtime/driver/device.h"
#include "check/half.h"
#include "runtime/driver/module.h"
#include "runtime/compiler/nvrtc_compiler.h"
#include "runtime/driver/tensor_map.h"

namespace attnc {
namespace {

// Each test compiles its kernel first (NVRTC needs no GPU, so a broken op fails everywhere), then
// runs it where the device is sm_90a.
class Sm90Toolkit : public ::testing::Test {
 protected:
  std::vector<char> compile(const std::string& entry, const std::string& text) const {
    KernelSource s;
    s.entry = entry;
    s.source = text;
    s.arch = "sm_90a";
    const auto k = compile_kernel(s);
    EXPECT_EQ(k.report.stack_bytes, 0) << entry;
    EXPECT_EQ(k.log.find("C7508"), std::string::npos) << entry << ": setmaxnreg ignored\n" << k.log;
    return k.cubin;
  }
  // Why the test cannot run here, or "" (then device_ is set).
  std::string no_device() {
    if (!Driver::get().available()) return Driver::get().error();
    device_ = std::make_unique<Device>(0);
    if (device_->arch() != "sm_90a") return "the sm90 toolkit needs sm_90a, the device is " + device_->arch();
    return "";
  }
  // Launches `entry(int* out)` on one block of `threads` and returns its `n` ints (poisoned first).
  std::vector<int> run_ints(Module& m, const char* entry, unsigned threads, int n, unsigned char poison) {
    DeviceBuffer out(n * sizeof(int));
    out.memset(poison);
    int* p = out.as<int>();
    void* args[] = {&p};
    m.kernel(entry).launch_args({1}, {threads}, 0, nullptr, args);
    device_->synchronize();
    return out.download<int>();
  }
  std::unique_ptr<Device> device_;
};
#define ATTNC_LOAD_OR_SKIP(module, cubin)                       \
  if (const std::string why = no_device(); !why.empty()) GTEST_SKIP() << why; \
  Module module(cubin)

// Element offset of (row, col) in a 128-byte-swizzled tile of `rows` rows (SwizzledTile).
int swizzled(int rows, int row, int col) { return (col / 64) * rows * 64 + row * 64 + (((col % 64) / 8) ^ (row % 8)) * 8 + col % 8; }

TEST_F(Sm90Toolkit, MbarrierPhasesAlternateParity) {
  const auto cubin = compile("attnc_test_mbarrier", R"(
#include "attnc/sm90/mbarrier.cuh"
extern "C" __global__ void attnc_test_mbarrier(int* out) {
  __shared__ unsigned long long bar;
  if (threadIdx.x == 0) attnc::mbar_init(&bar, blockDim.x);
  __syncthreads();
  if (threadIdx.x == 0) { out[0] = attnc::mbar_try_wait(&bar, 0); out[1] = attnc::mbar_try_wait(&bar, 1); }
  __syncthreads();
  attnc::mbar_arrive(&bar);
  attnc::mbar_wait(&bar, 0);
  if (threadIdx.x == 0) { out[2] = attnc::mbar_try_wait(&bar, 0); out[3] = attnc::mbar_try_wait(&bar, 1); }
  __syncthreads();
  attnc::mbar_arrive(&bar);
  attnc::mbar_wait(&bar, 1);
  if (threadIdx.x == 0) { out[4] = attnc::mbar_try_wait(&bar, 1); out[5] = attnc::mbar_try_wait(&bar, 0); }
}
)");
  ATTNC_LOAD_OR_SKIP(m, cubin);
  // Fresh: phase 0 open, the one before it (parity 1) counts as done. Then each completion flips.
  EXPECT_EQ(run_ints(m, "attnc_test_mbarrier", 96, 6, 0x7f), (std::vector<int>{0, 1, 1, 0, 1, 0}));
}

TEST_F(Sm90Toolkit, TmaLoadsSwizzledBoxWithZeroFillAndStoresClipped) {
  const int T = 100, H = 3, D = 128;
  std::vector<std::uint16_t> src(T * H * D);
  for (size_t i = 0; i < src.size(); ++i) src[i] = std::uint16_t(1 + (i * 2654435761u) % 60000);

  const auto cubin = compile("attnc_test_tma", R"(
#include "attnc/sm90/fence.cuh"
#include "attnc/sm90/mbarrier.cuh"
#include "attnc/sm90/tma.cuh"
extern "C" __global__ void attnc_test_tma(const __grid_constant__ attnc::TmaDescriptor load_map,
                                          const __grid_constant__ attnc::TmaDescriptor store_map,
                                          unsigned short* tile_out) {
  extern __shared__ unsigned char raw[];
  __shared__ unsigned long long bar;
  const unsigned a = attnc::smem_u32(raw);
  unsigned short* tile = reinterpret_cast<unsigned short*>(raw + (((a + 1023) & ~1023u) - a));
  if (threadIdx.x == 0) { attnc::mbar_init(&bar, 1); attnc::mbar_fence_init(); }
  __syncthreads();
  if (threadIdx.x == 0) {
    attnc::tma_prefetch_descriptor(&load_map);
    attnc::mbar_arrive_expect_tx(&bar, 64 * 64 * 2);
    attnc::tma_load_3d(tile, &load_map, &bar, 64, 2, 60);  // rows 60..123 of head 2, columns 64..127
  }
  attnc::mbar_wait(&bar, 0);
  for (int i = threadIdx.x; i < 64 * 64; i += blockDim.x) tile_out[i] = tile[i];
  if (threadIdx.x == 0) {
    attnc::tma_store_3d(&store_map, tile, 0, 1, 40);  // to rows 40..103 of head 1, columns 0..63
    attnc::tma_store_commit();
    attnc::tma_store_wait_read<0>();
  }
}
)");
  ATTNC_LOAD_OR_SKIP(m, cubin);
  auto dsrc = DeviceBuffer::from(src);
  DeviceBuffer ddst(src.size() * 2), dtile(64 * 64 * 2);
  ddst.memset(0xff);
  dtile.memset(0xff);
  TensorMapView view;
  view.rank = 3;
  view.dims[0] = D, view.dims[1] = H, view.dims[2] = T;
  view.strides[1] = D, view.strides[2] = H * D;
  view.box[0] = 64, view.box[1] = 1, view.box[2] = 64;
  view.base = dsrc.as();
  const CUtensorMap load_map = encode_tensor_map(view, "tma test source");
  view.base = ddst.as();
  const CUtensorMap store_map = encode_tensor_map(view, "tma test destination");
  const int smem = 64 * 64 * 2 + 1024;
  const Kernel k = m.kernel("attnc_test_tma", smem);
  void* tile_ptr = dtile.as();
  void* args[] = {const_cast<CUtensorMap*>(&load_map), const_cast<CUtensorMap*>(&store_map), &tile_ptr};
  k.launch_args({1}, {128}, smem, nullptr, args);
  device_->synchronize();

  const auto tile = dtile.download<std::uint16_t>();
  auto at = [&](int t, int h, int d) { return src[(size_t(t) * H + h) * D + d]; };
  for (int r = 0; r < 64; ++r)
    for (int c = 0; c < 64; ++c) {
      const std::uint16_t want = 60 + r < T ? at(60 + r, 2, 64 + c) : 0;
      ASSERT_EQ(tile[swizzled(64, r, c)], want) << "row " << r << " col " << c;
    }
  const auto dst = ddst.download<std::uint16_t>();
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < H; ++h)
      for (int d = 0; d < D; ++d) {
        const bool written = h == 1 && t >= 40 && d < 64;  // rows past 99 were dropped
        const std::uint16_t want = written ? (t + 20 < T ? at(t + 20, 2, 64 + d) : 0) : kHalfPoison;
        ASSERT_EQ(dst[(size_t(t) * H + h) * D + d], want) << "token " << t << " head " << h << " dim " << d;
      }
}

// Small integers as bf16 or fp16 bits, and their values.
struct IntMatrix {
  int rows, cols;
  std::vector<int> v;
  IntMatrix(int r, int c, std::mt19937& rng) : rows(r), cols(c), v(r * c) {
    std::uniform_int_distribution<int> dist(-3, 3);
    for (auto& x : v) x = dist(rng);
  }
  int operator()(int r, int c) const { return v[r * cols + c]; }
  std::uint16_t bits(DType t, int r, int c) const { return to_half(t, float((*this)(r, c))); }
};

// Accumulator element i of thread `tid` (float[N/8][4] flattened): its row and column in 64 x N.
void accumulator_position(int tid, int i, int& row, int& col) {
  const int warp = tid / 32, lane = tid % 32, nt = i / 4, c = i % 4;
  row = warp * 16 + lane / 4 + 8 * (c / 2);
  col = nt * 8 + (lane % 4) * 2 + c % 2;
}

std::string type_name(DType t) { return t == DType::bf16 ? "bf16_t" : "fp16_t"; }

class Sm90Wgmma : public Sm90Toolkit, public ::testing::WithParamInterface<DType> {
 protected:
  // Launches a one-warpgroup test kernel `entry(in0, in1, out)` that writes its 64 x n accumulators
  // (n / 2 a thread, poisoned first) and checks each against want(row, col).
  template <class Want>
  void launch_and_check(Module& m, const char* entry, int smem, const DeviceBuffer& in0, const DeviceBuffer& in1,
                        int n, Want want) {
    DeviceBuffer dd(128 * (n / 2) * sizeof(float));
    dd.memset(0xff);
    const Kernel k = m.kernel(entry, smem);
    const void* p0 = in0.as();
    const void* p1 = in1.as();
    float* pd = dd.as<float>();
    void* args[] = {&p0, &p1, &pd};
    k.launch_args({1}, {128}, smem, nullptr, args);
    device_->synchronize();
    const auto d = dd.download<float>();
    for (int tid = 0; tid < 128; ++tid)
      for (int i = 0; i < n / 2; ++i) {
        int row, col;
        accumulator_position(tid, i, row, col);
        ASSERT_EQ(d[tid * (n / 2) + i], float(want(row, col))) << "row " << row << " col " << col;
      }
  }
};

// D[64 x 128] = A[64 x 128] B[128 x 128]^T, both K-major in shared memory (8 k-steps, two 64-column
// blocks), written there by ordinary stores behind fence.proxy.async.
TEST_P(Sm90Wgmma, SharedSharedKMajor) {
  const DType t = GetParam();
  constexpr int M = 64, N = 128, K = 128;
  std::mt19937 rng(11);
  IntMatrix A(M, K, rng), B(N, K, rng);
  std::vector<std::uint16_t> a(M * K), b(N * K);
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < K; ++c) a[r * K + c] = A.bits(t, r, c);
  for (int r = 0; r < N; ++r)
    for (int c = 0; c < K; ++c) b[r * K + c] = B.bits(t, r, c);

  const auto cubin = compile("attnc_test_wgmma_ss", R"(
#include "attnc/sm90/fence.cuh"
#include "attnc/sm90/wgmma.cuh"
using E = attnc::)" + type_name(t) + R"(;
using ATile = attnc::SwizzledTile<64, 128>;
using BTile = attnc::SwizzledTile<128, 128>;
extern "C" __global__ void attnc_test_wgmma_ss(const unsigned short* a, const unsigned short* b, float* out) {
  extern __shared__ unsigned char raw[];
  const unsigned base = attnc::smem_u32(raw);
  unsigned short* sa = reinterpret_cast<unsigned short*>(raw + (((base + 1023) & ~1023u) - base));
  unsigned short* sb = sa + ATile::kElems;
  for (int i = threadIdx.x; i < 64 * 128; i += 128) sa[ATile::offset(i / 128, i % 128)] = a[i];
  for (int i = threadIdx.x; i < 128 * 128; i += 128) sb[BTile::offset(i / 128, i % 128)] = b[i];
  attnc::fence_proxy_async_shared();
  __syncthreads();
  float d[16][4];
  attnc::wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < 8; ++kk)
    attnc::wgmma_ss<E, 128, 0>(d, ATile::desc_k_major(attnc::smem_u32(sa), 0, kk),
                               BTile::desc_k_major(attnc::smem_u32(sb), 0, kk), kk > 0);
  attnc::wgmma_commit();
  attnc::wgmma_wait<0>();
  attnc::fence_operand(d);
  for (int i = 0; i < 64; ++i) out[threadIdx.x * 64 + i] = d[i / 4][i % 4];
}
)");
  ATTNC_LOAD_OR_SKIP(m, cubin);
  const auto da = DeviceBuffer::from(a), db = DeviceBuffer::from(b);
  launch_and_check(m, "attnc_test_wgmma_ss", (64 + 128) * 128 * 2 + 1024, da, db, N, [&](int row, int col) {
    int want = 0;
    for (int kk = 0; kk < K; ++kk) want += A(row, kk) * B(col, kk);
    return want;
  });
}

// D[64 x 128] = A[64 x 32] B[32 x 128] with A in registers (m16n8k16 fragments) and B MN-major
// (rows of B along N, two 64-column blocks), accumulating onto D = 1.
TEST_P(Sm90Wgmma, RegisterSharedMnMajor) {
  const DType t = GetParam();
  constexpr int M = 64, N = 128, K = 32;
  std::mt19937 rng(12);
  IntMatrix A(M, K, rng), B(K, N, rng);
  std::vector<std::uint32_t> frag(128 * (K / 16) * 4);
  auto pack = [&](int r, int c) { return std::uint32_t(A.bits(t, r, c)) | (std::uint32_t(A.bits(t, r, c + 1)) << 16); };
  for (int tid = 0; tid < 128; ++tid) {
    const int warp = tid / 32, lane = tid % 32, r0 = warp * 16 + lane / 4;
    for (int kk = 0; kk < K / 16; ++kk) {
      const int c0 = kk * 16 + (lane % 4) * 2;
      std::uint32_t* f = &frag[(tid * (K / 16) + kk) * 4];
      f[0] = pack(r0, c0), f[1] = pack(r0 + 8, c0), f[2] = pack(r0, c0 + 8), f[3] = pack(r0 + 8, c0 + 8);
    }
  }
  std::vector<std::uint16_t> b(K * N);
  for (int r = 0; r < K; ++r)
    for (int c = 0; c < N; ++c) b[r * N + c] = B.bits(t, r, c);

  const auto cubin = compile("attnc_test_wgmma_rs", R"(
#include "attnc/sm90/fence.cuh"
#include "attnc/sm90/wgmma.cuh"
using E = attnc::)" + type_name(t) + R"(;
using BTile = attnc::SwizzledTile<32, 128>;
extern "C" __global__ void attnc_test_wgmma_rs(const unsigned* frag, const unsigned short* b, float* out) {
  extern __shared__ unsigned char raw[];
  const unsigned base = attnc::smem_u32(raw);
  unsigned short* sb = reinterpret_cast<unsigned short*>(raw + (((base + 1023) & ~1023u) - base));
  for (int i = threadIdx.x; i < 32 * 128; i += 128) sb[BTile::offset(i / 128, i % 128)] = b[i];
  unsigned a[2][4];
  for (int i = 0; i < 8; ++i) a[i / 4][i % 4] = frag[threadIdx.x * 8 + i];
  attnc::fence_proxy_async_shared();
  __syncthreads();
  float d[16][4];
  for (int i = 0; i < 16; ++i) for (int c = 0; c < 4; ++c) d[i][c] = 1.f;
  attnc::wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < 2; ++kk) attnc::wgmma_rs<E, 128, 1>(d, a[kk], BTile::desc_mn_major(attnc::smem_u32(sb), kk), true);
  attnc::wgmma_commit();
  attnc::wgmma_wait<0>();
  attnc::fence_operand(d);
  for (int i = 0; i < 64; ++i) out[threadIdx.x * 64 + i] = d[i / 4][i % 4];
}
)");
  ATTNC_LOAD_OR_SKIP(m, cubin);
  const auto dfrag = DeviceBuffer::from(frag), db = DeviceBuffer::from(b);
  launch_and_check(m, "attnc_test_wgmma_rs", 32 * 128 * 2 + 1024, dfrag, db, N, [&](int row, int col) {
    int want = 1;
    for (int kk = 0; kk < K; ++kk) want += A(row, kk) * B(kk, col);
    return want;
  });
}

INSTANTIATE_TEST_SUITE_P(Types, Sm90Wgmma, ::testing::Values(DType::bf16, DType::fp16),
                         [](const auto& info) { return std::string(info.param == DType::bf16 ? "bf16" : "fp16"); });

// A producer warpgroup with few registers hands data to two consumer warpgroups with many, through
// named barriers; elect.sync picks one lane per warp.
TEST_F(Sm90Toolkit, SetmaxnregRolesMeetAtNamedBarriers) {
  const auto cubin = compile("attnc_test_roles", R"(
#include "attnc/sm90/warpgroup.cuh"
extern "C" __global__ void __launch_bounds__(384, 1) attnc_test_roles(int* out) {
  __shared__ int data[256];
  __shared__ int elected;
  if (threadIdx.x == 0) elected = 0;
  __syncthreads();
  if (attnc::elect_one()) atomicAdd(&elected, 1);
  const int wg = attnc::warpgroup_index();
  if (wg == 0) {
    attnc::warpgroup_reg_dealloc<24>();
    data[threadIdx.x] = 3 * threadIdx.x + 1;
    data[threadIdx.x + 128] = 5 * threadIdx.x + 2;
    attnc::named_barrier_arrive(1, 384);  // the data is there
  } else {
    attnc::warpgroup_reg_alloc<240>();
    attnc::named_barrier_sync(1, 384);
    const int t = threadIdx.x - 128;  // 0..255 over both consumers
    out[t] = data[t] * wg;
    attnc::named_barrier_sync(2, 256);  // both consumers only
    if (t == 0) out[256] = elected;
  }
}
)");
  ATTNC_LOAD_OR_SKIP(m, cubin);
  const auto o = run_ints(m, "attnc_test_roles", 384, 257, 0xff);
  for (int t = 0; t < 256; ++t) {
    const int wg = 1 + t / 128, want = (t < 128 ? 3 * t + 1 : 5 * (t - 128) + 2) * wg;
    ASSERT_EQ(o[t], want) << t;
  }
  EXPECT_EQ(o[256], 12);  // one lane in each of 12 warps
}

}  // namespace
}  // namespace attnc
