// attnc compile: every kernel of every spec named (files or folders) into the cache, in parallel.
// A kernel already in the cache is not compiled again; a kernel no template generates yet is a
// "skipped" row, not a failure (unless --strict). A kernel compiled but not stored is counted, with
// its reason, and makes the command fail: storing is what compile is for (--no-cache compiles in
// memory only).
#include <algorithm>
#include <cstdio>
#include <map>
#include <thread>

#include "cache/cache_path.h"
#include "generator/generate.h"
#include "generator/spec/spec_parse.h"
#include "runtime/compiler/kernel_builder.h"
#include "runtime/compiler/ptxas_report.h"
#include "tools/cli/cli_common.h"

namespace attnc::cli {
namespace {

struct CompileCmdOptions {
  std::vector<std::string> paths;
  std::vector<std::string> kinds;  // only these kernel kinds (empty: all the spec lists)
  std::string arch, db, config;
  int jobs = 0;
  bool json = false, strict = false, no_cache = false;
};

std::string plural(int n, const char* what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); }

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// --kernel names kinds; a spec named directly that lacks one is an error naming what it has, as is
// a kind that no spec of the folders named has.
void check_kinds(const CompileCmdOptions& o, const std::map<std::string, std::vector<std::string>>& kinds_by_spec) {
  std::vector<std::string> problems;
  for (const auto& kind : o.kinds) {
    const size_t before = problems.size();
    bool anywhere = false;
    for (const auto& [path, kinds] : kinds_by_spec) {
      const bool has = std::find(kinds.begin(), kinds.end(), kind) != kinds.end();
      anywhere |= has;
      if (!has && std::find(o.paths.begin(), o.paths.end(), path) != o.paths.end())
        problems.push_back(path + ": the spec asks for no " + kind + " kernel (its kernels: " + joined(kinds) + ")");
    }
    if (!anywhere && problems.size() == before)
      problems.push_back("--kernel " + kind + ": none of the specs asks for a " + kind + " kernel");
  }
  if (problems.empty()) return;
  for (size_t i = 0; i + 1 < problems.size(); ++i) std::fprintf(stderr, "attnc: error: %s\n", problems[i].c_str());
  throw Failed(problems.back());
}

void run_compile(const CompileCmdOptions& o) {
  const std::string arch = o.arch.empty() ? default_arch() : o.arch;
  const std::string db = o.no_cache ? "" : resolve_db(o.db);
  KernelBuilder builder(db, CompileOptions{arch});
  builder.set_notice([](const std::string& m) { std::fprintf(stderr, "attnc: %s\n", m.c_str()); });
  const int jobs = o.jobs > 0 ? o.jobs : int(std::max(1u, std::thread::hardware_concurrency()));

  struct Row { std::string spec, kernel, status; std::optional<size_t> source; };
  std::vector<Row> rows;
  std::vector<KernelSource> sources;
  std::map<std::string, std::vector<std::string>> kinds_by_spec;
  int bad_specs = 0;
  for (const auto& path : expand_spec_paths(o.paths)) {
    Spec s;
    try {
      s = load_spec(path);
    } catch (const SpecError& e) {
      std::fprintf(stderr, "%s\n", e.what());
      ++bad_specs;
      continue;
    }
    builder.add_spec(spec_id(s), s.name, canonical_form(s));
    const std::string label = s.name.empty() ? path : s.name;
    auto& kinds = kinds_by_spec[path];
    // Only the kernels asked for are generated, so a --config that suits them alone (a persistent or
    // paired_tiles prefill, which the paged prefill refuses) compiles.
    for (KernelKind kind : kernels_of(s)) {
      kinds.push_back(to_string(kind));
      if (!o.kinds.empty() && std::find(o.kinds.begin(), o.kinds.end(), to_string(kind)) == o.kinds.end()) continue;
      SpecKernel k = generate_kernel(s, kind, arch, o.config);
      Row r{label, to_string(k.kind), k.skipped, {}};
      if (k.source) { r.source = sources.size(); sources.push_back(std::move(*k.source)); }
      rows.push_back(std::move(r));
    }
  }
  check_kinds(o, kinds_by_spec);

  const auto outcomes = builder.build_many(sources, jobs);
  builder.finish();  // stores what waited for the write lock, and the specs
  int compiled = 0, cached = 0, skipped = 0, failed = 0, not_stored = 0;
  std::map<std::string, int> not_stored_by_reason;
  Table table({"spec", "kernel", "entry", "regs", "smem", "spills", "compile_ms", "status"});
  nlohmann::ordered_json js = nlohmann::ordered_json::array();
  for (const auto& r : rows) {
    nlohmann::ordered_json j{{"spec", r.spec}, {"kernel", r.kernel}};
    if (!r.source) {
      ++skipped;
      table.add({r.spec, r.kernel, "-", "-", "-", "-", "-", "skipped: " + r.status});
      j["status"] = "skipped";
      j["reason"] = r.status;
    } else if (const auto& out = outcomes[*r.source]; !out.ok()) {
      ++failed;
      table.add({r.spec, r.kernel, sources[*r.source].entry, "-", "-", "-", "-", "FAILED"});
      std::fprintf(stderr, "%s\n", out.error.c_str());
      j["status"] = "failed";
      j["error"] = out.error;
    } else {
      const KernelRecord& k = out.kernel->record;
      const bool fresh = out.kernel->origin == KernelOrigin::compiled;
      (fresh ? compiled : cached)++;
      const auto why = fresh ? builder.not_stored(k.key) : std::nullopt;
      if (why) ++not_stored, ++not_stored_by_reason[*why];
      const int smem = k.smem_bytes;  // static + dynamic
      table.add({r.spec, r.kernel, k.entry, std::to_string(k.registers), std::to_string(smem),
                 std::to_string(k.spill_stores + k.spill_loads), fresh ? fmt(k.compile_ms, 0) : "-",
                 std::string(to_string(out.kernel->origin)) + (why ? " (not stored)" : "")});
      j.update({{"entry", k.entry}, {"key", k.key}, {"arch", k.arch}, {"registers", k.registers},
                {"smem_bytes", smem}, {"spill_stores", k.spill_stores}, {"spill_loads", k.spill_loads},
                {"compile_ms", k.compile_ms}, {"ptxas_ms", ptxas_compile_ms(k.log)},
                {"status", to_string(out.kernel->origin)}});
      if (!db.empty()) j["stored"] = !why;
      if (why) j["not_stored_reason"] = *why;
    }
    js.push_back(j);
  }
  if (!o.json) table.print();
  std::fflush(stdout);  // the warnings follow the table when both go to one stream
  bool warned = false;
  for (const auto& [why, n] : not_stored_by_reason) {
    std::fprintf(stderr, "attnc: warning: %s not stored: %s\n", plural(n, "kernel").c_str(), why.c_str());
    warned |= why == builder.cache_warning();
  }
  if (auto w = builder.cache_warning(); !w.empty() && !warned) std::fprintf(stderr, "attnc: warning: %s\n", w.c_str());
  if (o.json) {
    print_json(nlohmann::ordered_json{{"arch", arch}, {"db", db}, {"kernels", js},
                                      {"summary", {{"compiled", compiled}, {"cached", cached}, {"skipped", skipped},
                                                   {"failed", failed}, {"not_stored", not_stored}}}});
  } else {
    std::printf("%d compiled, %d from cache, %d skipped, %d failed, %d not stored (arch %s, cache %s)\n", compiled,
                cached, skipped, failed, not_stored, arch.c_str(), db.empty() ? "none" : db.c_str());
  }
  std::fflush(stdout);

  std::vector<std::string> why_failed;
  if (bad_specs) why_failed.push_back(plural(bad_specs, "spec") + " could not be read");
  if (failed) why_failed.push_back(plural(failed, "kernel") + " failed to compile");
  if (o.strict && skipped) why_failed.push_back(plural(skipped, "kernel") + " skipped (not supported yet) under --strict");
  if (not_stored)
    why_failed.push_back(plural(not_stored, "compiled kernel") +
                         " not stored in the cache (--no-cache compiles in memory only)");
  if (!why_failed.empty()) {
    std::string msg;
    for (const auto& w : why_failed) msg += (msg.empty() ? "" : "; ") + w;
    throw Failed(msg);
  }
}

}  // namespace

