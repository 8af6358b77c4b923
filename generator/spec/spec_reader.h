// Typed, located access to yaml-cpp nodes for the spec reader. Internal.
#pragma once

#include <yaml-cpp/yaml.h>

#include <map>
#include <optional>
#include <string>

#include "generator/spec/spec_detail.h"

namespace attnc::spec_detail {

Loc loc_of(const YAML::Node& n);
// How a node reads in "got ..." messages: 'abc', the string "128", a list, a mapping, nothing.
std::string describe(const YAML::Node& n);

// A value with its dotted path ("kv_cache.page_size", "tuning.warps[1]") and where to point.
struct Field {
  YAML::Node value;
  std::string path;
  Loc at;
};

// Each accessor reports its own error (and marks the field failed) and returns false, so one bad
// field never hides the next one.
class Reader {
 public:
  Reader(Diags& d, FieldMap& f) : diags(d), fields(f) {}

  void fail(const Field& f, const std::string& message);
  void fail_at(Loc at, const std::string& path, const std::string& message);
  // A required field that is absent, unless it was misspelt (already reported with a suggestion).
  void missing(Loc at, const std::string& path, const std::string& message);

  // The fields of a mapping by key. Reports non-string keys, duplicates and unknown keys (with a
  // suggestion); records where each known field was written.
  std::map<std::string, Field> mapping(const YAML::Node& map, const std::string& prefix,
                                       std::span<const char* const> allowed);
  bool is_map(const Field& f, std::string_view example);
  bool is_seq(const Field& f, std::string_view example);
  Field item(const Field& seq, std::size_t i) const;

  bool integer(const Field& f, long long& out);
  // An integer in [lo, hi]; `allowed` describes the valid values for the message.
  bool int_in(const Field& f, long long lo, long long hi, int& out, std::string_view allowed);
  bool boolean(const Field& f, bool& out);
  bool number(const Field& f, double& out);  // finite
  bool text(const Field& f, std::string& out);
  // One of `names`, e.g. an enum spelling.
  bool word(const Field& f, std::span<const char* const> names, std::string& out);

  template <class E>
  bool enumeration(const Field& f, std::optional<E> (*parse)(std::string_view), E& out) {
    std::string s;
    if (!word(f, enum_names(E{}), s)) return false;
    out = *parse(s);
    return true;
  }

  Diags& diags;
  FieldMap& fields;
};

}  // namespace attnc::spec_detail
