// The bulk tensor copy engine (TMA): a box of a global tensor, described by a tensor map the host
// encodes (cuTensorMapEncodeTiled) and passes as a __grid_constant__ kernel parameter, lands in
// shared memory and completes bytes on an mbarrier. Coordinates are in elements, innermost first;
// parts of the box outside the tensor are zero-filled (and still counted as bytes).
#pragma once

#include "attnc/core/ptx.cuh"
#include "attnc/params/tensor_maps.h"

namespace attnc {

// The first 1024-byte aligned address of dynamic shared memory: TMA's 128-byte swizzle repeats
// every 1024 bytes, so swizzled tiles start on that boundary (the planner adds the 1024 of slack).
__device__ __forceinline__ unsigned char* tma_aligned_smem(unsigned char* smem_raw) {
  const u32 raw = smem_u32(smem_raw);
  return smem_raw + (((raw + 1023) & ~1023u) - raw);
}

__device__ __forceinline__ u64 tma_map_address(const TmaDescriptor* map) { return reinterpret_cast<u64>(map); }

// Fetch the descriptor into the TMA unit's cache ahead of the first copy.
__device__ __forceinline__ void tma_prefetch_descriptor(const TmaDescriptor* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(tma_map_address(map)) : "memory");
}

__device__ __forceinline__ void tma_load_2d(void* dst, const TmaDescriptor* map, u64* bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], "
      "[%2];\n" ::"r"(smem_u32(dst)),
      "l"(tma_map_address(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1)
      : "memory");
}

__device__ __forceinline__ void tma_load_3d(void* dst, const TmaDescriptor* map, u64* bar, int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], "
      "[%2];\n" ::"r"(smem_u32(dst)),
      "l"(tma_map_address(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

// Shared -> global through a tensor map; the writes outside the tensor are dropped. Completion is
// tracked per thread in bulk groups: commit, then wait until the source may be reused.
__device__ __forceinline__ void tma_store_3d(const TmaDescriptor* map, const void* src, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4}], [%1];\n" ::"l"(
                   tma_map_address(map)),
               "r"(smem_u32(src)), "r"(c0), "r"(c1), "r"(c2)
               : "memory");
}
__device__ __forceinline__ void tma_store_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void tma_store_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}

}  // namespace attnc
