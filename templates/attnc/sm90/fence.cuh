// Ordering between the generic proxy (ordinary loads and stores) and the async proxy (TMA and
// wgmma's shared-memory reads): shared memory written by ordinary stores that TMA or wgmma read
// next needs this fence in each writing thread, before the barrier that hands the data over.
#pragma once

namespace attnc {

__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

}  // namespace attnc
