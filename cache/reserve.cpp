#include "cache/reserve.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

namespace attnc::reserve {

std::string path_for(const std::string& db) { return db + "-reserve"; }

void ensure(const std::string& db, std::int64_t bytes) {
  if (bytes <= 0) return;
  const std::string path = path_for(db);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && st.st_blocks * 512 >= bytes) return;
  // Only where at least half as much again stays free: the reserve must not be what fills the disk.
  struct statvfs fs {};
  const std::string dir = db.find('/') == std::string::npos ? "." : db.substr(0, db.rfind('/') + 1);
  if (::statvfs(dir.c_str(), &fs) != 0 || static_cast<std::int64_t>(fs.f_bavail * fs.f_frsize) < bytes + bytes / 2) return;
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  // Real blocks, not a sparse file: a sparse reserve would free nothing when deleted.
  if (::posix_fallocate(fd, 0, bytes) != 0) (void)::ftruncate(fd, 0);  // no room: none rather than part
  ::close(fd);
}

bool release(const std::string& db) {
  const std::string path = path_for(db);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  return ::unlink(path.c_str()) == 0 && st.st_blocks > 0;
}

}  // namespace attnc::reserve
