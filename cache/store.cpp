// Opening a store: location checks, connection setup, the connection pool.
#include "cache/store.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>

#include "cache/cache_path.h"
#include "cache/file_state.h"
#include "cache/reserve.h"
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

// Decides, before any write, whether the file may be opened as a cache at all (see file_state.h).
// Returns whether this process created the file (then its first connection sets how it is laid out;
// several processes creating one cache at once must not all take the write lock for that).
bool check_contents(const std::string& path, OpenMode mode, int busy_timeout_ms) {
  const file_state::State st = file_state::inspect(path, busy_timeout_ms);
  switch (st.kind) {
    case file_state::Kind::NotADatabase:
      throw StoreError(StoreErrc::Corrupt, path,
                       "file is not a database (it has no SQLite header) (run `attnc cache verify`; delete the "
                       "file to start afresh)");
    case file_state::Kind::Foreign: schema::not_ours(path, st.application_id);
    case file_state::Kind::Empty:
      if (mode == OpenMode::ReadOnly)
        throw StoreError(StoreErrc::Schema, path, "is not an attnc cache yet (empty); open it read-write once to create it");
      return false;
    case file_state::Kind::Missing: {
      if (mode == OpenMode::ReadOnly) return false;
      int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd >= 0) ::close(fd);
      return fd >= 0;
    }
    case file_state::Kind::Ours: return false;
  }
  return false;
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

std::unique_ptr<sql::Conn> Store::Impl::connect(bool new_file) const {
  const int busy = static_cast<int>(options.busy_timeout.count());
  auto c = writable() ? std::make_unique<sql::Conn>(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, busy)
                      : file_state::open_reader(path, busy, true);
  // No mmap: a file truncated under a mapping raises SIGBUS instead of an error we can report.
  c->exec("PRAGMA mmap_size = 0", "configure connection");
  // Extra b-tree sanity checks, so a damaged page is reported rather than misread.
  c->exec("PRAGMA cell_size_check = ON", "configure connection");
  if (writable()) {
    // Only on a new file, before its first page is written (the WAL switch writes it): gc then
    // gives freed pages back with no VACUUM, which a full disk could not run. On an existing file
    // this pragma would take the write lock, so it is not even tried there.
    if (new_file) c->exec("PRAGMA auto_vacuum = INCREMENTAL", "configure connection");
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
  const bool new_file = check_contents(path, options.mode, static_cast<int>(options.busy_timeout.count()));
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->options = options;
  auto conn = impl->connect(new_file);
  schema::ensure(*conn, options.mode == OpenMode::ReadOnly);
  impl->idle.push_back(std::move(conn));
  if (impl->writable()) reserve::ensure(path, options.reserve_bytes);
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
bool Store::read_only() const { return !impl_->writable(); }

}  // namespace attnc
