// Internal: wall-clock time as the cache stores it. Timestamps are compared across processes and
// hosts, so they are wall-clock (unix epoch), not steady-clock.
#pragma once

#include <chrono>
#include <cstdint>

namespace attnc {

inline std::int64_t now_seconds() {
  using namespace std::chrono;
  return duration_cast<seconds>(system_clock::now().time_since_epoch()).count();
}

inline std::int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace attnc
