// Typed accessors over yaml-cpp nodes with located, specific errors.
#include "generator/spec/spec_reader.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace attnc::spec_detail {
namespace {

// yaml-cpp tags: "?" plain scalar, "!" quoted scalar, or an explicit tag such as !!int.
bool quoted(const YAML::Node& n) { return n.Tag() == "!"; }
bool tagged_as(const YAML::Node& n, std::string_view what) {
  return n.Tag() == "?" || n.Tag() == std::string("tag:yaml.org,2002:") + std::string(what);
}

// "tagged as a string (!!str)" for a scalar with an explicit tag; "" for plain and quoted ones.
std::string tag_note(const YAML::Node& n) {
  const std::string& tag = n.Tag();
  if (tag == "?" || tag == "!" || tag.empty()) return "";
  constexpr std::string_view kCore = "tag:yaml.org,2002:";
  if (!tag.starts_with(kCore)) return cat(" tagged ", tag);
  const std::string name = tag.substr(kCore.size());
  constexpr std::pair<const char*, const char*> kKnown[] = {
      {"str", "a string"}, {"int", "an integer"}, {"float", "a number"},
      {"bool", "a boolean"}, {"null", "null"}};
  for (const auto& [short_name, what] : kKnown)
    if (name == short_name) return cat(" tagged as ", what, " (!!", name, ')');
  return cat(" tagged !!", name);
}

// A scalar's text for a message, at most 40 characters.
std::string shortened(std::string s) {
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

enum class IntRead { ok, not_integer, too_large };

// A plain (or !!int) scalar in base 10, optionally signed.
IntRead read_int(const YAML::Node& n, long long& out) {
  if (!n.IsScalar() || quoted(n) || !tagged_as(n, "int")) return IntRead::not_integer;
  std::string_view s = n.Scalar();
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec == std::errc::result_out_of_range) return IntRead::too_large;
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return IntRead::not_integer;
  return IntRead::ok;
}

bool contains(std::span<const char* const> names, std::string_view s) {
  return std::any_of(names.begin(), names.end(), [&](const char* n) { return s == n; });
}

}  // namespace

Loc loc_of(const YAML::Node& n) {
  const YAML::Mark m = n.Mark();
  if (m.is_null() || m.line < 0) return {};
  return {m.line + 1, m.column + 1};  // yaml-cpp counts from 0
}

std::string describe(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Scalar: {
      const std::string s = shortened(n.Scalar());
      return quoted(n) ? cat("the string \"", s, '"') : cat('\'', s, '\'', tag_note(n));
    }
    default:
      return "nothing";
  }
}

void Reader::missing(Loc at, const std::string& path, const std::string& message) {
  if (!fields.present(path) && fields.ok(path)) fail_at(at, path, "missing; " + message);
}

void Reader::fail(const Field& f, const std::string& message) { fail_at(f.at, f.path, message); }

void Reader::fail_at(Loc at, const std::string& path, const std::string& message) {
  diags.error(at, path, message);
  fields.failed(path);
}

std::map<std::string, Field> Reader::mapping(const YAML::Node& map, const std::string& prefix,
                                             std::span<const char* const> allowed) {
  std::map<std::string, Field> out;
  std::map<std::string, Loc> first;
  std::vector<std::string> meant;  // fields that misspelt keys were probably meant to be
  for (auto it = map.begin(); it != map.end(); ++it) {
    const Loc key_at = loc_of(it->first);
    if (!it->first.IsScalar()) {
      diags.error(key_at, prefix,
                  cat("field names must be plain words, got ", describe(it->first)));
      continue;
    }
    const std::string name = it->first.Scalar();
    const std::string path = prefix.empty() ? name : prefix + "." + name;
    if (!contains(allowed, name)) {
      diags.error(key_at, path,
                  cat("unknown field; ", did_you_mean(name, allowed), "allowed: ", join(allowed)));
      if (const char* m = closest(name, allowed)) meant.emplace_back(m);
      continue;
    }
    if (auto f = first.find(name); f != first.end()) {
      diags.error(key_at, path,
                  cat("duplicate field (first written at ", f->second.line, ':', f->second.column,
                      "); write each field once"));
      continue;
    }
    first.emplace(name, key_at);
    // yaml-cpp marks an empty value at the token after it (often the next line): point at the key.
    Loc at = loc_of(it->second);
    if (it->second.IsNull() && (at.line != key_at.line || at.line == 0)) at = key_at;
    out.emplace(name, Field{it->second, path, at});
    fields.written(path, at);
  }
  // A misspelt field is not also "missing": the suggestion already covers it.
  for (const auto& m : meant)
    if (!first.count(m)) fields.failed(prefix.empty() ? m : prefix + "." + m);
  return out;
}

