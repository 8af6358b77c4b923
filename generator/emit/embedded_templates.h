// The CUDA headers under templates/, embedded at build time (cmake/EmbedFiles.cmake) and handed to
// NVRTC as in-memory headers, so the runtime needs neither a source tree nor nvcc.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace attnc {

struct EmbeddedFile {
  std::string_view path;  // relative to templates/, e.g. "attnc/families/attention_sm80.cuh"
  std::string_view text;
};

const std::vector<EmbeddedFile>& embedded_templates();

// Hash over every embedded path and text: part of every kernel key, so a template change
// invalidates old cubins.
const std::string& templates_hash();

}  // namespace attnc
