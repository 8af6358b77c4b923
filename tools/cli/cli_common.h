// Pieces shared by the attnc subcommands: spec discovery, arch and cache defaults, tables, exits.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "generator/spec/spec.h"

namespace attnc::cli {

// Exit codes: 0 ok, 1 the work failed (bad spec, compile error, check failed), 2 bad usage.
struct Failed : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Leave with this exit code after the output is complete (e.g. 130 after Ctrl-C).
struct ExitCode {
  int code;
};

// Spec files named directly (whether or not they exist: load_spec reports that), or every regular
// *.yaml / *.yml in a named folder (sorted).
std::vector<std::string> expand_spec_paths(const std::vector<std::string>& paths);

// For counts such as --jobs: refuses 0 and negative numbers with a clear message.
CLI::Validator at_least_one();

// The GPU's arch where a GPU is present, else sm_90a.
std::string default_arch();
// Empty `db` = the default cache path (creating its folder).
std::string resolve_db(const std::string& db);

// A plain text table with aligned columns.
class Table {
 public:
  explicit Table(std::vector<std::string> header) : rows_{std::move(header)} {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print(std::FILE* out = stdout) const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

std::string fmt(double v, int decimals);
// Indented JSON on stdout; invalid UTF-8 in strings is replaced (U+FFFD), never an error.
void print_json(const nlohmann::ordered_json&);

void add_validate(CLI::App&);
void add_gen(CLI::App&);
void add_compile(CLI::App&);
void add_cache(CLI::App&);
void add_info(CLI::App&);
void add_run(CLI::App&);
void add_tune(CLI::App&);

}  // namespace attnc::cli
