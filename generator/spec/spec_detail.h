// Internals shared by the spec reader (spec_parse.cpp) and the cross-field checks
// (spec_validate.cpp). Not part of the public API.
#pragma once

#include <initializer_list>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "generator/spec/spec_parse.h"

namespace attnc::spec_detail {

struct Loc {
  int line = 0, column = 0;  // 1-based; 0 = unknown
};

// Concatenates anything streamable: cat("got ", n, " heads").
template <class... Ts>
std::string cat(const Ts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

// What head_dim and head_dim_v allow without mla (checked in spec_validate.cpp, where mla is
// known), and the end of their "out of range" messages.
inline constexpr const char* kDimRule = "a multiple of 8 in 8..256";
inline constexpr const char* kDimRange =
    "a multiple of 8 in 8..256 (larger QK dims only through mla)";

// Collects every error of one file.
class Diags {
 public:
  explicit Diags(std::string file) : file_(std::move(file)) {}
  void error(Loc at, std::string path, std::string message);
  bool empty() const { return list_.empty(); }
  // In file order (stable for errors at the same spot).
  std::vector<Diagnostic> sorted() const;

 private:
  std::string file_;
  std::vector<Diagnostic> list_;
};

// Where each written field sits in the file and which ones failed to read, so that cross-field
// checks point at the node the user wrote and skip values that never arrived (no cascades).
class FieldMap {
 public:
  Loc top;  // the top-level mapping: where errors about missing fields point
  void written(const std::string& path, Loc at) { where_.emplace(path, at); }
  void failed(const std::string& path) { failed_.insert(path); }
  bool present(const std::string& path) const { return where_.count(path) != 0; }
  // True unless the field or one of its parents failed to read.
  bool ok(const std::string& path) const;
  // The first written field among `paths`, else `top`.
  Loc at(std::initializer_list<std::string_view> paths) const;

 private:
  std::map<std::string, Loc, std::less<>> where_;
  std::set<std::string> failed_;
};

// "allowed: at most 262144 bytes (256 KiB)": the end of the message for a text or file too large.
std::string size_limit();

std::size_t edit_distance(std::string_view a, std::string_view b);  // case-insensitive
// The name in `names` closest to `got`, if one is close enough to be a likely typo; else nullptr.
const char* closest(std::string_view got, std::span<const char* const> names);
// "did you mean 'x'? " when one of `names` is close to `got`, else "".
std::string did_you_mean(std::string_view got, std::span<const char* const> names);
std::string join(std::span<const char* const> names, std::string_view sep = ", ");

// Fills in defaults that depend on other fields (num_kv_heads, head_dim_v, MLA dims, the
// block-sparse head range and step), normalises what does not change the math, and reports
// contradictions between fields.
void resolve_and_validate(Spec& spec, const FieldMap& fields, Diags& diags);
// Resolves the sentinels documented in spec.h (active_head_end -1, head_sliding_step 0, MLA head
// dims) and normalises what cannot change the result (sorted tuning sets, the LSE base without an
// LSE, window sides of a non-window mask), so equal layers get equal canonical forms.
Spec normalised(Spec spec);

}  // namespace attnc::spec_detail
