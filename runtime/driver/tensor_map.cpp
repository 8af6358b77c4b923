#include "runtime/driver/tensor_map.h"

#include <stdexcept>

#include "runtime/driver/cuda_driver.h"

namespace attnc {
namespace {

int swizzle_bytes(CUtensorMapSwizzle s) {
  switch (s) {
    case CU_TENSOR_MAP_SWIZZLE_32B: return 32;
    case CU_TENSOR_MAP_SWIZZLE_64B: return 64;
    case CU_TENSOR_MAP_SWIZZLE_128B: return 128;
    default: return 0;
  }
}

}  // namespace

std::string tensor_map_problem(const TensorMapView& v) {
  if (v.rank < 1 || v.rank > 5) return "rank " + std::to_string(v.rank) + " (1 to 5 allowed)";
  if (reinterpret_cast<std::uintptr_t>(v.base) % 16 != 0) return "base address not 16-byte aligned";
  for (int i = 0; i < v.rank; ++i) {
    if (v.dims[i] == 0 || v.dims[i] > (1ull << 32)) return "dim " + std::to_string(i) + " is " + std::to_string(v.dims[i]);
    if (v.box[i] == 0 || v.box[i] > 256) return "box dim " + std::to_string(i) + " is " + std::to_string(v.box[i]) + " (1 to 256 allowed)";
    if (i > 0 && (v.strides[i] * 2) % 16 != 0)
      return "stride of dim " + std::to_string(i) + " is " + std::to_string(v.strides[i]) +
             " elements (a multiple of 8 elements, 16 bytes, is needed)";
  }
  const int sw = swizzle_bytes(v.swizzle);
  if (sw && v.box[0] * 2 > std::uint32_t(sw))
    return "box rows of " + std::to_string(v.box[0] * 2) + " bytes exceed the " + std::to_string(sw) + "-byte swizzle";
  return "";
}

CUtensorMap encode_tensor_map(const TensorMapView& v, const std::string& what) {
  if (auto problem = tensor_map_problem(v); !problem.empty())
    throw std::invalid_argument(what + ": cannot describe it as a TMA tensor map: " + problem);
  cuuint64_t dims[5], strides[4];
  cuuint32_t box[5], element_strides[5];
  for (int i = 0; i < v.rank; ++i) {
    dims[i] = v.dims[i];
    box[i] = v.box[i];
    element_strides[i] = 1;
    if (i > 0) strides[i - 1] = v.strides[i] * 2;  // bytes
  }
  CUtensorMap map;
  ATTNC_CU(TensorMapEncodeTiled, &map, CU_TENSOR_MAP_DATA_TYPE_UINT16, cuuint32_t(v.rank), const_cast<void*>(v.base),
           dims, strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, v.swizzle,
           CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return map;
}

}  // namespace attnc
