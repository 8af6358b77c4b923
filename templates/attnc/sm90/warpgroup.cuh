// Warpgroups (4 consecutive warps, the unit that issues wgmma) and what warp-specialised kernels
// do with them: move registers between producer and consumer warpgroups (setmaxnreg), meet at
// named barriers, elect one lane.
#pragma once

#include "attnc/core/ptx.cuh"

namespace attnc {

constexpr int kWarpgroupThreads = 128;

// The warpgroup of the calling thread, as a warp-uniform value (the shuffle tells the compiler
// so, which keeps role branches free of per-thread divergence).
__device__ __forceinline__ int warpgroup_index() {
  return __shfl_sync(0xffffffffu, int(threadIdx.x) / kWarpgroupThreads, 0);
}

// setmaxnreg: every warp of a warpgroup executes it with the same count. It takes effect only
// when the kernel has a register cap at entry (__launch_bounds__(threads, 1)); ptxas warns
// (C7508) when it cannot honour it.
template <int REGS>
__device__ __forceinline__ void warpgroup_reg_alloc() {
  static_assert(REGS % 8 == 0 && REGS >= 24 && REGS <= 256, "setmaxnreg takes a multiple of 8 in [24, 256]");
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REGS));
}
template <int REGS>
__device__ __forceinline__ void warpgroup_reg_dealloc() {
  static_assert(REGS % 8 == 0 && REGS >= 24 && REGS <= 256, "setmaxnreg takes a multiple of 8 in [24, 256]");
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGS));
}

// Named barriers 1..15 (0 is __syncthreads). `threads` counts every thread that syncs or arrives,
// a multiple of 32. sync waits for the count; arrive counts itself and goes on.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// True in exactly one active lane of the warp (all lanes must call it).
__device__ __forceinline__ bool elect_one() {
  u32 pred;
  asm volatile(
      "{\n .reg .b32 r;\n .reg .pred p;\n elect.sync r|p, 0xffffffff;\n selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(pred));
  return pred != 0;
}

}  // namespace attnc
