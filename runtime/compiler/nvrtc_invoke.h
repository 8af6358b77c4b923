// One NVRTC program run end to end (create, compile, log, cubin or PTX, destroy) with the embedded
// template headers, on a worker thread with a deadline. Internal to the NVRTC service.
#pragma once

#include <nvrtc.h>

#include <chrono>
#include <string>
#include <vector>

namespace attnc::detail {

struct NvrtcRequest {
  std::string program_name;          // the name NVRTC's log uses for the generated source
  std::string source;
  std::vector<std::string> options;
  bool want_cubin = true;            // false: PTX
};

struct NvrtcOutcome {
  nvrtcResult status = NVRTC_SUCCESS;
  bool timed_out = false;            // no result: the deadline passed first
  std::string log;
  std::vector<char> output;          // cubin bytes, or PTX text without its NUL
  double elapsed_ms = 0;             // steady clock, create to output (the timeout when timed out)
};

// timeout <= 0 compiles on the calling thread with no deadline.
NvrtcOutcome run_nvrtc(NvrtcRequest request, std::chrono::milliseconds timeout);

// The embedded headers as NVRTC wants them: names ("attnc/params/params.h") and NUL-terminated texts.
struct NvrtcHeaders {
  std::vector<std::string> names, texts;
  std::vector<const char*> name_ptrs, text_ptrs;
};
const NvrtcHeaders& nvrtc_headers();

}  // namespace attnc::detail
