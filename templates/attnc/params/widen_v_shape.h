// Launch shape of prefill_sm90's `<entry>_widen_v` (v_prewiden: int8_qkv's V widened once per
// call), shared by the host (grid sizing) and the template. Builtin types only: NVRTC includes it.
#pragma once

namespace attnc {

constexpr int kWidenVThreads = 256;  // one 16-byte piece of an int8 V row per thread

}  // namespace attnc
