// The version-1 schema reader. Internal.
#pragma once

#include "generator/spec/spec_reader.h"

namespace attnc::spec_detail {

// Reads every field of the top-level mapping into `spec`, reporting type and range errors of
// single fields; leaves defaults where a field is absent or bad.
void read_spec(Reader& r, const YAML::Node& root, Spec& spec);

}  // namespace attnc::spec_detail
