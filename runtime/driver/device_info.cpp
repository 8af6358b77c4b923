#include "runtime/driver/device_info.h"

#include "runtime/driver/device.h"

namespace attnc {

DeviceInfo DeviceInfo::of(const Device& d) { return {d.name(), d.arch(), d.sm_count(), d.driver_version()}; }

}  // namespace attnc