bool Reader::is_map(const Field& f, std::string_view example) {
  if (f.value.IsMap()) return true;
  fail(f, cat("expected a mapping such as ", example, ", got ", describe(f.value)));
  return false;
}

bool Reader::is_seq(const Field& f, std::string_view example) {
  if (f.value.IsSequence()) return true;
  fail(f, cat("expected a list such as ", example, ", got ", describe(f.value)));
  return false;
}

Field Reader::item(const Field& seq, std::size_t i) const {
  const YAML::Node n = seq.value[i];
  const Loc at = loc_of(n);
  return Field{n, cat(seq.path, '[', i, ']'), at.line ? at : seq.at};
}

bool Reader::integer(const Field& f, long long& out) {
  switch (read_int(f.value, out)) {
    case IntRead::ok:
      return true;
    case IntRead::too_large:
      fail(f, cat(describe(f.value), " is too large for an integer"));
      return false;
    case IntRead::not_integer:
      break;
  }
  fail(f, cat("expected an integer, got ", describe(f.value)));
  return false;
}

bool Reader::int_in(const Field& f, long long lo, long long hi, int& out,
                    std::string_view allowed) {
  long long v = 0;
  const IntRead got = read_int(f.value, v);
  if (got == IntRead::not_integer) return integer(f, v);  // reports it
  if (got == IntRead::too_large || v < lo || v > hi) {
    const std::string written = got == IntRead::ok ? cat(v) : shortened(f.value.Scalar());
    fail(f, cat(written, " is out of range; allowed: ", allowed));
    return false;
  }
  out = static_cast<int>(v);
  return true;
}

bool Reader::boolean(const Field& f, bool& out) {
  if (f.value.IsScalar() && !quoted(f.value) && tagged_as(f.value, "bool")) {
    const std::string& s = f.value.Scalar();
    if (s == "true" || s == "True" || s == "TRUE") return out = true, true;
    if (s == "false" || s == "False" || s == "FALSE") return out = false, true;
  }
  fail(f, cat("expected true or false, got ", describe(f.value)));
  return false;
}

bool Reader::number(const Field& f, double& out) {
  const YAML::Node& n = f.value;
  if (n.IsScalar() && !quoted(n) && (tagged_as(n, "float") || tagged_as(n, "int"))) {
    std::string_view s = n.Scalar();
    if (!s.empty() && s.front() == '+') s.remove_prefix(1);
    const std::string_view lower = s.substr(s.starts_with('-') ? 1 : 0);
    if (lower == ".inf" || lower == ".Inf" || lower == ".INF" || lower == ".nan" ||
        lower == ".NaN" || lower == ".NAN") {
      fail(f, cat(describe(n), " is not a finite number"));
      return false;
    }
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    if (ec == std::errc() && end == s.data() + s.size() && !s.empty()) {
      if (std::isfinite(out)) return true;
      fail(f, cat(describe(n), " is not a finite number"));
      return false;
    }
  }
  fail(f, cat("expected a number, got ", describe(n)));
  return false;
}

bool Reader::text(const Field& f, std::string& out) {
  if (f.value.IsScalar()) return out = f.value.Scalar(), true;
  fail(f, cat("expected a string, got ", describe(f.value)));
  return false;
}

bool Reader::word(const Field& f, std::span<const char* const> names, std::string& out) {
  if (!f.value.IsScalar()) {
    fail(f, cat("expected one of ", join(names), "; got ", describe(f.value)));
    return false;
  }
  out = f.value.Scalar();
  if (contains(names, out)) return true;
  fail(f, cat("unknown value ", describe(f.value), "; ", did_you_mean(out, names),
              "allowed: ", join(names)));
  return false;
}

}  // namespace attnc::spec_detail
