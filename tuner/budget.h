// Durations on the command line: `--budget 90s`, `10m`, `1h`, `1h30m`, `2.5m`.
#pragma once

#include <chrono>
#include <string>

namespace attnc {

// Throws std::invalid_argument naming `flag`, what it got and the allowed forms.
std::chrono::milliseconds parse_duration(const std::string& text, const std::string& flag = "--budget");

// "1h05m", "10m", "90s", "750ms": short and readable, for tables and progress lines.
std::string format_duration(std::chrono::milliseconds);

}  // namespace attnc
