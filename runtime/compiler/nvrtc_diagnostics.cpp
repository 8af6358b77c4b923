#include "runtime/compiler/nvrtc_diagnostics.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string_view>

#include "generator/emit/embedded_templates.h"

namespace attnc::detail {
namespace {

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return lines;
}

std::string excerpt(std::string_view text, int line) {
  const auto lines = split_lines(text);
  if (line < 1 || line > static_cast<int>(lines.size())) return {};
  std::string out;
  const int first = std::max(1, line - 1), last = std::min(static_cast<int>(lines.size()), line + 1);
  for (int i = first; i <= last; ++i) {
    char prefix[32];
    std::snprintf(prefix, sizeof prefix, "%s%5d | ", i == line ? "  > " : "    ", i);
    out += prefix;
    out += lines[i - 1];
    out += '\n';
  }
  return out;
}

// "name(LINE): error: ..." or "name(LINE): catastrophic error: ..."; false for anything else.
bool parse_error_line(std::string_view l, std::string& file, int& line) {
  const auto close = l.find("): ");
  if (close == std::string_view::npos) return false;
  const auto rest = l.substr(close + 3);
  if (!(rest.starts_with("error") || rest.starts_with("catastrophic error") || rest.starts_with("fatal error")))
    return false;
  const auto open = l.rfind('(', close);
  if (open == std::string_view::npos || open == 0 || open + 1 == close) return false;
  const auto digits = l.substr(open + 1, close - open - 1);
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) return false;
  file = std::string(l.substr(0, open));
  line = std::stoi(std::string(digits));
  return true;
}

}  // namespace

std::vector<ErrorLocation> error_locations(const std::string& log, const std::string& program_name,
                                           const std::string& source, size_t limit) {
  std::vector<ErrorLocation> out;
  for (auto l : split_lines(log)) {
    if (out.size() >= limit) break;
    ErrorLocation loc;
    if (!parse_error_line(l, loc.file, loc.line)) continue;
    const bool seen = std::any_of(out.begin(), out.end(),
                                  [&](const ErrorLocation& e) { return e.file == loc.file && e.line == loc.line; });
    if (seen) continue;
    if (loc.file == program_name) {
      loc.excerpt = excerpt(source, loc.line);
    } else {
      for (const auto& f : embedded_templates())
        if (f.path == loc.file) loc.excerpt = excerpt(f.text, loc.line);
    }
    out.push_back(std::move(loc));
  }
  return out;
}

}  // namespace attnc::detail
