// libFuzzer target over the spec reader (parse_spec). It fails on a crash, an exception other than
// SpecError, an error without FILE:LINE:COL, an accepted spec whose to_yaml does not read back to
// the same spec, and (through the flags the test passes) on a slow input or a memory blow-up.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string_view>

#include "generator/spec/spec_parse.h"

namespace {

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "spec_fuzzer: %s\n%s\n", what, detail.c_str());
  __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  attnc::Spec spec;
  try {
    spec = attnc::parse_spec(text, "fuzz.yaml");
  } catch (const attnc::SpecError& e) {
    for (const auto& d : e.diagnostics())
      if (d.line <= 0 || d.column <= 0) fail("an error without a location", e.what());
    return 0;
  }
  const std::string printed = attnc::to_yaml(spec);
  try {
    const attnc::Spec again = attnc::parse_spec(printed, "fuzz.yaml");
    if (again.name != spec.name || attnc::spec_id(again) != attnc::spec_id(spec))
      fail("to_yaml read back to another spec", printed);
  } catch (const attnc::SpecError& e) {
    fail("to_yaml of an accepted spec is rejected", printed + e.what());
  }
  return 0;
}
