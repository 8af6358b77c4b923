// Shared-memory barriers (mbarrier) that count thread arrivals and, for TMA, bytes in flight.
// A barrier completes a phase when its expected arrivals have arrived and every expected byte has
// landed; phases alternate parity 0, 1, 0, ... A consumer of stage s in round r waits on parity
// r & 1; a producer refilling it waits on the opposite parity of the consumers' "empty" barrier,
// which a freshly initialised barrier already satisfies (the phase before 0 counts as complete).
#pragma once

#include "attnc/core/ptx.cuh"

namespace attnc {

// One thread initialises; the others may use the barrier after a block-wide sync.
__device__ __forceinline__ void mbar_init(u64* bar, int arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(arrivals) : "memory");
}

// Makes initialised barriers visible to the async proxy (TMA) before it signals them.
__device__ __forceinline__ void mbar_fence_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

__device__ __forceinline__ void mbar_arrive(u64* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)) : "memory");
}

// The producer's arrival for a TMA stage: one arrival plus `bytes` the copies will complete. The
// overloads on a 32-bit shared address serve loops that keep many barriers' addresses in few
// registers (a generic pointer takes two: the paged prefill_sm90 loader).
__device__ __forceinline__ void mbar_arrive_expect_tx(u32 bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(u64* bar, u32 bytes) { mbar_arrive_expect_tx(smem_u32(bar), bytes); }

// True once the phase of parity `parity` has completed (a bounded wait in hardware).
__device__ __forceinline__ bool mbar_try_wait(u32 bar, int parity) {
  u32 done;
  asm volatile(
      "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
  return done != 0;
}
__device__ __forceinline__ bool mbar_try_wait(u64* bar, int parity) { return mbar_try_wait(smem_u32(bar), parity); }

template <class Bar>  // u64* or a 32-bit shared address
__device__ __forceinline__ void mbar_wait(Bar bar, int parity) {
  while (!mbar_try_wait(bar, parity)) {
  }
}

}  // namespace attnc
