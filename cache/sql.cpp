#include "cache/sql.h"

#include <utility>

namespace attnc::sql {

StoreErrc classify(int sqlite_code) {
  switch (sqlite_code & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return StoreErrc::Locked;
    case SQLITE_FULL: return StoreErrc::Full;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB: return StoreErrc::Corrupt;
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH: return StoreErrc::ReadOnly;
    case SQLITE_CANTOPEN: return StoreErrc::Open;
    case SQLITE_IOERR: return StoreErrc::Io;
    case SQLITE_CONSTRAINT:
    case SQLITE_MISMATCH:
    case SQLITE_TOOBIG:
    case SQLITE_RANGE: return StoreErrc::Invalid;
    default: return StoreErrc::Other;
  }
}

namespace {
// What to do about it, for the errors a user can act on.
const char* hint(StoreErrc code) {
  switch (code) {
    case StoreErrc::Locked:
      return " (another connection held the database lock past the busy timeout; retry later)";
    case StoreErrc::Full:
      return " (the database is unchanged; free disk space or run `attnc cache gc`)";
    case StoreErrc::Corrupt: return " (run `attnc cache verify`; delete the file to start afresh)";
    default: return "";
  }
}
}  // namespace

Conn::Conn(const std::string& path, int flags, int busy_timeout_ms, const std::string& uri)
    : path_(path), busy_timeout_ms_(busy_timeout_ms) {
  if (!uri.empty()) flags |= SQLITE_OPEN_URI;
  int rc = sqlite3_open_v2(uri.empty() ? path.c_str() : uri.c_str(), &db_, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw StoreError(classify(rc), path_, "cannot open: " + msg, rc);
  }
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, busy_timeout_ms_);
}

Conn::~Conn() {
  for (auto& [sql, stmt] : statements_) sqlite3_finalize(stmt);
  sqlite3_close_v2(db_);
}

void Conn::fail(int rc, std::string_view what) const {
  StoreErrc code = classify(rc);
  std::string msg(what);
  msg += ": ";
  msg += db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  if (hints_) msg += hint(code);
  throw StoreError(code, path_, msg, rc);
}

Query Conn::query(const char* sql, std::string_view what) {
  auto it = statements_.find(sql);
  if (it == statements_.end()) {
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) fail(rc, what);
    it = statements_.emplace(sql, stmt).first;
  }
  return Query(*this, it->second, false, what);
}

Query Conn::prepare(const std::string& sql, std::string_view what) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr);
  if (rc != SQLITE_OK) fail(rc, what);
  return Query(*this, stmt, true, what);
}

void Conn::exec(const char* sql, std::string_view what) {
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) fail(rc, what);
}

std::string Conn::scalar(const char* sql, std::string_view what) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql, -1, &stmt, nullptr);
  if (rc != SQLITE_OK) fail(rc, what);
  Query q(*this, stmt, true, what);
  return q.step() ? q.text(0) : std::string();
}

void Conn::set_busy_timeout(int ms) {
  busy_timeout_ms_ = ms;
  sqlite3_busy_timeout(db_, ms);
}

Query::Query(Conn& conn, sqlite3_stmt* stmt, bool owned, std::string_view what)
    : conn_(&conn), stmt_(stmt), owned_(owned), what_(what) {}

Query::Query(Query&& other) noexcept
    : conn_(other.conn_), stmt_(std::exchange(other.stmt_, nullptr)), owned_(other.owned_),
      what_(std::move(other.what_)) {}

Query::~Query() {
  if (!stmt_) return;
  if (owned_) {
    sqlite3_finalize(stmt_);
  } else {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
}

void Query::check_bind(int rc) {
  if (rc != SQLITE_OK) conn_->fail(rc, what_);
}

Query& Query::bind(int index, std::string_view value) {
  check_bind(sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT,
                                 SQLITE_UTF8));
  return *this;
}

Query& Query::bind(int index, std::int64_t value) {
  check_bind(sqlite3_bind_int64(stmt_, index, value));
  return *this;
}

Query& Query::bind(int index, double value) {
  check_bind(sqlite3_bind_double(stmt_, index, value));
  return *this;
}

Query& Query::bind_blob(int index, std::span<const char> value) {
  // A zero-length blob must still be a blob, not NULL: pass a non-null pointer.
  static const char empty = 0;
  check_bind(sqlite3_bind_blob64(stmt_, index, value.empty() ? &empty : value.data(), value.size(),
                                 SQLITE_TRANSIENT));
  return *this;
}

Query& Query::bind_null(int index) {
  check_bind(sqlite3_bind_null(stmt_, index));
  return *this;
}

bool Query::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  conn_->fail(rc, what_);
}

void Query::run() {
  while (step()) {
  }
}

std::string Query::text(int col) const {
  const unsigned char* p = sqlite3_column_text(stmt_, col);
  return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(stmt_, col))
           : std::string();
}

std::vector<char> Query::blob(int col) const {
  const char* p = static_cast<const char*>(sqlite3_column_blob(stmt_, col));
  int n = sqlite3_column_bytes(stmt_, col);
  return p ? std::vector<char>(p, p + n) : std::vector<char>();
}

Txn::Txn(Conn& conn, Mode mode) : conn_(conn) {
  conn_.exec(mode == Immediate ? "BEGIN IMMEDIATE" : "BEGIN", "begin transaction");
}

Txn::~Txn() {
  // SQLite may already have rolled back on its own (SQLITE_FULL, IOERR): only roll back when a
  // transaction is still open.
  if (open_ && !sqlite3_get_autocommit(conn_.raw())) sqlite3_exec(conn_.raw(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Txn::commit() {
  conn_.exec("COMMIT", "commit");
  open_ = false;
}

}  // namespace attnc::sql
