// load_spec: a spec file's bytes, read only from a regular file and never more than the size
// limit, so a FIFO, /dev/zero or a huge file is refused at once instead of blocking or filling
// memory.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "generator/spec/spec_detail.h"

namespace attnc {
namespace {
using namespace spec_detail;

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Spec load_spec(const std::string& path) {
  auto fail = [&](const std::string& message) -> Spec {
    throw SpecError({Diagnostic{path, 0, 0, "", message}});
  };
  auto cannot_read = [&] { return fail(cat("cannot read the spec file: ", std::strerror(errno))); };
  // O_NONBLOCK: opening a FIFO must not wait for a writer before fstat can refuse it.
  const Fd f{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (f.fd < 0) return cannot_read();
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) return cannot_read();
  if (!S_ISREG(st.st_mode))
    return fail(cat("is ", kind_of(st.st_mode), ", not a spec file; allowed: a regular file"));
  if (std::size_t(st.st_size) > kMaxSpecBytes)
    return fail(cat("the file is ", st.st_size, " bytes; ", size_limit()));
  // Stop one chunk past the limit: the file may have grown since fstat, or report size 0 (/proc).
  std::string text;
  char chunk[65536];
  while (text.size() <= kMaxSpecBytes) {
    const ssize_t n = ::read(f.fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return cannot_read();
    if (n == 0) break;
    text.append(chunk, std::size_t(n));
  }
  if (text.size() > kMaxSpecBytes)
    return fail(cat("the file is more than ", kMaxSpecBytes, " bytes; ", size_limit()));
  return parse_spec(text, path);
}

}  // namespace attnc
