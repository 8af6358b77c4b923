// Entry point: spec text in, a complete validated Spec out, or every problem at once.
#include "generator/spec/spec_parse.h"

#include <filesystem>

#include "generator/spec/spec_sections.h"
#include "generator/spec/spec_yaml.h"

namespace attnc {
namespace {
using namespace spec_detail;

std::string stem_of(const std::string& filename) {
  const std::filesystem::path p(filename);
  const auto ext = p.extension();
  return ext == ".yaml" || ext == ".yml" ? p.stem().string() : std::string();
}

}  // namespace

namespace spec_detail {
std::string size_limit() { return cat("allowed: at most ", kMaxSpecBytes, " bytes (256 KiB)"); }
}  // namespace spec_detail

Spec parse_spec(std::string_view yaml_text, const std::string& filename) {
  Diags diags(filename);
  auto fail = [&](Loc at, const std::string& message) -> Spec {
    diags.error(at, "", message);
    throw SpecError(diags.sorted());
  };
  if (yaml_text.size() > kMaxSpecBytes)
    return fail({}, cat("the spec text is ", yaml_text.size(), " bytes; ", size_limit()));

  const std::optional<YAML::Node> doc = load_document(yaml_text, diags);
  if (!doc) throw SpecError(diags.sorted());
  const YAML::Node& root = *doc;
  if (!root.IsMap())
    return fail(loc_of(root),
                cat("the top level must be a mapping of fields (version: 1, head_dim: 128, "
                    "...), got ",
                    describe(root)));

  FieldMap fields;
  fields.top = loc_of(root);
  if (fields.top.line == 0) fields.top = {1, 1};
  Reader reader(diags, fields);
  Spec spec;
  try {
    read_spec(reader, root, spec);
  } catch (const YAML::Exception& e) {  // defensive: accessors should not throw
    diags.error({}, "", cat("YAML error: ", e.what()));
  }
  resolve_and_validate(spec, fields, diags);
  if (!diags.empty()) throw SpecError(diags.sorted());
  if (!fields.present("name")) spec.name = stem_of(filename);
  return spec;
}

}  // namespace attnc
