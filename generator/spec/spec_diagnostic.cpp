// Diagnostics: formatting, collection, and the did-you-mean helper.
#include <algorithm>
#include <cctype>

#include "generator/spec/spec_detail.h"

namespace attnc {
namespace {
std::string join_lines(const std::vector<Diagnostic>& d) {
  std::string out;
  for (const auto& x : d) {
    if (!out.empty()) out += '\n';
    out += x.str();
  }
  return out;
}
}  // namespace

std::string Diagnostic::str() const {
  std::string out = file;
  if (line > 0) out += spec_detail::cat(':', line, ':', column);
  out += ": error: ";
  if (!path.empty()) out += path + ": ";
  return out + message;
}

SpecError::SpecError(std::vector<Diagnostic> d)
    : std::runtime_error(join_lines(d)), diags_(std::move(d)) {}

namespace spec_detail {

void Diags::error(Loc at, std::string path, std::string message) {
  list_.push_back(Diagnostic{file_, at.line, at.column, std::move(path), std::move(message)});
}

std::vector<Diagnostic> Diags::sorted() const {
  auto out = list_;
  std::stable_sort(out.begin(), out.end(), [](const Diagnostic& a, const Diagnostic& b) {
    return std::pair(a.line, a.column) < std::pair(b.line, b.column);
  });
  return out;
}

bool FieldMap::ok(const std::string& path) const {
  for (const auto& f : failed_) {
    if (path.compare(0, f.size(), f) != 0) continue;
    if (path.size() == f.size() || path[f.size()] == '.' || path[f.size()] == '[') return false;
  }
  return true;
}

Loc FieldMap::at(std::initializer_list<std::string_view> paths) const {
  for (auto p : paths)
    if (auto it = where_.find(p); it != where_.end()) return it->second;
  return top;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // Levenshtein over one rolling row.
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      const std::size_t next = std::min({row[j] + 1, row[j - 1] + 1, diag + (same ? 0 : 1)});
      diag = row[j];
      row[j] = next;
    }
  }
  return row[b.size()];
}

const char* closest(std::string_view got, std::span<const char* const> names) {
  // Close enough: up to a third of the word wrong (at least 2 edits), and fewer edits than
  // either word is long, so typos and case slips get a suggestion and unrelated words do not.
  const std::size_t limit = std::max<std::size_t>(2, got.size() / 3);
  const char* best = nullptr;
  std::size_t best_d = limit + 1;
  for (const char* n : names) {
    const std::size_t d = edit_distance(got, n);
    if (d < best_d && d < got.size() && d < std::string_view(n).size()) best = n, best_d = d;
  }
  return best;
}

std::string did_you_mean(std::string_view got, std::span<const char* const> names) {
  const char* best = closest(got, names);
  return best ? cat("did you mean '", best, "'? ") : std::string();
}

std::string join(std::span<const char* const> names, std::string_view sep) {
  std::string out;
  for (const char* n : names) {
    if (!out.empty()) out += sep;
    out += n;
  }
  return out;
}

}  // namespace spec_detail
}  // namespace attnc
