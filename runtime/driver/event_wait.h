// Waiting for GPU work with a deadline: a kernel that never finishes must not hang the tuner.
// Polls cuEventQuery instead of blocking in cuEventSynchronize, which cannot be interrupted.
#pragma once

#include <chrono>
#include <stdexcept>
#include <string>

namespace attnc {

class Event;

// The work before the event did not finish in time. The context may be unusable afterwards (the
// kernel may still be running): callers stop launching and report.
class GpuTimeout : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Returns when `event` has completed; throws GpuTimeout naming `what` once `deadline` passes, and
// CudaError when the work failed (e.g. an illegal address).
void wait_event(const Event&, std::chrono::steady_clock::time_point deadline, const std::string& what);

}  // namespace attnc
