// Compile-time feature kinds, one declaration for the spec (host) and the templates (device): the
// emitter writes these names into a kernel's traits. Builtin types only: NVRTC includes this too.
#pragma once

namespace attnc {

enum class MaskKind : int { none = 0, causal = 1, sliding_window = 2 };  // features/mask.cuh
enum class Alibi : int { none = 0, linear = 1, sqrt = 2 };               // features/alibi.cuh
enum class LseOut : int { none = 0, base_e = 1, base_2 = 2 };            // features/lse.cuh
// int8 attention (attention-semantics.md §5.2): int8 Q, K and V (the fork's quant_type 1), or int8
// Q and K with a 16-bit V (quant_type 2). features/int8_scales.cuh.
enum class Int8Mode : int { none = 0, qkv = 1, qk = 2 };

}  // namespace attnc
