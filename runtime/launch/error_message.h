// Error text from pieces (strings and numbers), assembled only when a check fails: argument checks
// run on every call, so a passing check must not allocate.
#pragma once

#include <string>
#include <type_traits>

namespace attnc {

namespace detail {
inline void append(std::string& s, const char* p) { s += p; }
inline void append(std::string& s, const std::string& p) { s += p; }
template <class T>
requires std::is_arithmetic_v<T>
void append(std::string& s, T v) { s += std::to_string(v); }
}  // namespace detail

template <class... Parts>
std::string message(const Parts&... parts) {
  std::string s;
  (detail::append(s, parts), ...);
  return s;
}

}  // namespace attnc
