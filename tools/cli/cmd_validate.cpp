// attnc validate: parse and check spec files; print each one's id, or every error with its place.
#include <cstdio>
#include <iostream>

#include "generator/spec/spec_parse.h"
#include "tools/cli/cli_common.h"

namespace attnc::cli {
namespace {

struct ValidateOptions {
  std::vector<std::string> paths;
  bool print = false;
  bool json = false;
};

void run_validate(const ValidateOptions& o) {
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  int failed = 0;
  for (const auto& path : expand_spec_paths(o.paths)) {
    nlohmann::ordered_json r;
    r["file"] = path;
    try {
      const Spec s = load_spec(path);
      r["ok"] = true;
      r["spec_id"] = spec_id(s);
      r["name"] = s.name;
      if (!o.json) {
        std::printf("%s: ok, spec id %s\n", path.c_str(), spec_id(s).c_str());
        if (o.print) std::printf("%s\n", to_yaml(s).c_str());
      }
    } catch (const SpecError& e) {
      ++failed;
      r["ok"] = false;
      nlohmann::ordered_json errs = nlohmann::ordered_json::array();
      for (const auto& d : e.diagnostics())
        errs.push_back({{"line", d.line}, {"column", d.column}, {"path", d.path}, {"message", d.message}});
      r["errors"] = errs;
      if (!o.json) std::fprintf(stderr, "%s\n", e.what());
    }
    results.push_back(r);
  }
  if (o.json) print_json(results);
  if (failed) throw Failed("");
}

}  // namespace

void add_validate(CLI::App& app) {
  auto o = std::make_shared<ValidateOptions>();
  auto* cmd = app.add_subcommand("validate", "Check spec files: print each spec's id, or its errors (FILE:LINE:COL)");
  cmd->add_option("paths", o->paths, "spec files or folders of specs")->required();
  cmd->add_flag("--print", o->print, "also print the spec with every default written out");
  cmd->add_flag("--json", o->json, "machine-readable results");
  cmd->final_callback([o] { run_validate(*o); });
}

}  // namespace attnc::cli
