#include "tuner/budget.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace attnc {

std::chrono::milliseconds parse_duration(const std::string& text, const std::string& flag) {
  auto fail = [&](const std::string& why) -> std::chrono::milliseconds {
    throw std::invalid_argument(flag + ": '" + text + "' " + why +
                                "; expected a duration such as 90s, 10m, 1h or 1h30m (units s, m, h)");
  };
  if (text.empty()) return fail("is empty");
  double total_s = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t start = pos;
    while (pos < text.size() && (std::isdigit(static_cast<unsigned char>(text[pos])) || text[pos] == '.')) ++pos;
    if (pos == start) return fail("is not a duration");
    double value = 0;
    try {
      std::size_t used = 0;
      value = std::stod(text.substr(start, pos - start), &used);
      if (used != pos - start) return fail("is not a duration");
    } catch (const std::exception&) {
      return fail("is not a duration");
    }
    if (pos == text.size()) return fail("has no unit after " + text.substr(start));
    const char unit = text[pos++];
    const double scale = unit == 's' ? 1 : unit == 'm' ? 60 : unit == 'h' ? 3600 : -1;
    if (scale < 0) return fail(std::string("has an unknown unit '") + unit + "'");
    total_s += value * scale;
  }
  if (!(total_s > 0) || total_s > 7 * 24 * 3600.0) return fail("is out of range (more than 0, at most 7 days)");
  return std::chrono::milliseconds(static_cast<long long>(std::llround(total_s * 1000)));
}

std::string format_duration(std::chrono::milliseconds d) {
  const long long ms = d.count() < 0 ? 0 : d.count();
  if (ms < 1000) return std::to_string(ms) + "ms";
  const long long s = (ms + 500) / 1000;
  char buf[32];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%llds", s);
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
  return buf;
}

}  // namespace attnc
