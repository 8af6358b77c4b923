#include "runtime/compiler/nvrtc_compiler.h"

#include <algorithm>
#include <future>
#include <thread>

#include "generator/emit/embedded_templates.h"
#include "generator/hash.h"
#include "runtime/compiler/nvrtc_diagnostics.h"
#include "runtime/compiler/cubin_info.h"
#include "runtime/compiler/nvrtc_invoke.h"
#include "runtime/compiler/thread_pool.h"
#include "runtime/driver/env_defines.h"

namespace attnc {
namespace {

std::string target_arch(const KernelSource& source, const CompileOptions& options) {
  const std::string arch = options.arch.empty() ? source.arch : options.arch;
  if (!is_supported_arch(arch)) {
    std::string allowed;
    for (const auto& a : supported_archs()) allowed += (allowed.empty() ? "" : ", ") + a;
    throw CompileError("unsupported arch '" + arch + "' for kernel '" + source.entry + "'; attnc compiles for " +
                           allowed,
                       source.entry, arch);
  }
  return arch;
}

// Diagnostic and experimental kernel variants (runtime/driver/env_defines.h): -DNAME[=VALUE] per word.
void add_env_defines(std::vector<std::string>& opts) {
  for (const std::string& w : env_defines()) opts.push_back("-D" + w);
}

// Shared tail of both option lists: everything but the architecture and ptxas flags.
void add_common_options(std::vector<std::string>& opts, const KernelSource& source, const CompileOptions& options) {
  opts.push_back("-std=c++17");
  opts.push_back("--minimal");  // see nvrtc_options() in the header
  if (options.line_info) opts.push_back("-lineinfo");
  opts.insert(opts.end(), source.options.begin(), source.options.end());
  add_env_defines(opts);
}

std::string program_name(const KernelSource& source) {
  return (source.entry.empty() ? std::string("kernel") : source.entry) + ".cu";
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

void require_entry(const KernelSource& source) {
  if (source.entry.empty()) throw CompileError("kernel source has no entry name", source.entry, source.arch);
}

// Runs NVRTC and turns every failure into a CompileError whose message stands on its own.
detail::NvrtcOutcome run(const KernelSource& source, const std::string& arch, std::vector<std::string> opts,
                         bool want_cubin, std::chrono::milliseconds timeout) {
  detail::NvrtcRequest req{program_name(source), source.source, opts, want_cubin};
  auto out = detail::run_nvrtc(std::move(req), timeout);
  if (out.timed_out) {
    throw CompileTimeout("NVRTC did not finish compiling '" + source.entry + "' for " + arch + " within " +
                             std::to_string(timeout.count()) + " ms; the compile was abandoned",
                         source.entry, arch);
  }
  if (out.status == NVRTC_SUCCESS) return out;
  std::string msg = "NVRTC could not compile '" + source.entry + "' for " + arch + " (" +
                    nvrtcGetErrorString(out.status) + ")\noptions: " + join(opts) + "\n";
  if (!out.log.empty()) msg += "log:\n" + out.log + (out.log.ends_with('\n') ? "" : "\n");
  const auto locations = detail::error_locations(out.log, program_name(source), source.source);
  if (!locations.empty()) msg += "where the errors point:\n";
  for (const auto& loc : locations) msg += loc.file + ":" + std::to_string(loc.line) + "\n" + loc.excerpt;
  throw CompileError(msg, source.entry, arch, out.log);
}

}  // namespace

CompileError::CompileError(const std::string& message, std::string entry, std::string arch, std::string log)
    : std::runtime_error(message), entry_(std::move(entry)), arch_(std::move(arch)), log_(std::move(log)) {}

bool is_supported_arch(const std::string& arch) {
  const auto& a = supported_archs();
  return std::find(a.begin(), a.end(), arch) != a.end();
}

std::vector<std::string> nvrtc_options(const KernelSource& source, const CompileOptions& options) {
  // Each ptxas flag needs its own --ptxas-options=; -v puts registers/smem/spills into the log.
  std::vector<std::string> opts = {"--gpu-architecture=" + target_arch(source, options), "--ptxas-options=-v"};
  add_common_options(opts, source, options);
  return opts;
}

std::string kernel_key(const KernelSource& source, const CompileOptions& options) {
  const auto opts = nvrtc_options(source, options);
  Hasher h;
  h.add("attnc-kernel-v1").add(source.source);
  for (const auto& o : opts) h.add(o);
  h.add(nvrtc_version()).add(target_arch(source, options)).add(templates_hash());
  return h.hex();
}

CompiledKernel compile_kernel(const KernelSource& source, const CompileOptions& options) {
  require_entry(source);
  const std::string arch = target_arch(source, options);
  auto out = run(source, arch, nvrtc_options(source, options), true, options.timeout);

  CompiledKernel k;
  k.entry = source.entry;
  k.arch = arch;
  k.nvrtc_version = nvrtc_version();
  k.log = std::move(out.log);
  k.cubin = std::move(out.output);
  k.report = parse_ptxas_report(k.log, k.entry);
  k.compile_ms = out.elapsed_ms;
  k.ptxas_ms = ptxas_compile_ms(k.log);
  k.key = kernel_key(source, options);
  // NVRTC (12.9+) keeps a compile cache of its own; on its hits ptxas does not run and prints no
  // report. The cubin itself then says whether the entry exists and how many registers it uses.
  if (!k.report.found()) {
    if (auto info = cubin_kernel_info(k.cubin, k.entry)) {
      k.report.registers = info->registers;
      k.report.stack_bytes = std::max(info->frame_bytes, 0);
      k.report.from_cubin = true;
      return k;
    }
    throw CompileError("compiled '" + source.entry + "' for " + arch +
                           " but the cubin has no entry of that name: the generated kernel must be declared "
                           "extern \"C\" __global__ void " + source.entry + "(...)\nptxas log:\n" + k.log,
                       source.entry, arch, k.log);
  }
  return k;
}

std::string compile_to_ptx(const KernelSource& source, const CompileOptions& options) {
  require_entry(source);
  const std::string arch = target_arch(source, options);
  // sm_90a -> compute_90a: the virtual architecture keeps the arch-specific features.
  std::vector<std::string> opts = {"--gpu-architecture=compute_" + arch.substr(3)};
  add_common_options(opts, source, options);
  auto out = run(source, arch, opts, false, options.timeout);
  return std::string(out.output.begin(), out.output.end());
}

std::string nvrtc_version() {
  static const std::string v = [] {
    int major = 0, minor = 0;
    nvrtcVersion(&major, &minor);
    return std::to_string(major) + "." + std::to_string(minor);
  }();
  return v;
}

std::vector<CompileResult> compile_many(const std::vector<KernelSource>& sources, const CompileOptions& options,
                                        int jobs) {
  if (jobs <= 0) jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ThreadPool pool(std::min<int>(jobs, std::max<size_t>(1, sources.size())));
  std::vector<std::future<CompileResult>> pending;
  pending.reserve(sources.size());
  for (const auto& s : sources) {
    pending.push_back(pool.submit([&s, &options] {
      CompileResult r;
      try {
        r.kernel = compile_kernel(s, options);
      } catch (const CompileTimeout& e) {
        r.error = e.what();
        r.timed_out = true;
      } catch (const std::exception& e) {
        r.error = e.what();
      }
      return r;
    }));
  }
  std::vector<CompileResult> results;
  results.reserve(sources.size());
  for (auto& f : pending) results.push_back(f.get());
  return results;
}

}  // namespace attnc
