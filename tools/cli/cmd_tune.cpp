// attnc tune: autotune a spec's attention kernels on this GPU over shape buckets and write one
// tuning record per bucket; --report prints (and renders as HTML) what the database holds.
// Arguments are checked before looking for a GPU, so a bad call reads the same everywhere.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <fstream>

#include "attnc/params/split_combine_shape.h"
#include "generator/spec/spec_parse.h"
#include "runtime/driver/cuda_driver.h"
#include "runtime/driver/device.h"
#include "runtime/compiler/kernel_builder.h"
#include "tools/cli/cli_common.h"
#include "tuner/budget.h"
#include "tuner/report_html.h"
#include "tuner/report_table.h"
#include "tuner/shapes.h"
#include "tuner/tuner.h"

namespace attnc::cli {
namespace {

struct TuneCliOptions {
  std::string spec, shapes = "anchors", budget = "10m", db, shard, kind, report_path;
  std::string compile_timeout = "60s", run_timeout = "10s";
  int jobs = 0;
  bool json = false;
  CLI::Option* report = nullptr;
};

std::atomic<bool> g_interrupted{false};

// First Ctrl-C: finish the current candidate, write what was measured. Second: leave at once.
extern "C" void on_sigint(int) {
  if (g_interrupted.exchange(true)) _exit(130);
  static const char msg[] = "\nattnc tune: interrupted; stopping after the current candidate (Ctrl-C again to quit)\n";
  [[maybe_unused]] auto n = write(STDERR_FILENO, msg, sizeof msg - 1);
}

std::chrono::milliseconds duration_arg(const std::string& text, const char* flag) {
  try {
    return parse_duration(text, flag);
  } catch (const std::invalid_argument& e) {
    throw Failed(e.what());
  }
}

// The spec's attention kinds that can be generated, and a note for each one that cannot.
std::vector<KernelKind> tunable_kinds(const Spec& s, const std::string& only, std::vector<std::string>& skipped) {
  std::vector<KernelKind> out;
  bool has_only = only.empty();
  for (KernelKind k : kernels_of(s)) {
    if (k != KernelKind::prefill && k != KernelKind::prefill_paged && k != KernelKind::decode) continue;
    if (!only.empty() && only != to_string(k)) continue;
    has_only = true;
    try {
      plan_kernel(s, k, default_config(s, k, "sm_90a"), "sm_90a");
      out.push_back(k);
    } catch (const NotSupportedYet& e) {
      skipped.push_back(std::string(to_string(k)) + ": " + e.what());
    }
  }
  if (!has_only) throw Failed("--kind: the spec has no " + only + " kernel (see its kernels: list)");
  return out;
}

nlohmann::ordered_json row_json(const ReportRow& r, const TuningRecord& rec) {
  nlohmann::ordered_json j = {{"mode", r.mode},
                              {"bucket", r.bucket},
                              {"winner", r.winner},
                              {"config", nlohmann::ordered_json::parse(rec.config_json, nullptr, false)},
                              {"time_us", r.time_us},
                              {"throughput", r.throughput},
                              {"unit", r.unit},
                              {"complete", r.complete},
                              {"candidates_ok", r.candidates_ok},
                              {"candidates_total", r.candidates_total}};
  j["baseline_time_us"] = r.baseline_time_us ? nlohmann::ordered_json(*r.baseline_time_us) : nullptr;
  j["speedup"] = r.speedup ? nlohmann::ordered_json(*r.speedup) : nullptr;
  return j;
}

void print_records(const std::vector<TuningRecord>& records) {
  Table t(report_table(records)[0]);
  auto rows = report_table(records);
  for (std::size_t i = 1; i < rows.size(); ++i) t.add(rows[i]);
  t.print();
}

void run_report(const TuneCliOptions& o, const Spec& s) {
  const std::string db = resolve_db(o.db);
  Store store = Store::open(db);
  TuningFilter f;
  f.spec_id = spec_id(s);
  std::string where = "any device";
  if (Device::count() > 0) {
    Device dev(0);
    f.device = dev.name();
    where = dev.name();
  }
  const std::vector<TuningRecord> records = store.list_tuning(f);
  if (!o.report_path.empty()) {
    std::ofstream out(o.report_path);
    if (!out) throw Failed("--report: cannot write '" + o.report_path + "'");
    out << tuning_report_html(records, s.name + " (" + *f.spec_id + ") on " + where);
    if (!out.flush()) throw Failed("--report: writing '" + o.report_path + "' failed");
  }
  if (o.json) {
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const auto& r : records) rows.push_back(row_json(report_row(r), r));
    print_json({{"spec", s.name}, {"spec_id", *f.spec_id}, {"device", where}, {"db", db}, {"records", rows}});
    return;
  }
  if (records.empty()) {
    std::printf("no tuning records for %s (%s) on %s in %s\n", s.name.c_str(), f.spec_id->c_str(), where.c_str(),
                db.c_str());
  } else {
    std::printf("tuning records for %s (%s) on %s in %s\n", s.name.c_str(), f.spec_id->c_str(), where.c_str(),
                db.c_str());
    print_records(records);
  }
  if (!o.report_path.empty()) std::printf("report written to %s\n", o.report_path.c_str());
}

void run_tune(const TuneCliOptions& o) {
  const Spec s = load_spec(o.spec);
  if (o.report && o.report->count() > 0) return run_report(o, s);

  TuneOptions opt;
  opt.budget = duration_arg(o.budget, "--budget");
  opt.measure.run_timeout = duration_arg(o.run_timeout, "--run-timeout");
  const auto compile_timeout = duration_arg(o.compile_timeout, "--compile-timeout");
  opt.compile_jobs = o.jobs;
  if (!o.kind.empty() && o.kind != "prefill" && o.kind != "prefill_paged" && o.kind != "decode")
    throw Failed("--kind: '" + o.kind + "' is not a tunable kernel kind; allowed: prefill, prefill_paged, decode");
  Shard shard;
  std::vector<ShapeBucket> tasks;
  try {
    if (!o.shard.empty()) shard = parse_shard(o.shard);
    tasks = resolve_shapes(o.shapes, s);
  } catch (const std::invalid_argument& e) {
    throw Failed(e.what());
  }
  std::vector<std::string> skipped;
  const std::vector<KernelKind> kinds = tunable_kinds(s, o.kind, skipped);
  for (const auto& k : skipped) std::fprintf(stderr, "attnc tune: skipping %s\n", k.c_str());
  if (kinds.empty())
    throw Failed(o.spec +
                 ": no kernel of this spec can be tuned (prefill, prefill_paged and decode "
                 "are tunable; see the skipped kinds above)");
  const std::vector<ShapeBucket> all = sweep_tasks(tasks, kinds);
  if (all.empty()) throw Failed("--shapes " + o.shapes + ": no shape for the kinds this spec has");
  tasks = shard_tasks(all, shard);
  if (shard.count > 1)
    std::fprintf(stderr, "attnc tune: shard %d/%d takes %zu of %zu tasks\n", shard.index, shard.count, tasks.size(),
                 all.size());
  if (tasks.empty()) {
    std::printf("nothing to tune in shard %d/%d\n", shard.index, shard.count);
    return;
  }

  if (Device::count() == 0) throw Failed("attnc tune needs a GPU: " + Driver::get().error());
  Device dev(0);
  dev.make_current();
  const std::string db = resolve_db(o.db);
  Store store = Store::open(db);
  KernelBuilder builder(db, CompileOptions{dev.arch(), compile_timeout});

  ProgressPrinter progress;
  opt.progress = [&](const TuneProgress& p) { progress.update(p); };
  opt.interrupt = &g_interrupted;
  g_interrupted = false;
  auto previous = std::signal(SIGINT, on_sigint);
  TuneResult result;
  try {
    result = tune(s, tasks, dev, builder, store, opt);
  } catch (...) {
    std::signal(SIGINT, previous);
    progress.finish();
    throw;
  }
  std::signal(SIGINT, previous);
  progress.finish();
  if (!builder.cache_warning().empty()) std::fprintf(stderr, "attnc tune: %s\n", builder.cache_warning().c_str());

  std::vector<TuningRecord> written;
  for (const auto& b : result.buckets)
    if (b.record) written.push_back(*b.record);
  if (o.json) {
    nlohmann::ordered_json buckets = nlohmann::ordered_json::array();
    for (const auto& b : result.buckets) {
      nlohmann::ordered_json j = {{"mode", to_string(b.bucket.kind)}, {"bucket", b.bucket.label()},
                                  {"written", b.record.has_value()},  {"complete", b.complete},
                                  {"candidates", b.candidates},       {"ok", b.ok}};
      if (b.record) j["record"] = row_json(report_row(*b.record), *b.record);
      if (!b.error.empty()) j["error"] = b.error;
      buckets.push_back(j);
    }
    print_json(
        {{"spec", s.name},
         {"spec_id", spec_id(s)},
         {"device", dev.name()},
         {"db", db},
         {"shard", std::to_string(shard.index) + "/" + std::to_string(shard.count)},
         {"tasks", result.tasks_total},
         {"skipped_kinds", skipped},
         {"stopped", result.stopped.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(result.stopped)},
         {"buckets", buckets}});
  } else {
    std::printf("tuned %s (%s) on %s: %zu of %d buckets recorded in %s\n", s.name.c_str(), spec_id(s).c_str(),
                dev.name().c_str(), written.size(), result.tasks_total, db.c_str());
    if (!written.empty()) print_records(written);
    for (const auto& b : result.buckets)
      if (!b.error.empty())
        std::printf("%s %s: %s\n", to_string(b.bucket.kind), b.bucket.label().c_str(), b.error.c_str());
    if (result.stopped == "budget")
      std::printf("the budget (%s) ran out: %d of %d buckets started\n", o.budget.c_str(),
                  static_cast<int>(result.buckets.size()), result.tasks_total);
  }
  std::fflush(stdout);
  if (result.stopped == "interrupted") throw ExitCode{130};
  if (result.stopped == "timeout" || result.stopped == "gpu_error")
    throw Failed("stopped early (" + result.stopped + "): " + result.stop_detail);
}

}  // namespace

