// A launch dimension (grid or block), without the CUDA headers, so argument checking can size
// launches without depending on the driver API.
#pragma once

namespace attnc {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

}  // namespace attnc
