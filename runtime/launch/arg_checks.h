// Argument checks shared by the op calls (merge, cache_write, cascade, lse_correct): each failure is a BadCall
// that starts with the op's name and says what was given and what is allowed.
#pragma once

#include <initializer_list>
#include <string>

#include "runtime/launch/attention_args.h"
#include "runtime/launch/error_message.h"

namespace attnc {

// A stride as given, or the packed default where the caller passed 0.
inline long long or_default(long long stride, long long dflt) { return stride ? stride : dflt; }

class ArgCheck {
 public:
  explicit ArgCheck(std::string op) : op_(std::move(op)) {}

  // The message pieces are joined only when the check fails (see error_message.h).
  template <class... Parts>
  void require(bool ok, const Parts&... what) const {
    if (!ok) fail(message(what...));
  }
  [[noreturn]] void fail(const std::string& what) const;

  // Not null and `align`-byte aligned.
  void pointer(const char* name, const void* p, int align) const;
  // Each stride > 0 and a multiple of `multiple` elements of `element_bytes` (vector accesses).
  void strides(const char* name, std::initializer_list<long long> s, int multiple, int element_bytes) const;
  // Rows of `width` contiguous elements at sum_k i_k * stride_k (i_k < count_k) must not overlap:
  // an output that overlaps itself would be written by two threads. `dims` holds {name, count,
  // stride}.
  // A [tokens, heads, width] tensor moved in 16-byte pieces: (row, head) strides as given or (0)
  // packed, resolved into row_out / head_out; the pointer `align`-byte aligned; both strides
  // multiples of 8 elements of `element_bytes`.
  void token_rows(const char* name, const void* p, int align, int element_bytes, long long row, long long head,
                  long long heads, long long width, long long& row_out, long long& head_out) const;
  struct Dim {
    const char* name;
    long long count, stride;
  };
  void disjoint(const char* name, long long width, std::initializer_list<Dim> dims) const;
  // An LSE's (token, head) float strides: both given (positive), or both 0 for vLLM's
  // [num_heads, num_tokens]; the resolved pair goes to token_out, head_out.
  void lse_strides(const char* name, long long token, long long head, int num_tokens, long long& token_out,
                   long long& head_out) const;
  // The optional output LSE of merge and lse_correct: when given, aligned, its strides resolved as
  // above and its (token, head) elements distinct; when null, no strides either.
  void optional_output_lse(const void* output_lse, long long token, long long head, int num_tokens, int heads,
                           long long& token_out, long long& head_out) const;
  // The head size of merge's and lse_correct's outputs: `head_size` (0: the spec's head_dim_v), a
  // multiple of 8 (16-byte chunks) that is head_dim_v or, for an MLA spec, kv_lora_rank (the absorbed
  // decode's outputs are rows of the latent V, 512 wide for DeepSeek; prefill's are head_dim_v).
  int output_head_size(int head_size, const Spec& spec, int head_dim_v) const;

 private:
  std::string op_;
};

}  // namespace attnc
