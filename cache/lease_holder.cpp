#include "cache/lease_holder.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <fstream>

namespace attnc::lease_holder {

const std::string& this_host() {
  static const std::string host = [] {
    char buf[256] = {};
    if (gethostname(buf, sizeof buf - 1) != 0) return std::string("?");
    return std::string(buf);
  }();
  return host;
}

bool pid_alive(std::int64_t pid) {
  if (pid <= 0 || pid > INT_MAX) return false;
  if (kill(static_cast<pid_t>(pid), 0) != 0) return errno == EPERM;  // EPERM: alive, not ours
  // A dead but unreaped process (zombie) still answers kill(); /proc tells it apart.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  auto paren = line.rfind(')');
  if (paren != std::string::npos && paren + 2 < line.size()) {
    char state = line[paren + 2];
    if (state == 'Z' || state == 'X') return false;
  }
  return true;
}

bool gone(const std::string& host, std::int64_t pid) { return host == this_host() && !pid_alive(pid); }

}  // namespace attnc::lease_holder