void add_tune(CLI::App& app) {
  auto o = std::make_shared<TuneCliOptions>();
  auto* cmd = app.add_subcommand("tune", "Autotune a spec's attention kernels on this GPU and store the winners");
  cmd->add_option("spec", o->spec, "spec file")->required();
  cmd->add_option("--shapes", o->shapes,
                  "a preset (anchors, serving, smoke) or a YAML file of shapes (default anchors)");
  cmd->add_option("--budget", o->budget, "time for the whole sweep, e.g. 90s, 10m, 1h (default 10m)");
  cmd->add_option("--db", o->db, "cache database");
  cmd->add_option("--shard", o->shard, "i/N: take every N-th task starting at i (0 <= i < N)");
  cmd->add_option("--kind", o->kind, "tune only this kind: prefill, prefill_paged or decode");
  cmd->add_option("--compile-timeout", o->compile_timeout, "per candidate compile (default 60s)");
  cmd->add_option("--run-timeout", o->run_timeout, "per launch batch on the GPU (default 10s)");
  cmd->add_option("--jobs", o->jobs, "parallel compiles, at least 1 (default: one per core)")->check(at_least_one());
  o->report = cmd->add_option("--report", o->report_path,
                              "do not tune: print the stored records (and write an HTML page to PATH when given)")
                  ->expected(0, 1);
  cmd->add_flag("--json", o->json, "machine-readable");
  cmd->final_callback([o] { run_tune(*o); });
}

}  // namespace attnc::cli
