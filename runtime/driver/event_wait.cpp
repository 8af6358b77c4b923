#include "runtime/driver/event_wait.h"

#include <thread>

#include "runtime/driver/cuda_driver.h"
#include "runtime/driver/device.h"

namespace attnc {

void wait_event(const Event& event, std::chrono::steady_clock::time_point deadline, const std::string& what) {
  const DriverApi& api = Driver::get().api();
  for (int polls = 0;; ++polls) {
    const CUresult r = api.EventQuery(event.handle());
    if (r == CUDA_SUCCESS) return;
    if (r != CUDA_ERROR_NOT_READY) cu_check(r, "cuEventQuery");
    if (std::chrono::steady_clock::now() > deadline)
      throw GpuTimeout(what + ": the GPU did not finish before the deadline");
    // Spin briefly (short kernels), then sleep so a long wait costs no CPU.
    if (polls > 100) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

}  // namespace attnc
