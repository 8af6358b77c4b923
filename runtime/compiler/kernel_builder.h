// Turns KernelSources into cubins: memory, then the SQLite cache, then NVRTC under a cache lease
// (N processes missing on one kernel compile it once). A cache that cannot be opened or read
// degrades to compiling in memory with a warning; it never stops a build.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "cache/store.h"
#include "generator/emit/kernel_source.h"
#include "runtime/compiler/nvrtc_compiler.h"

namespace attnc {

enum class KernelOrigin { memory, cache, compiled };
const char* to_string(KernelOrigin);

struct BuiltKernel {
  KernelSource source;
  KernelRecord record;  // cubin, resources, compile time
  KernelOrigin origin = KernelOrigin::compiled;
};

struct BuildOutcome {
  std::optional<BuiltKernel> kernel;
  std::string error;  // the compile error (with the generated line it points at) otherwise
  bool ok() const { return kernel.has_value(); }
};

class KernelBuilder {
 public:
  // `db_path` empty: no persistent cache, compile in memory only.
  KernelBuilder(const std::string& db_path, CompileOptions options);

  BuiltKernel build(const KernelSource&);  // throws CompileError
  std::vector<BuildOutcome> build_many(const std::vector<KernelSource>&, int jobs);

  // Non-empty when the cache could not be used (and why); builds then went to memory only.
  std::string cache_warning() const;
  Store* store() { return store_ ? &*store_ : nullptr; }

 private:
  KernelRecord compile_record(const KernelSource&, const std::string& key);
  void degrade(const std::string& why);

  CompileOptions options_;
  std::optional<Store> store_;
  mutable std::mutex mutex_;
  std::string warning_;
  std::unordered_map<std::string, KernelRecord> memory_;
};

}  // namespace attnc
