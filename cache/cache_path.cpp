#include "cache/cache_path.h"

#include <cstdlib>

namespace attnc {
namespace {
std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : std::string();
}
}  // namespace

std::string default_cache_dir() {
  if (auto d = env("ATTNC_CACHE_DIR"); !d.empty()) return d;
  if (auto d = env("XDG_CACHE_HOME"); !d.empty()) return d + "/attnc";
  if (auto d = env("HOME"); !d.empty()) return d + "/.cache/attnc";
  return ".attnc-cache";
}

std::string default_cache_path() { return default_cache_dir() + "/attnc.db"; }

}  // namespace attnc
