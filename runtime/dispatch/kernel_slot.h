// One (kind, compiled config) of a spec as the dispatcher holds it: its plan and source (made
// once), the cubin (memory -> SQLite -> NVRTC through KernelBuilder, or the cache alone when JIT
// is off) and the loaded module with its kernel and combine entry. A slot is built and loaded at
// most once (its mutex is the once-guard); `loaded` is what the hot path reads, lock-free.
#pragma once

#include <atomic>
#include <mutex>
#include <optional>
#include <string>

#include "generator/emit/emit.h"
#include "generator/split_kv.h"
#include "runtime/compiler/kernel_builder.h"
#include "runtime/driver/module.h"

namespace attnc {

class Device;

struct BuildSettings {
  KernelBuilder* builder = nullptr;
  CompileOptions options;
  bool no_jit = false;
  std::string db_label;   // for messages: the database path, or "none (memory only)"
  std::string spec_hint;  // for messages: the spec's file, or its name
};

class KernelSlot {
 public:
  KernelSlot(const Spec&, KernelKind, const Config&, const std::string& arch);  // throws BadConfig, NotSupportedYet

  const KernelPlan& plan() const { return plan_; }
  const KernelSource& source() const { return source_; }

  // The cubin in memory or in the cache, compiling it when JIT is on. Throws JitDisabled,
  // CompileError (remembered: a failed compile is not retried), DispatchError.
  KernelOrigin build(const BuildSettings&);
  // build(), then load the module into `device`'s context (made current on this thread).
  void load(const BuildSettings&, const Device& device);

  bool loaded() const { return loaded_.load(std::memory_order_acquire); }
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  // Valid once loaded().
  const Kernel& kernel() const { return *kernel_; }
  // The module's second entry (companion_suffix: split-KV combine, or v_prewiden's widening).
  const Kernel* companion() const { return companion_ ? &*companion_ : nullptr; }

  // Set once when a background compile of this slot has been queued.
  std::atomic<bool> queued{false};

  // The heuristic split count of a call shape (choose_num_splits), remembered for the last shape
  // seen (its key length as block_n tiles): a serving engine repeats one shape across every layer of
  // a step, and decode_bw's model weighs up to 128 counts (6-9 us). Thread-safe; a memo busy in
  // another thread is bypassed.
  int heuristic_splits(const SplitShape&) const;

 private:
  KernelOrigin build_locked(const BuildSettings&);

  KernelPlan plan_;
  KernelSource source_;
  std::mutex mutex_;
  std::optional<KernelRecord> record_;
  std::optional<KernelOrigin> origin_;
  std::string error_;
  std::optional<Module> module_;
  std::optional<Kernel> kernel_, companion_;
  std::atomic<bool> loaded_{false}, failed_{false};
  mutable std::mutex split_memo_mutex_;
  mutable SplitShape split_memo_shape_{};
  mutable int split_memo_ = 0;  // 0: nothing remembered
};

}  // namespace attnc
