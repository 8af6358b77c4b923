#include "runtime/launch/arg_checks.h"

#include <algorithm>
#include <cstdint>

namespace attnc {

void ArgCheck::fail(const std::string& what) const { throw BadCall(op_ + ": " + what); }

void ArgCheck::pointer(const char* name, const void* p, int align) const {
  require(p != nullptr, name, " is null");
  require(reinterpret_cast<std::uintptr_t>(p) % align == 0, name, " must be ", align, "-byte aligned",
          (align >= 8 ? " (vector access)" : ""));
}

void ArgCheck::strides(const char* name, std::initializer_list<long long> s, int multiple, int element_bytes) const {
  for (long long v : s) {
    require(v > 0, name, " strides must be positive, got ", v);
    require(v % multiple == 0, name, " strides must be multiples of ", multiple, " elements (",
            multiple * element_bytes, " bytes), got ", v);
  }
}

void ArgCheck::token_rows(const char* name, const void* p, int align, int element_bytes, long long row,
                          long long head, long long heads, long long width, long long& row_out,
                          long long& head_out) const {
  row_out = or_default(row, heads * width);
  head_out = or_default(head, width);
  pointer(name, p, align);
  strides(name, {row_out, head_out}, 8, element_bytes);
}

// Sufficient test: taking the dimensions by increasing stride, each stride must clear everything
// the smaller ones reach (one-row dimensions do not count). No allocation unless it fails.
void ArgCheck::disjoint(const char* name, long long width, std::initializer_list<Dim> dims) const {
  constexpr int kMaxDims = 8;
  require(dims.size() <= kMaxDims, name, ": at most ", kMaxDims, " dimensions, got ", dims.size());
  Dim d[kMaxDims]{};
  int n = 0;
  for (const Dim& x : dims)
    if (x.count > 1) d[n++] = x;
  std::stable_sort(d, d + n, [](const Dim& a, const Dim& b) { return a.stride < b.stride; });
  long long reach = width;  // elements covered by one index of the dimensions so far
  for (int i = 0; i < n; ++i) {
    if (d[i].stride < reach) {
      std::string covered = message("rows of ", width, " elements");
      for (int j = 0; j < i; ++j)
        covered += message(" and the ", d[j].name, " stride ", d[j].stride, " (x", d[j].count, ")");
      fail(message(name, " overlaps itself: ", d[i].name, " stride ", d[i].stride, " (x", d[i].count, ") < ", reach,
                   ", the span of ", covered));
    }
    reach += d[i].stride * (d[i].count - 1);
  }
}

void ArgCheck::lse_strides(const char* name, long long token, long long head, int num_tokens, long long& token_out,
                           long long& head_out) const {
  if (token == 0 && head == 0) {
    token_out = 1;
    head_out = num_tokens;
    return;
  }
  require(token > 0 && head > 0, name,
          " strides must both be positive (or both 0 for [num_heads, num_tokens]), got token ", token, ", head ", head);
  token_out = token;
  head_out = head;
}

void ArgCheck::optional_output_lse(const void* output_lse, long long token, long long head, int num_tokens, int heads,
                                   long long& token_out, long long& head_out) const {
  if (!output_lse) {
    require(token == 0 && head == 0, "output_lse strides given but output_lse is null");
    return;
  }
  pointer("output_lse", output_lse, 4);
  lse_strides("output_lse", token, head, num_tokens, token_out, head_out);
  disjoint("output_lse", 1, {{"token", num_tokens, token_out}, {"head", heads, head_out}});
}

int ArgCheck::output_head_size(int head_size, const Spec& spec, int head_dim_v) const {
  require(head_size >= 0 && head_size % 8 == 0, "head_size must be a multiple of 8 (16-byte chunks; 0: the spec's), got ",
          head_size);
  const int d = head_size ? head_size : head_dim_v;
  if (spec.mla.enabled)
    require(d == head_dim_v || d == spec.mla.kv_lora_rank, "head_size ", d, " is neither the spec's head_dim_v ",
            head_dim_v, " nor its kv_lora_rank ", spec.mla.kv_lora_rank, " (MLA absorbed decode's outputs)");
  else
    require(d == head_dim_v, "head_size ", d, " does not match the spec's head_dim_v ", head_dim_v);
  return d;
}

}  // namespace attnc
