// Chain stamps: a diagnostic build of prefill_sm90 that prices each phase of a consumer warp's
// per-tile chain in SM clock cycles (docs/kernels-int8.md, "The chain in cycles"). Off unless the
// kernel is compiled with ATTNC_CHAIN_STAMPS defined (ATTNC_NVRTC_DEFINES=ATTNC_CHAIN_STAMPS in the
// environment of attnc: runtime/compiler/nvrtc_compiler.cpp); the default kernels hold no trace of it.
//
// Each consumer warp reads clock64 after every phase of its steady-state steps (tile 1 on; the
// first tile and the last P·V are not counted) and adds the difference to that phase's register
// counter. At the end lane 0 adds its counters to a global table (attnc_chain_cycles: the phases'
// cycles, then the steps); after each launch the host prints the mean cycles per warp and step of
// each phase and zeroes the table (runtime/driver/chain_stamps.cpp).
// The stamps are scheduling fences of a kind (ptxas keeps instructions on their side of a clock
// read), so the stamped kernel runs slower than the real one: compare its total with the real
// kernel's period; the phases' shares are what it measures.
#pragma once

#include "attnc/core/ptx.cuh"

namespace attnc {

enum ChainPhase {
  kPhaseToken,    // the GEMM-issue token (ping-pong partner)
  kPhaseKFull,    // the K tile's full barrier
  kPhaseIssue,    // issue Q·Kᵀ(i), wait V(i-1)'s barrier, issue P·V(i-1), pass the token
  kPhaseQkWait,   // wgmma wait for Q·Kᵀ(i)
  kPhaseScale,    // int8: s32 -> f32 times the key scales (16-bit: nothing)
  kPhaseLogits,   // release K, score transform, mask
  kPhaseMax,      // row max, quad shuffles, rescale factors
  kPhaseExp,      // exp2 and the row sums
  kPhasePvWait,   // wgmma wait for P·V(i-1), release V
  kPhaseRescale,  // O *= rescale
  kPhasePack,     // P -> 16-bit A operand
  kChainPhases
};

#ifdef ATTNC_CHAIN_STAMPS
// C linkage: the host finds it by this name (cuModuleGetGlobal).
extern "C" {
__device__ unsigned long long attnc_chain_cycles[kChainPhases + 1];  // + steps
}

struct ChainStamps {
  u32 acc[kChainPhases];
  u32 steps;
  unsigned long long last;

  __device__ static unsigned long long now() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%clock64;\n" : "=l"(t)::"memory");
    return t;
  }
  __device__ ChainStamps() : steps(0), last(now()) {
#pragma unroll
    for (int i = 0; i < kChainPhases; ++i) acc[i] = 0;
  }
  __device__ __forceinline__ void begin() { last = now(); }  // before a step's first phase
  __device__ __forceinline__ void mark(ChainPhase p) {
    const unsigned long long t = now();
    acc[p] += u32(t - last);
    last = t;
  }
  __device__ __forceinline__ void step_done() { ++steps; }

  // Lane 0 of each consumer warp, once, at the end: the warp's counters into the launch's table,
  // which the host reads and clears after the launch (runtime/driver/chain_stamps.cpp). No print
  // here: a call anywhere in the kernel serialises its wgmma (ptxas C7510).
  __device__ void add() const {
    if (threadIdx.x % 32 != 0) return;
#pragma unroll
    for (int i = 0; i < kChainPhases; ++i) atomicAdd(&attnc_chain_cycles[i], (unsigned long long)acc[i]);
    atomicAdd(&attnc_chain_cycles[kChainPhases], (unsigned long long)steps);
  }
};
#else
struct ChainStamps {
  __device__ __forceinline__ void begin() {}
  __device__ __forceinline__ void mark(ChainPhase) {}
  __device__ __forceinline__ void step_done() {}
  __device__ __forceinline__ void add() const {}
};
#endif

// The softmax's hook between the row maxima and the exponentials (OnlineSoftmax::update_rows): a
// stamp, and (kSplits) both rows' maxima before the exponentials so the stamp divides the phases.
struct MaxDone {
  ChainStamps& st;
#ifdef ATTNC_CHAIN_STAMPS
  static constexpr bool kSplits = true;
#else
  static constexpr bool kSplits = false;
#endif
  __device__ void operator()() const { st.mark(kPhaseMax); }
};

}  // namespace attnc
