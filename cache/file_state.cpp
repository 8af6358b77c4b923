#include "cache/file_state.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "cache/schema.h"

namespace attnc::file_state {
namespace {

constexpr char kMagic[] = "SQLite format 3";  // 16 bytes with its NUL

std::int64_t be32(const unsigned char* p) {
  return static_cast<std::int32_t>((std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) |
                                   (std::uint32_t(p[2]) << 8) | std::uint32_t(p[3]));
}

struct RawHeader {
  bool sqlite = false, wal = false;
  std::int64_t user_version = 0, application_id = 0;
};

RawHeader read_raw(const std::string& path) {
  RawHeader h;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return h;  // unreadable: SQLite's open reports it
  unsigned char b[100];
  ssize_t n = ::pread(fd, b, sizeof b, 0);
  ::close(fd);
  if (n != static_cast<ssize_t>(sizeof b) || std::memcmp(b, kMagic, sizeof kMagic) != 0) return h;
  h.sqlite = true;
  h.wal = b[18] == 2 || b[19] == 2;  // file format write/read versions: 2 is WAL
  h.user_version = be32(b + 60);
  h.application_id = be32(b + 68);
  return h;
}

std::string parent_dir(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

// RFC 3986 percent-encoding for a file: URI; '/' stays as it is.
std::string file_uri(const std::string& path, const char* query) {
  std::string uri = "file:";
  for (unsigned char ch : path) {
    if (std::isalnum(ch) || std::strchr("/-._~", ch)) {
      uri += static_cast<char>(ch);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", ch);
      uri += buf;
    }
  }
  return uri + "?" + query;
}

std::int64_t scalar_i64(sql::Conn& c, const char* sql) {
  std::string v = c.scalar(sql, "read database header");
  return v.empty() ? 0 : std::stoll(v);
}

}  // namespace

bool wal_mode(const std::string& path) { return read_raw(path).wal; }

bool file_writable(const std::string& path) { return ::access(path.c_str(), W_OK) == 0; }
bool dir_writable(const std::string& path) { return ::access(parent_dir(path).c_str(), W_OK | X_OK) == 0; }

std::unique_ptr<sql::Conn> open_reader(const std::string& path, int busy_timeout_ms, bool ours) {
  const bool writable_place = dir_writable(path) && file_writable(path);
  if (ours && writable_place) {
    auto c = std::make_unique<sql::Conn>(path, SQLITE_OPEN_READWRITE, busy_timeout_ms);
    c->exec("PRAGMA query_only = ON", "configure connection");
    return c;
  }
  std::error_code ec;
  const bool no_wal_file = !std::filesystem::exists(path + "-wal", ec);
  struct stat st {};
  const bool no_write_bits = ::stat(path.c_str(), &st) == 0 && (st.st_mode & 0222) == 0;
  if (read_raw(path).wal && no_wal_file && (!dir_writable(path) || no_write_bits || !ours))
    return std::make_unique<sql::Conn>(path, SQLITE_OPEN_READONLY, busy_timeout_ms, file_uri(path, "immutable=1"));
  return std::make_unique<sql::Conn>(path, SQLITE_OPEN_READONLY, busy_timeout_ms);
}

State inspect(const std::string& path, int busy_timeout_ms) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {Kind::Missing, 0};
  if (st.st_size == 0) return {Kind::Empty, 0};
  const RawHeader h = read_raw(path);
  if (!h.sqlite) return {Kind::NotADatabase, 0};
  if (h.application_id == schema::kApplicationId) return {Kind::Ours, h.application_id};
  // attnc writes user_version and application_id in one transaction: either alone is not ours.
  if (h.application_id != 0 || h.user_version != 0) return {Kind::Foreign, h.application_id};
  // Neither: a cache being created right now (its first commit may still be in the -wal file),
  // an empty SQLite file, or another program's database. Look through SQLite, read-only.
  auto c = open_reader(path, busy_timeout_ms, false);
  sql::Txn snapshot(*c, sql::Txn::Deferred);
  const std::int64_t version = scalar_i64(*c, "PRAGMA user_version");
  const std::int64_t app = scalar_i64(*c, "PRAGMA application_id");
  const std::int64_t objects = scalar_i64(*c, "SELECT count(*) FROM sqlite_master");
  snapshot.commit();
  if (app == schema::kApplicationId) return {Kind::Ours, app};
  if (version == 0 && app == 0 && objects == 0) return {Kind::Empty, 0};
  return {Kind::Foreign, app};
}

}  // namespace attnc::file_state
