#include "runtime/dispatch/tuning_key.h"

#include "runtime/driver/device.h"
#include "runtime/driver/device_info.h"
#include "runtime/compiler/nvrtc_compiler.h"

namespace attnc {

TuningKey tuning_key(const DeviceInfo& dev, const std::string& spec_id, KernelKind kind, const ShapeBucket& bucket) {
  TuningKey k;
  k.spec_id = spec_id;
  k.device = dev.name;
  k.arch = dev.arch;
  k.sm_count = dev.sm_count;
  k.driver_version = std::to_string(dev.driver_version);
  k.nvrtc_version = nvrtc_version();
  k.mode = tuning_mode(kind);
  k.bucket = bucket.label();
  return k;
}

TuningKey tuning_key(const Device& dev, const std::string& spec_id, KernelKind kind, const ShapeBucket& bucket) {
  return tuning_key(DeviceInfo::of(dev), spec_id, kind, bucket);
}

}  // namespace attnc
