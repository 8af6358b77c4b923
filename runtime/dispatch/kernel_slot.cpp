#include "runtime/dispatch/kernel_slot.h"

#include "runtime/driver/device.h"
#include "runtime/dispatch/dispatch_error.h"
#include "runtime/launch/attention_args.h"

namespace attnc {
namespace {

// The line that puts this kernel into the cache ahead of time.
std::string compile_hint(const KernelSource& src, KernelKind kind, const BuildSettings& s) {
  std::string line = "attnc compile " + (s.spec_hint.empty() ? std::string("SPEC.yaml") : s.spec_hint) + " --arch " +
                     (s.options.arch.empty() ? src.arch : s.options.arch) + " --kernel " + to_string(kind) +
                     " --config '" + src.config_json + "'";
  if (s.builder && s.builder->store()) line += " --db " + s.builder->store()->path();
  return line;
}

}  // namespace

KernelSlot::KernelSlot(const Spec& spec, KernelKind kind, const Config& config, const std::string& arch)
    : plan_(plan_kernel(spec, kind, config, arch)), source_(emit_kernel(plan_)) {}

KernelOrigin KernelSlot::build(const BuildSettings& s) {
  std::lock_guard lock(mutex_);
  return build_locked(s);
}

KernelOrigin KernelSlot::build_locked(const BuildSettings& s) {
  if (record_) return KernelOrigin::memory;
  if (failed_.load()) throw CompileError(error_, source_.entry, plan_.arch);
  if (s.no_jit) {
    std::string why;
    if (Store* store = s.builder->store()) {
      try {
        if (auto r = store->find_kernel(kernel_key(source_, s.options))) {
          record_ = std::move(*r);
          return *(origin_ = KernelOrigin::cache);
        }
      } catch (const std::exception& e) {
        why = " (reading the cache failed: " + std::string(e.what()) + ")";
      }
    }
    throw JitDisabled("attnc: kernel " + source_.entry + " (" + to_string(plan_.kind) + ", config " +
                      source_.config_json + ") is not in the cache " + s.db_label + why +
                      " and JIT compiles are off (ATTNC_NO_JIT=1 or the no_jit option); compile it offline: " +
                      compile_hint(source_, plan_.kind, s));
  }
  try {
    BuiltKernel built = s.builder->build(source_);
    record_ = std::move(built.record);
    return *(origin_ = built.origin);
  } catch (const CompileError& e) {
    error_ = e.what();
    failed_.store(true, std::memory_order_release);
    throw;
  }
}

void KernelSlot::load(const BuildSettings& s, const Device& device) {
  std::lock_guard lock(mutex_);
  if (loaded_.load()) return;
  build_locked(s);
  device.make_current();
  module_.emplace(record_->cubin);
  kernel_.emplace(module_->kernel(source_.entry, plan_.smem_bytes));
  if (const char* suffix = companion_suffix(plan_)) companion_.emplace(module_->kernel(source_.entry + suffix, 0));
  loaded_.store(true, std::memory_order_release);
}

int KernelSlot::heuristic_splits(const SplitShape& c) const {
  // choose_num_splits sees the key length only as its count of block_n tiles, unless a ragged call's
  // seqlen_k_sum is divided by it (decode_model.cpp): keyed on the tiles, a decode whose context
  // grows a token a step finds its count here for block_n - 1 steps of every block_n.
  SplitShape key = c;
  if (c.seqlen_k_sum == 0 && c.max_seqlen_k > 0)
    key.max_seqlen_k = (c.max_seqlen_k + plan_.config.block_n - 1) / plan_.config.block_n;
  std::unique_lock lock(split_memo_mutex_, std::try_to_lock);
  const SplitShape& m = split_memo_shape_;
  if (lock.owns_lock() && split_memo_ > 0 && m.batch == key.batch && m.max_seqlen_q == key.max_seqlen_q &&
      m.max_seqlen_k == key.max_seqlen_k && m.num_sms == key.num_sms && m.seqlen_k_sum == key.seqlen_k_sum)
    return split_memo_;
  const int n = choose_num_splits(plan_, c);
  if (lock.owns_lock()) {
    split_memo_shape_ = key;
    split_memo_ = n;
  }
  return n;
}

}  // namespace attnc
