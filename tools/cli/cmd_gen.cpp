// attnc gen: the generated CUDA source for a spec (and optionally its PTX or ptxas report), so a
// person can read exactly what will be compiled. Needs no GPU.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <vector>

#include "generator/generate.h"
#include "generator/spec/spec_parse.h"
#include "runtime/compiler/nvrtc_compiler.h"
#include "tools/cli/cli_common.h"

namespace attnc::cli {
namespace {

struct GenOptions {
  std::string spec;
  std::string kernel = "prefill";
  std::string config;
  std::string arch;
  std::string out;
  bool ptx = false;
  bool report = false;
};

void run_gen(const GenOptions& o) {
  const Spec s = load_spec(o.spec);
  const std::string arch = o.arch.empty() ? "sm_90a" : o.arch;
  std::vector<KernelKind> kinds = kernels_of(s);
  kinds.push_back(KernelKind::lse_correct);  // an op of every layer (DCP), never in its kernels: list
  for (KernelKind kind : kinds) {
    if (o.kernel != to_string(kind)) continue;
    const SpecKernel k = generate_kernel(s, kind, arch, o.config);
    if (!k.source) throw Failed(o.spec + ": " + to_string(k.kind) + ": " + k.skipped);
    std::string text;
    if (o.ptx) {
      text = compile_to_ptx(*k.source);
    } else if (o.report) {
      const CompiledKernel c = compile_kernel(*k.source);
      char buf[512];
      std::snprintf(buf, sizeof buf,
                    "entry %s\narch %s\nregisters %d\nshared_memory_static %d\nshared_memory_dynamic %d\n"
                    "stack_bytes %d\nspill_stores %d\nspill_loads %d\ncompile_ms %.1f\nptxas_ms %.1f\n",
                    c.entry.c_str(), c.arch.c_str(), c.report.registers, c.report.smem_bytes,
                    k.source->launch.smem_bytes, c.report.stack_bytes, c.report.spill_stores,
                    c.report.spill_loads, c.compile_ms, c.ptxas_ms);
      text = buf;
      // The compile's warnings verbatim, front end and ptxas (setmaxnreg ignored is C7508,
      // serialised wgmma C7510): a lit test pins their absence.
      std::string warnings;
      int n = 0;
      for (size_t at = 0; at < c.log.size();) {
        const size_t end = std::min(c.log.find('\n', at), c.log.size());
        const std::string line = c.log.substr(at, end - at);
        if (line.find("warning") != std::string::npos && line.rfind("Remark", 0) != 0) warnings += line + "\n", ++n;
        at = end + 1;
      }
      text += "warnings " + std::to_string(n) + "\n" + warnings;
    } else {
      text = k.source->source;
    }
    if (o.out.empty()) {
      std::fwrite(text.data(), 1, text.size(), stdout);
    } else {
      std::ofstream f(o.out);
      if (!(f << text)) throw Failed("cannot write " + o.out);
    }
    return;
  }
  throw Failed(o.spec + ": the spec does not ask for a '" + o.kernel + "' kernel (its kernels: list)");
}

}  // namespace

void add_gen(CLI::App& app) {
  auto o = std::make_shared<GenOptions>();
  auto* cmd = app.add_subcommand("gen", "Write the generated CUDA source (or PTX, or ptxas report) for a spec");
  cmd->add_option("spec", o->spec, "spec file")->required();
  cmd->add_option("--kernel", o->kernel, "which kernel of the spec")->check(
      CLI::IsMember({"prefill", "prefill_paged", "decode", "merge", "cache_write", "lse_correct"}));
  cmd->add_option("--config", o->config, "config as JSON, e.g. '{\"block_n\":32}' (default: the heuristic's)");
  cmd->add_option("--arch", o->arch, "target arch (default sm_90a)");
  cmd->add_option("-o,--out", o->out, "write to this file instead of stdout");
  auto* ptx = cmd->add_flag("--ptx", o->ptx, "compile and print the PTX instead of the source");
  cmd->add_flag("--report", o->report, "compile and print the ptxas resource report")->excludes(ptx);
  cmd->final_callback([o] { run_gen(*o); });
}

}  // namespace attnc::cli
