// Entry points: text or file in, a complete validated Spec out, or every problem at once.
#include "generator/spec/spec_parse.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "generator/spec/spec_sections.h"

namespace attnc {
namespace {
using namespace spec_detail;

// yaml-cpp's messages are terse; name the usual cause of the most common one.
std::string syntax_message(const YAML::ParserException& e, std::string_view text) {
  std::string msg = cat("YAML syntax error: ", e.msg);
  std::size_t start = 0;
  for (int line = 0; line < e.mark.line && start != std::string_view::npos; ++line) {
    start = text.find('\n', start);
    if (start != std::string_view::npos) ++start;
  }
  if (start != std::string_view::npos) {
    const std::string_view line = text.substr(start, text.find('\n', start) - start);
    if (line.find('\t') != std::string_view::npos) msg += " (tabs cannot indent YAML; use spaces)";
  }
  return msg;
}

std::string stem_of(const std::string& filename) {
  const std::filesystem::path p(filename);
  const auto ext = p.extension();
  return ext == ".yaml" || ext == ".yml" ? p.stem().string() : std::string();
}

}  // namespace

Spec parse_spec(std::string_view yaml_text, const std::string& filename) {
  Diags diags(filename);
  auto fail = [&](Loc at, const std::string& message) -> Spec {
    diags.error(at, "", message);
    throw SpecError(diags.sorted());
  };

  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(std::string(yaml_text));
  } catch (const YAML::ParserException& e) {
    const Loc at = e.mark.is_null() ? Loc{} : Loc{e.mark.line + 1, e.mark.column + 1};
    return fail(at, syntax_message(e, yaml_text));
  } catch (const YAML::Exception& e) {
    return fail({}, cat("YAML error: ", e.what()));
  }
  if (docs.empty() || (docs.size() == 1 && docs[0].IsNull()))
    return fail({1, 1}, "empty spec; a spec is a mapping of fields that starts with `version: 1`");
  if (docs.size() > 1)
    return fail(loc_of(docs[1]),
                "a second YAML document; a spec file holds exactly one (remove the `---`)");
  const YAML::Node& root = docs[0];
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

Spec load_spec(const std::string& path) {
  auto fail = [&](const std::string& message) -> Spec {
    throw SpecError({Diagnostic{path, 0, 0, "", message}});
  };
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return fail("is a directory, not a spec file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(cat("cannot read the spec file: ", std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return fail(cat("cannot read the spec file: ", std::strerror(errno)));
  return parse_spec(text.str(), path);
}

}  // namespace attnc
