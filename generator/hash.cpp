#include "generator/hash.h"

#include <xxhash.h>

#include <cstdint>
#include <cstdio>

namespace attnc {
namespace {
std::string to_hex(XXH128_hash_t h) {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return buf;
}
}  // namespace

std::string hash_hex(std::string_view data) { return to_hex(XXH3_128bits(data.data(), data.size())); }

Hasher::Hasher() : state_(XXH3_createState()) { XXH3_128bits_reset(static_cast<XXH3_state_t*>(state_)); }
Hasher::~Hasher() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }

Hasher& Hasher::add(std::string_view field) {
  auto* s = static_cast<XXH3_state_t*>(state_);
  const std::uint64_t n = field.size();
  XXH3_128bits_update(s, &n, sizeof n);
  XXH3_128bits_update(s, field.data(), field.size());
  return *this;
}

std::string Hasher::hex() const { return to_hex(XXH3_128bits_digest(static_cast<XXH3_state_t*>(state_))); }

}  // namespace attnc
