// The one exception the cache throws. Callers decide by code(): Locked may be retried, the rest
// mean "serve without the cache" (compile in memory) and tell the user what() says.
#pragma once

#include <stdexcept>
#include <string>

namespace attnc {

enum class StoreErrc {
  Open,      // file or directory missing, not openable
  ReadOnly,  // file, directory or connection not writable
  Locked,    // another connection held the lock past the busy timeout
  Full,      // disk full or the database size cap reached; the database is unchanged
  Corrupt,   // not a database, malformed pages, or a cubin whose checksum does not match
  Schema,    // not an attnc cache, or a schema newer than this build knows
  Timeout,   // waited too long for another process's build (get_or_build)
  Invalid,   // the caller passed something the cache refuses (empty key, non-ELF cubin, bad JSON)
  Io,        // any other I/O failure reported by the OS
  Other,
};

const char* to_string(StoreErrc code);

class StoreError : public std::runtime_error {
 public:
  // what() reads "attnc cache <path>: <message>".
  StoreError(StoreErrc code, const std::string& path, const std::string& message, int sqlite_code = 0);

  StoreErrc code() const noexcept { return code_; }
  const std::string& path() const noexcept { return path_; }
  // what() without the "attnc cache <path>: " prefix.
  const std::string& message() const noexcept { return message_; }
  // SQLite's extended result code, 0 when the error did not come from SQLite.
  int sqlite_code() const noexcept { return sqlite_code_; }

 private:
  StoreErrc code_;
  std::string path_, message_;
  int sqlite_code_;
};

}  // namespace attnc
