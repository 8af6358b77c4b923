// TMA tensor maps (CUtensorMap, 128 bytes) for 16-bit tensors, encoded on the host through the
// driver table (cuTensorMapEncodeTiled; no link against libcuda). Encoding reads no device memory
// and allocates nothing, so a launch path may build maps per call and stay graph-capturable.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>

namespace attnc {

// A strided view of 16-bit elements: dims innermost first (dims[0] contiguous), strides in
// elements for dims 1..rank-1, and the box one copy moves. Swizzle 128B needs box[0] * 2 <= 128.
struct TensorMapView {
  const void* base = nullptr;
  int rank = 0;                        // 1..5
  std::uint64_t dims[5] = {};
  std::uint64_t strides[5] = {};       // strides[i]: elements between consecutive indices of dim i (i >= 1)
  std::uint32_t box[5] = {};
  CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
};

// Throws std::invalid_argument naming `what` and the rule when the view cannot be a tensor map
// (base not 16-byte aligned, a stride not a multiple of 16 bytes, a box over 256 or wider than the
// swizzle), CudaError when the driver refuses it.
CUtensorMap encode_tensor_map(const TensorMapView& view, const std::string& what);

// Why the view cannot be encoded, or "" (the checks of encode_tensor_map, without the driver).
std::string tensor_map_problem(const TensorMapView& view);

}  // namespace attnc