void add_compile(CLI::App& app) {
  auto o = std::make_shared<CompileCmdOptions>();
  auto* cmd = app.add_subcommand(
      "compile",
      "Compile every kernel of the specs into the cache (cached kernels are reused). Exits 1 when a spec cannot be "
      "read, a kernel fails to compile, a compiled kernel cannot be stored in the cache, or (--strict) a kernel is "
      "not supported yet; the summary line and the warnings before it say which and why");
  cmd->add_option("paths", o->paths, "spec files or folders of specs")->required();
  cmd->add_option("--arch", o->arch, "target arch (default: the GPU's, else sm_90a)");
  cmd->add_option("--db", o->db, std::string("cache database (default: ") + kDefaultCachePathHelp + ")");
  cmd->add_option("-j,--jobs", o->jobs, "parallel compiles, at least 1 (default: one per core)")->check(at_least_one());
  cmd->add_option("--config", o->config, "override fields of the default config, as JSON");
  cmd->add_option("--kernel", o->kinds, "only these kernels of each spec (repeatable)")
      ->check(CLI::IsMember({"prefill", "prefill_paged", "decode", "merge", "cache_write"}));
  cmd->add_flag("--no-cache", o->no_cache, "compile in memory only");
  cmd->add_flag("--strict", o->strict, "fail when a kernel is not supported yet");
  cmd->add_flag("--json", o->json, "machine-readable results (warnings still go to stderr)");
  cmd->final_callback([o] { run_compile(*o); });
}

}  // namespace attnc::cli
