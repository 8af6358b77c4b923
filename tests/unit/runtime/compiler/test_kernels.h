// Small real kernels for the NVRTC tests: the shape of what the emitter produces (an extern "C"
// entry over the shared params header), small enough to compile in well under a second.
#pragma once

#include <string>

#include "generator/emit/kernel_source.h"

namespace attnc::test {

// One warp multiplies a 16x16 by a 16x8 fp16 tile with mma.sync (sm_80 and newer) and scales the
// result by params.scale_log2; reads q and k, writes o.
inline KernelSource mma_kernel(const std::string& arch, const std::string& entry = "attnc_test_mma") {
  KernelSource s;
  s.family = "test";
  s.entry = entry;
  s.arch = arch;
  s.source = R"(#include "attnc/params/params.h"

extern "C" __global__ void )" + entry + R"((const attnc::AttentionParams p) {
  const unsigned* a = static_cast<const unsigned*>(p.q);
  const unsigned* b = static_cast<const unsigned*>(p.k);
  float* d = static_cast<float*>(p.o);
  const int lane = threadIdx.x & 31;
  float c0 = 0.f, c1 = 0.f, c2 = 0.f, c3 = 0.f;
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3)
      : "r"(a[lane * 4 + 0]), "r"(a[lane * 4 + 1]), "r"(a[lane * 4 + 2]), "r"(a[lane * 4 + 3]),
        "r"(b[lane * 2 + 0]), "r"(b[lane * 2 + 1]));
  d[lane * 4 + 0] = c0 * p.scale_log2;
  d[lane * 4 + 1] = c1 * p.scale_log2;
  d[lane * 4 + 2] = c2 * p.scale_log2;
  d[lane * 4 + 3] = c3 * p.scale_log2;
}
)";
  return s;
}

// A plain kernel whose body is `body` (a statement list over float* x and int n).
inline KernelSource plain_kernel(const std::string& entry, const std::string& body, const std::string& arch = "sm_80") {
  KernelSource s;
  s.family = "test";
  s.entry = entry;
  s.arch = arch;
  s.source = "#include \"attnc/params/params.h\"\n\nextern \"C\" __global__ void " + entry +
             "(float* x, int n) {\n" + body + "\n}\n";
  return s;
}

// Takes NVRTC seconds: a long loop fully unrolled, every step a data-dependent load and a division.
inline KernelSource slow_kernel(int steps = 1000) {
  return plain_kernel("attnc_test_slow", "  float acc = x[threadIdx.x];\n#pragma unroll\n  for (int i = 0; i < " +
                                             std::to_string(steps) +
                                             "; ++i) acc = acc * x[(i * 7 + threadIdx.x) % n] + __sinf(acc);\n"
                                             "  x[threadIdx.x] = acc;");
}

}  // namespace attnc::test
