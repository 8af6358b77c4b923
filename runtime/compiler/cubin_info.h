// What a cubin (an ELF image) says about one of its kernels, read without a GPU: whether the entry
// exists and its register count (the EIATTR_REGCOUNT attribute of .nv.info). Used when NVRTC
// served a compile from its own cache and ptxas printed no report.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace attnc {

struct CubinKernelInfo {
  int registers = -1;      // -1: the cubin did not say
  int frame_bytes = -1;    // per-thread stack frame (local memory: spills or local arrays)
};

// nullopt when the cubin is not a 64-bit ELF or has no function symbol of that name.
std::optional<CubinKernelInfo> cubin_kernel_info(const std::vector<char>& cubin, const std::string& entry);

}  // namespace attnc
