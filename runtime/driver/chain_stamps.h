// Chain stamps (templates/attnc/families/prefill_sm90_stamps.cuh): kernels compiled with
// ATTNC_CHAIN_STAMPS (ATTNC_NVRTC_DEFINES) count each consumer phase's clock cycles into a
// __device__ table; after each launch of such a kernel the host prints the table's means to
// stderr and zeroes it. A diagnostic: it synchronises the context after every launch.
#pragma once

#include <cuda.h>

#include <string>

#include "runtime/driver/cuda_driver.h"

namespace attnc {

// Whether ATTNC_NVRTC_DEFINES names ATTNC_CHAIN_STAMPS (read once).
bool chain_stamps_requested();

// After a launch of `f`: when its module holds the table, waits for the launch, prints
// "chain-stamps ENTRY steps N cycles/step T: PHASE C ..." and zeroes the table; else nothing.
void report_chain_stamps(const DriverApi& api, CUfunction f, const std::string& entry);

}  // namespace attnc
