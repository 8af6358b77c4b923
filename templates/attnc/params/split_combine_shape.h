// Launch shape of the split-KV combine entry, shared by the host (grid sizing, argument checks)
// and the template. Builtin types only: NVRTC includes this too.
#pragma once

namespace attnc {

constexpr int kMaxSplits = 128;          // as FlashAttention: more splits than this never pay
constexpr int kCombineThreads = 128;     // four warps, one (token, q head) row each
constexpr int kCombineRowsPerBlock = kCombineThreads / 32;

}  // namespace attnc
