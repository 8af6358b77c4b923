// Internal: who holds a build lease, as far as this host can tell: leases name a host and a pid,
// and a pid is only meaningful on its own host.
#pragma once

#include <cstdint>
#include <string>

namespace attnc::lease_holder {

const std::string& this_host();  // gethostname(), "?" when it fails
bool pid_alive(std::int64_t pid);  // on this host; a zombie counts as dead
// A holder on this host whose process is gone: its lease can be taken over (or dropped) at once.
bool gone(const std::string& host, std::int64_t pid);

}  // namespace attnc::lease_holder
