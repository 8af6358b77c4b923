// Compile-time feature kinds, one declaration for the spec (host) and the templates (device): the
// emitter writes these names into a kernel's traits. Builtin types only: NVRTC includes this too.
#pragma once

namespace attnc {

enum class MaskKind : int { none = 0, causal = 1, sliding_window = 2 };  // features/mask.cuh
enum class Alibi : int { none = 0, linear = 1, sqrt = 2 };               // features/alibi.cuh
enum class LseOut : int { none = 0, base_e = 1, base_2 = 2 };            // features/lse.cuh

}  // namespace attnc
