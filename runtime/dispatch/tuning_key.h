// The identity of a tuning record for one (spec, device, kind, shape bucket). The tuner writes
// records under this key and the dispatcher looks them up under it, so both call this one function.
#pragma once

#include <string>

#include "cache/records.h"
#include "generator/plan/plan.h"
#include "runtime/dispatch/shape_bucket.h"

namespace attnc {

class Device;
struct DeviceInfo;

// device = Device::name(), arch = Device::arch(), sm_count, driver_version = the driver's integer
// version as text (e.g. "13000"), nvrtc_version = nvrtc_version() (what kernel records carry),
// mode = tuning_mode(kind), bucket = bucket.label().
TuningKey tuning_key(const DeviceInfo&, const std::string& spec_id, KernelKind, const ShapeBucket&);
TuningKey tuning_key(const Device&, const std::string& spec_id, KernelKind, const ShapeBucket&);

}  // namespace attnc
