// Internal: a thin RAII layer over the SQLite C API. Every failure becomes a StoreError that names
// the database path, the operation and SQLite's own message.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cache/error.h"

namespace attnc::sql {

StoreErrc classify(int sqlite_code);

class Query;

// One connection. Not thread-safe: used by one thread at a time (the Store's pool sees to that).
class Conn {
 public:
  // flags: SQLITE_OPEN_* (NOMUTEX is added). `uri`, when given, is what SQLite opens (a file: URI
  // with parameters such as immutable=1); `path` still names the database in messages. Throws StoreError.
  Conn(const std::string& path, int flags, int busy_timeout_ms, const std::string& uri = "");
  ~Conn();
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  sqlite3* raw() const { return db_; }
  const std::string& path() const { return path_; }

  // A statement prepared once per connection and reused; `sql` must have static storage
  // duration (a literal), its address is the cache key.
  // `what` (also static) names the operation in error messages.
  Query query(const char* sql, std::string_view what);
  // A one-off statement (for SQL built at run time).
  Query prepare(const std::string& sql, std::string_view what);
  // Runs SQL that returns no rows of interest (pragmas, DDL, transaction control).
  void exec(const char* sql, std::string_view what);
  // A single-row, single-value query (pragmas): the value as text, "" when no row.
  std::string scalar(const char* sql, std::string_view what);

  void set_busy_timeout(int ms);
  // Whether error messages end with advice for a cache path (verify it, delete it). Off where the
  // file is being checked or is someone's input, not a cache in use.
  void set_hints(bool on) { hints_ = on; }
  int busy_timeout() const { return busy_timeout_ms_; }

  [[noreturn]] void fail(int rc, std::string_view what) const;

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
  int busy_timeout_ms_;
  bool hints_ = true;
  std::unordered_map<const char*, sqlite3_stmt*> statements_;
};

// A bound statement; resets (cached) or finalises (one-off) itself when it goes out of scope.
class Query {
 public:
  Query(Conn& conn, sqlite3_stmt* stmt, bool owned, std::string_view what);
  Query(Query&& other) noexcept;
  Query& operator=(Query&&) = delete;
  ~Query();

  Query& bind(int index, std::string_view value);
  Query& bind(int index, const char* value) { return bind(index, std::string_view(value)); }
  Query& bind(int index, std::int64_t value);
  Query& bind(int index, int value) { return bind(index, static_cast<std::int64_t>(value)); }
  Query& bind(int index, double value);
  Query& bind_blob(int index, std::span<const char> value);
  Query& bind_null(int index);

  bool step();  // true: a row is ready; false: done. Throws StoreError.
  void run();   // steps to completion
  int changes() const { return sqlite3_changes(sqlite3_db_handle(stmt_)); }

  bool is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::string text(int col) const;
  std::int64_t i64(int col) const { return sqlite3_column_int64(stmt_, col); }
  double f64(int col) const { return sqlite3_column_double(stmt_, col); }
  std::vector<char> blob(int col) const;

 private:
  void check_bind(int rc);
  Conn* conn_;
  sqlite3_stmt* stmt_;
  bool owned_;
  std::string what_;
};

// BEGIN ... COMMIT; rolls back when left without commit() (an exception on the way).
class Txn {
 public:
  enum Mode { Deferred, Immediate };
  Txn(Conn& conn, Mode mode);
  ~Txn();
  Txn(const Txn&) = delete;
  Txn& operator=(const Txn&) = delete;
  void commit();

 private:
  Conn& conn_;
  bool open_ = true;
};

}  // namespace attnc::sql
