// The one YAML document of a spec text, read with yaml-cpp in bounded time and memory whatever the
// bytes (docs/spec.md "Parser"). Internal to the spec reader.
#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string_view>

#include "generator/spec/spec_detail.h"

namespace attnc::spec_detail {

// The root node of the text's single document. On a YAML syntax error, an empty text, a second
// document, nesting deeper than kMaxSpecNesting or more than kMaxSpecNodes values it reports one
// located error to `diags` and returns nullopt.
std::optional<YAML::Node> load_document(std::string_view text, Diags& diags);

}  // namespace attnc::spec_detail
