#include "runtime/driver/env_defines.h"

#include <cctype>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace attnc {
namespace {

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

}  // namespace

std::vector<std::string> env_defines() {
  std::vector<std::string> out;
  const char* env = std::getenv("ATTNC_NVRTC_DEFINES");
  if (env == nullptr) return out;
  std::istringstream words(env);
  for (std::string w; words >> w;) {
    if (!is_identifier(w.substr(0, w.find('='))))
      throw std::invalid_argument("ATTNC_NVRTC_DEFINES: '" + w +
                                  "' is not a macro definition; allowed: space-separated NAME or NAME=VALUE words, "
                                  "NAME a C identifier (e.g. ATTNC_CHAIN_STAMPS)");
    out.push_back(w);
  }
  return out;
}

}  // namespace attnc
