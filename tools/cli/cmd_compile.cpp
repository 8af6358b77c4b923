// attnc compile: every kernel of every spec named (files or folders) into the cache, in parallel.
// A kernel already in the cache is not compiled again; a kernel no template generates yet is a
// "skipped" row, not a failure (unless --strict).
#include <algorithm>
#include <cstdio>
#include <thread>

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

void run_compile(const CompileCmdOptions& o) {
  const std::string arch = o.arch.empty() ? default_arch() : o.arch;
  const std::string db = o.no_cache ? "" : resolve_db(o.db);
  KernelBuilder builder(db, CompileOptions{arch});
  const int jobs = o.jobs > 0 ? o.jobs : int(std::max(1u, std::thread::hardware_concurrency()));

  struct Row { std::string spec, kernel, status; std::optional<size_t> source; };
  std::vector<Row> rows;
  std::vector<KernelSource> sources;
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
    if (Store* st = builder.store()) {
      try { st->put_spec(spec_id(s), s.name, canonical_form(s)); } catch (const std::exception&) {}
    }
    const std::string label = s.name.empty() ? path : s.name;
    for (auto& k : spec_kernels(s, arch, o.config)) {
      if (!o.kinds.empty() && std::find(o.kinds.begin(), o.kinds.end(), to_string(k.kind)) == o.kinds.end()) continue;
      Row r{label, to_string(k.kind), k.skipped, {}};
      if (k.source) { r.source = sources.size(); sources.push_back(std::move(*k.source)); }
      rows.push_back(std::move(r));
    }
  }

  const auto outcomes = builder.build_many(sources, jobs);
  int compiled = 0, cached = 0, skipped = 0, failed = 0;
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
      const int smem = k.smem_bytes;  // static + dynamic
      table.add({r.spec, r.kernel, k.entry, std::to_string(k.registers), std::to_string(smem),
                 std::to_string(k.spill_stores + k.spill_loads), fresh ? fmt(k.compile_ms, 0) : "-",
                 to_string(out.kernel->origin)});
      j.update({{"entry", k.entry}, {"key", k.key}, {"arch", k.arch}, {"registers", k.registers},
                {"smem_bytes", smem}, {"spill_stores", k.spill_stores}, {"spill_loads", k.spill_loads},
                {"compile_ms", k.compile_ms}, {"ptxas_ms", ptxas_compile_ms(k.log)},
                {"status", to_string(out.kernel->origin)}});
    }
    js.push_back(j);
  }
  if (o.json) {
    print_json(nlohmann::ordered_json{{"arch", arch}, {"db", db}, {"kernels", js}});
  } else {
    table.print();
    std::printf("%d compiled, %d from cache, %d skipped, %d failed (arch %s, cache %s)\n", compiled, cached,
                skipped, failed, arch.c_str(), db.empty() ? "none" : db.c_str());
  }
  std::fflush(stdout);  // keep the warning after the table when both go to one stream
  if (auto w = builder.cache_warning(); !w.empty()) std::fprintf(stderr, "attnc: warning: %s\n", w.c_str());
  if (failed || bad_specs || (o.strict && skipped)) throw Failed("");
}

}  // namespace

void add_compile(CLI::App& app) {
  auto o = std::make_shared<CompileCmdOptions>();
  auto* cmd = app.add_subcommand("compile", "Compile every kernel of the specs into the cache (cached kernels are reused)");
  cmd->add_option("paths", o->paths, "spec files or folders of specs")->required();
  cmd->add_option("--arch", o->arch, "target arch (default: the GPU's, else sm_90a)");
  cmd->add_option("--db", o->db, "cache database (default: $ATTNC_CACHE_DIR/attnc.db, ...)");
  cmd->add_option("-j,--jobs", o->jobs, "parallel compiles (default: one per core)");
  cmd->add_option("--config", o->config, "override fields of the default config, as JSON");
  cmd->add_option("--kernel", o->kinds, "only these kernels of each spec (repeatable)")
      ->check(CLI::IsMember({"prefill", "prefill_paged", "decode", "merge", "cache_write"}));
  cmd->add_flag("--no-cache", o->no_cache, "compile in memory only");
  cmd->add_flag("--strict", o->strict, "fail when a kernel is not supported yet");
  cmd->add_flag("--json", o->json, "machine-readable results");
  cmd->final_callback([o] { run_compile(*o); });
}

}  // namespace attnc::cli
