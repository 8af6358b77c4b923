// Opening a store: location checks, connection setup, the connection pool.
#include "cache/store.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>

#include "cache/cache_path.h"
#include "cache/schema.h"
#include "cache/store_impl.h"

namespace attnc {
namespace fs = std::filesystem;

namespace {

// SQLite's own messages for these cases ("unable to open database file") do not say which part
// of the path is at fault; check first and name it.
void check_location(const std::string& path, OpenMode mode) {
  if (path.empty()) throw StoreError(StoreErrc::Invalid, "<empty path>", "no database path given");
  std::error_code ec;
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  if (!fs::exists(dir, ec))
    throw StoreError(StoreErrc::Open, path, "directory " + dir.string() + " does not exist");
  if (!fs::is_directory(dir, ec))
    throw StoreError(StoreErrc::Open, path, dir.string() + " is not a directory");
  bool exists = fs::exists(path, ec);
  if (exists && fs::is_directory(path, ec))
    throw StoreError(StoreErrc::Open, path, "is a directory, not a database file");
  if (mode == OpenMode::ReadOnly) {
    if (!exists) throw StoreError(StoreErrc::Open, path, "does not exist");
    if (access(path.c_str(), R_OK) != 0)
      throw StoreError(StoreErrc::ReadOnly, path, std::string("is not readable: ") + std::strerror(errno));
    return;
  }
  // WAL needs <db>-wal and <db>-shm beside the database, so the directory must be writable too.
  if (access(dir.c_str(), W_OK | X_OK) != 0)
    throw StoreError(StoreErrc::ReadOnly, path,
                     "directory " + dir.string() + " is not writable (" + std::strerror(errno) +
                         "); SQLite needs to create the database and its -wal/-shm files there. "
                         "Choose another cache path or open it read-only");
  if (exists && access(path.c_str(), R_OK | W_OK) != 0)
    throw StoreError(StoreErrc::ReadOnly, path,
                     std::string("file is not writable (") + std::strerror(errno) + "); open it read-only");
}

// Switching to WAL needs a moment of exclusive access; several processes creating the file at
// once can see SQLITE_BUSY here without the busy handler being consulted, so retry ourselves.
void enable_wal(sql::Conn& c) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(c.busy_timeout());
  for (;;) {
    try {
      c.scalar("PRAGMA journal_mode = WAL", "enable WAL");
      return;
    } catch (const StoreError& e) {
      if (e.code() != StoreErrc::Locked || std::chrono::steady_clock::now() > deadline) throw;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace

std::unique_ptr<sql::Conn> Store::Impl::connect() const {
  int flags = writable() ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY;
  auto c = std::make_unique<sql::Conn>(path, flags, static_cast<int>(options.busy_timeout.count()));
  // No mmap: a file truncated under a mapping raises SIGBUS instead of an error we can report.
  c->exec("PRAGMA mmap_size = 0", "configure connection");
  // Extra b-tree sanity checks, so a damaged page is reported rather than misread.
  c->exec("PRAGMA cell_size_check = ON", "configure connection");
  if (writable()) {
    enable_wal(*c);
    // In WAL mode NORMAL never corrupts; a power cut may only lose the last commits.
    c->exec("PRAGMA synchronous = NORMAL", "configure connection");
    if (options.max_db_bytes > 0) {
      std::int64_t page = std::stoll(c->scalar("PRAGMA page_size", "read page size"));
      std::string sql = "PRAGMA max_page_count = " + std::to_string(std::max<std::int64_t>(1, options.max_db_bytes / page));
      c->scalar(sql.c_str(), "set size cap");
    }
  }
  return c;
}

Store::Impl::Borrowed Store::Impl::borrow() {
  {
    std::lock_guard lock(mutex);
    if (!idle.empty()) {
      auto c = std::move(idle.back());
      idle.pop_back();
      return Borrowed(*this, std::move(c));
    }
  }
  return Borrowed(*this, connect());
}

Store::Impl::Borrowed::~Borrowed() {
  std::lock_guard lock(impl_.mutex);
  impl_.idle.push_back(std::move(conn_));
}

Store Store::open(const std::string& path, const OpenOptions& options) {
  check_location(path, options.mode);
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->options = options;
  auto conn = impl->connect();
  schema::ensure(*conn, options.mode == OpenMode::ReadOnly);
  impl->idle.push_back(std::move(conn));
  return Store(std::move(impl));
}

Store Store::open_default(const OpenOptions& options) {
  std::string dir = default_cache_dir();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw StoreError(StoreErrc::Open, default_cache_path(), "cannot create directory " + dir + ": " + ec.message());
  return open(default_cache_path(), options);
}

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;
Store::~Store() = default;

const std::string& Store::path() const { return impl_->path; }

}  // namespace attnc
