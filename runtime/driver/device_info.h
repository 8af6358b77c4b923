// What the dispatcher needs to know of a GPU: enough to key tuning records, plan kernels for its
// arch and pick split counts. Taken from a live Device, or written by hand so that selection and
// kernel builds run on a machine without a GPU (tests, offline cache warming).
#pragma once

#include <string>

namespace attnc {

class Device;

struct DeviceInfo {
  std::string name;  // as the driver reports it, e.g. "NVIDIA H200"
  std::string arch;  // what we compile for, e.g. "sm_90a"
  int sm_count = 0;
  int driver_version = 0;  // cuDriverGetVersion, e.g. 13000

  static DeviceInfo of(const Device&);
  bool operator==(const DeviceInfo&) const = default;
};

}  // namespace attnc
