// attnc run: one spec and shape on the GPU against the float64 reference; prints the error and
// the time. Exit 1 when the check fails.
#include <cstdio>
#include <sstream>

#include "generator/spec_kernels.h"
#include "generator/spec_parse.h"
#include "runtime/cuda_driver.h"
#include "runtime/device.h"
#include "runtime/kernel_builder.h"
#include "runtime/module.h"
#include "runtime/prefill_check.h"
#include "tools/cli/cli_common.h"

namespace attnc::cli {
namespace {

struct RunOptions {
  std::string spec, seqlens, seqlens_k, config, db;
  int reps = 20;
  bool check = true, json = false;
  unsigned long long seed = 0;
};

std::vector<int> parse_lengths(const std::string& text, const char* flag) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      const int v = std::stoi(item, &used);
      if (used != item.size() || v < 0) throw std::invalid_argument(item);
      out.push_back(v);
    } catch (const std::exception&) {
      throw Failed(std::string(flag) + ": '" + item + "' is not a length; expected non-negative integers, e.g. 4096,1024");
    }
  }
  if (out.empty()) throw Failed(std::string(flag) + ": expected at least one length");
  return out;
}

void run_run(const RunOptions& o) {
  const Spec s = load_spec(o.spec);
  // Arguments first, so a bad call is reported the same with or without a GPU.
  PrefillCase c;
  c.seqlens_q = parse_lengths(o.seqlens, "--seqlens");
  if (!o.seqlens_k.empty()) c.seqlens_k = parse_lengths(o.seqlens_k, "--seqlens-k");
  if (!c.seqlens_k.empty() && c.seqlens_k.size() != c.seqlens_q.size())
    throw Failed("--seqlens-k must list as many lengths as --seqlens");
  if (Device::count() == 0) throw Failed("attnc run needs a GPU: " + Driver::get().error());
  Device dev(0);
  dev.make_current();
  std::optional<SpecKernel> prefill;
  for (auto& k : spec_kernels(s, dev.arch(), o.config))
    if (k.kind == KernelKind::prefill) prefill = std::move(k);
  if (!prefill) throw Failed(o.spec + ": the spec has no prefill kernel");
  if (!prefill->source) throw Failed(o.spec + ": prefill: " + prefill->skipped);

  KernelBuilder builder(resolve_db(o.db), CompileOptions{dev.arch()});
  const BuiltKernel built = builder.build(*prefill->source);
  Module module(built.record.cubin);
  Kernel kernel = module.kernel(built.record.entry);
  kernel.reserve_dynamic_smem(prefill->plan->smem_bytes);

  c.seed = o.seed;
  c.check = o.check;
  c.timing_reps = o.reps;
  const PrefillReport rep = check_prefill(*prefill->plan, kernel, c);

  if (o.json) {
    print_json({{"spec", s.name}, {"entry", built.record.entry}, {"origin", to_string(built.origin)},
                {"device", dev.name()}, {"passed", rep.passed}, {"max_abs_err", rep.max_abs_err},
                {"rel_l2_err", rep.rel_l2_err}, {"lse_max_abs_err", rep.lse_max_abs_err},
                {"bad_elements", rep.bad_elements}, {"time_ms", rep.time_ms}, {"tflops", rep.tflops},
                {"seed", rep.seed}});
  } else {
    std::printf("spec    %s (%s)\nkernel  %s (%s)\ndevice  %s\nseqlens %s%s%s\n", s.name.c_str(),
                o.spec.c_str(), built.record.entry.c_str(), to_string(built.origin), dev.name().c_str(),
                o.seqlens.c_str(), o.seqlens_k.empty() ? "" : " / kv ", o.seqlens_k.c_str());
    std::printf("RESULT %s %s\n", s.name.c_str(), rep.summary().c_str());
  }
  if (!rep.passed) throw Failed("the kernel's output does not match the float64 reference");
}

}  // namespace

void add_run(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand("run", "Run a spec's prefill kernel on the GPU against the float64 reference");
  cmd->add_option("spec", o->spec, "spec file")->required();
  cmd->add_option("--seqlens", o->seqlens, "query lengths of the batch, comma-separated")->required();
  cmd->add_option("--seqlens-k", o->seqlens_k, "key lengths (default: the query lengths)");
  cmd->add_option("--config", o->config, "override fields of the default config, as JSON");
  cmd->add_option("--reps", o->reps, "timed launches after warm-up (0: none)");
  cmd->add_option("--seed", o->seed, "input seed (default: fresh each run)");
  cmd->add_option("--db", o->db, "cache database");
  cmd->add_flag("--check,!--no-check", o->check, "compare against the float64 reference (default: on)");
  cmd->add_flag("--json", o->json, "machine-readable");
  cmd->final_callback([o] { run_run(*o); });
}

}  // namespace attnc::cli
