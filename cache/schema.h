// Internal: the schema, its version and the migrations that lead to it.
//
// The version lives in PRAGMA user_version (in the file header, so it can be read before any
// table is trusted) and the application_id marks the file as ours. Migration N turns a version
// N-1 database into version N; all pending ones run in one transaction, so a database is always
// at exactly one version. To change the schema: append a migration, bump kVersion, update
// required_tables() and the row SQL in rows.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cache/sql.h"

namespace attnc::schema {

inline constexpr int kVersion = 2;
inline constexpr std::int32_t kApplicationId = 0x6174746e;  // "attn"

struct Migration {
  int version;  // the version this migration produces
  const char* description;
  void (*apply)(sql::Conn& conn);
};
const std::vector<Migration>& migrations();

// Read-write: creates a fresh database or migrates an old one. Read-only: only checks.
// Throws StoreError(Schema) for a newer schema or a file that is not an attnc cache.
void ensure(sql::Conn& conn, bool read_only);

int version(sql::Conn& conn);

// The Schema error for an SQLite file that is not an attnc cache.
[[noreturn]] void not_ours(const std::string& path, std::int64_t application_id);

// Tables and columns the current version must have (what verify() checks).
struct Table {
  const char* name;
  std::vector<const char*> columns;
};
const std::vector<Table>& required_tables();

}  // namespace attnc::schema
