#include "cache/error.h"

namespace attnc {

const char* to_string(StoreErrc code) {
  switch (code) {
    case StoreErrc::Open: return "open";
    case StoreErrc::ReadOnly: return "read-only";
    case StoreErrc::Locked: return "locked";
    case StoreErrc::Full: return "full";
    case StoreErrc::Corrupt: return "corrupt";
    case StoreErrc::Schema: return "schema";
    case StoreErrc::Timeout: return "timeout";
    case StoreErrc::Invalid: return "invalid";
    case StoreErrc::Io: return "io";
    case StoreErrc::Other: return "other";
  }
  return "unknown";
}

StoreError::StoreError(StoreErrc code, const std::string& path, const std::string& message,
                       int sqlite_code)
    : std::runtime_error("attnc cache " + path + ": " + message),
      code_(code),
      path_(path),
      message_(message),
      sqlite_code_(sqlite_code) {}

}  // namespace attnc
