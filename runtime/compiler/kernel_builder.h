// Turns KernelSources into cubins: memory, then the SQLite cache, then NVRTC under a cache lease
// (N processes missing on one kernel compile it once). A cache that cannot be opened degrades to
// compiling in memory; one that cannot be written (permissions) is opened read-only and still
// serves its kernels. Either way every kernel compiled but not stored is counted, with its reason,
// so that callers can tell the user exactly what the cache did not keep.
#pragma once

#include <atomic>
#include <functional>
#include <map>
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
  KernelRecord record;  // cubin, resources, compile time; record.key is the cache key
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

  // Waits (polling) while another process or thread builds the same kernel.
  BuiltKernel build(const KernelSource&);  // throws CompileError
  // Builds every source on `jobs` threads. A kernel whose lease another builder holds is put aside
  // and built (or loaded) after all the others, so that waiting never idles a thread that has work.
  std::vector<BuildOutcome> build_many(const std::vector<KernelSource>&, int jobs);

  // A spec to keep beside its kernels; written by finish() unless the cache has it already.
  void add_spec(const std::string& spec_id, const std::string& name, const std::string& canonical_yaml);
  // Stores the specs, and the kernels built while another connection held the cache's write lock
  // (it may be free by now; this waits up to the busy timeout). Call once the builds are done.
  void finish();

  // Why the kernel with this key was compiled but is not in the cache (nullopt: it is there, or no
  // cache was asked for). Kernels that failed the same way share one text.
  std::optional<std::string> not_stored(const std::string& key) const;
  // Non-empty when the cache could not be opened (builds go to memory only) or only read-only.
  std::string cache_warning() const;
  Store* store() { return store_ ? &*store_ : nullptr; }

  // Where to say that a build waits for another builder (once per kernel, after a second).
  void set_notice(std::function<void(const std::string&)> notice);

 private:
  std::optional<BuiltKernel> build_one(const KernelSource&, bool wait);
  KernelRecord compile_record(const KernelSource&, const std::string& key);
  LeaseOptions lease_options(const KernelSource&) const;
  void open_store(const std::string& db_path);
  void degrade(const std::string& why);
  // Kernels that failed to be stored the same way share the first text seen for that kind.
  void mark_not_stored(const std::string& key, StoreErrc code, const std::string& why);

  CompileOptions options_;
  bool cache_asked_ = false;
  std::optional<Store> store_;
  std::function<void(const std::string&)> notice_;
  // After a claim or store found the write lock held by another connection, later ones wait only
  // briefly, so that one stuck writer costs one wait, not one per kernel.
  std::atomic<bool> locked_{false};
  // Builds this process may run at once (build_many's jobs); the host-wide limit is at least this.
  std::atomic<int> jobs_{1};

  mutable std::mutex mutex_;  // guards everything below
  std::string warning_;
  std::unordered_map<std::string, KernelRecord> memory_;
  std::unordered_map<std::string, std::string> not_stored_;  // key -> reason
  std::map<StoreErrc, std::string> reasons_;                 // the first text seen for each kind of failure
  std::vector<KernelRecord> pending_;                         // built while the write lock was held
  std::vector<SpecRecord> specs_;
};

}  // namespace attnc
