// The dispatcher's insides (runtime/dispatch/dispatcher.h), shared by its implementation files: the
// per-bucket choice table, the kernel slots by config, the device, the workspace and the
// background compiler.
#pragma once

#include <atomic>
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "runtime/driver/device.h"
#include "runtime/dispatch/dispatcher.h"
#include "runtime/dispatch/kernel_slot.h"
#include "runtime/compiler/thread_pool.h"

namespace attnc {

struct DriverApi;

// What one bucket is served with; immutable once in the table (pin() replaces the whole entry).
struct BucketEntry {
  ShapeBucket bucket;
  TunedChoice choice;  // config of `wanted`; num_splits 0 = the heuristic per call
  ChoiceOrigin origin = ChoiceOrigin::heuristic;
  KernelSlot* wanted = nullptr;    // the choice's kernel
  KernelSlot* fallback = nullptr;  // the heuristic kernel (== wanted without a record)
};

struct Attention::Impl {
  Impl(Spec spec, AttentionOptions options);

  // --- the table (dispatch_table.cpp)
  // The bucket's entry, resolving it on first sight (tuning record once, else the heuristic).
  // `cached` says whether it was in the table already.
  BucketEntry& entry(const ShapeBucket& bucket, bool* cached = nullptr) {
    {
      std::shared_lock lock(table_mutex);
      if (auto it = table.find(bucket.key()); it != table.end()) {
        if (cached) *cached = true;
        return *it->second;
      }
    }
    if (cached) *cached = false;
    return resolve(bucket);
  }
  BucketEntry& resolve(const ShapeBucket&);
  void pin(const ShapeBucket&, const TunedChoice&);
  KernelSlot* slot_for(KernelKind, const Config&);  // resolve_mutex held
  KernelSlot* heuristic_slot(KernelKind);           // resolve_mutex held
  void check_kind(KernelKind) const;

  // The kernel a call of this entry uses now, and the origin to report.
  KernelSlot* serving(const BucketEntry& e, ChoiceOrigin* origin) const {
    *origin = e.origin;
    if (e.wanted == e.fallback || e.wanted->loaded()) return e.wanted;
    if (e.wanted->failed() || options.background_compile) {
      *origin = ChoiceOrigin::fallback;
      return e.fallback;
    }
    return e.wanted;
  }
  // The split count of a call served by `s`: the caller's when `forced` > 0; else the tuned count
  // when the tuned kernel serves, else the heuristic, lowered to what `workspace` holds.
  int splits(const BucketEntry& e, const KernelSlot& s, SplitShape shape, int forced, size_t workspace) const {
    shape.num_sms = sm_count.load(std::memory_order_relaxed);
    int preferred = &s == e.wanted ? e.choice.num_splits : 0;
    if (forced == 0 && preferred == 0 && s.plan().split_kv) preferred = s.heuristic_splits(shape);
    return decide_num_splits(s.plan(), shape, forced, preferred, workspace);
  }

  // --- kernels and the device (dispatcher.cpp)
  KernelSlot* make_ready(BucketEntry&, CUstream stream);  // the slow path of run()
  // prefill_sm80's default prefill kernel, loaded: serves prefill calls that prefill_sm90 cannot
  // take (no total_k, from a caller that predates it). Found and loaded once, then read lock-free.
  KernelSlot* sm80_prefill_ready(CUstream stream);
  // prefill_sm90's default prefill (or paged prefill) kernel without v_prewiden (int8_qkv's V
  // widened by the producer): serves calls whose workspace cannot hold the widened V. Loaded once,
  // then read lock-free.
  KernelSlot* widening_prefill_ready(KernelKind, CUstream stream);
  Config widening_prefill_config(KernelKind) const;
  // A `kind` slot of make_config()'s config, found and loaded once and kept in `memo`.
  template <class MakeConfig>
  KernelSlot* loaded_once(std::atomic<KernelSlot*>& memo, KernelKind kind, MakeConfig make_config, CUstream stream,
                          const char* what);
  // Refuses to load while `stream` is being captured; `what` names the call for the message.
  void check_not_capturing(CUstream stream, const std::string& what);
  // Makes the device's context current on this thread when it is not already.
  void make_current();

  // --- op kernels (dispatcher_ops.cpp): made and loaded on first use, then read lock-free
  enum Op { op_merge, op_cache_write, op_cascade_prefix, op_cascade_suffix, op_lse_correct, op_count };
  KernelSlot& op_slot(Op);                 // planned (no GPU needed with a described device)
  KernelSlot& op(Op, CUstream stream);     // op_slot, loaded
  const CascadePlans& cascade_plans();  // the plans of the three cascade kernels (no GPU needed)
  void queue_background(KernelSlot*);
  const DeviceInfo& info();
  Device& device() {
    if (Device* d = device_ptr.load(std::memory_order_acquire)) return *d;
    return open_device();
  }
  Device& open_device();
  void warn(const std::string&);

  Spec spec;
  std::string spec_id;
  AttentionOptions options;
  bool no_jit = false;
  std::string db_label;
  std::unique_ptr<KernelBuilder> builder;
  BuildSettings settings;

  std::mutex device_mutex;
  std::optional<DeviceInfo> device_info;
  std::atomic<const DeviceInfo*> info_ptr{nullptr};
  std::atomic<int> sm_count{0};
  std::atomic<KernelSlot*> sm80_prefill{nullptr};  // set by sm80_prefill_ready once loaded
  std::atomic<KernelSlot*> widening_prefill[2] = {nullptr, nullptr};  // [paged], set by widening_prefill_ready
  std::unique_ptr<Device> device_owner;
  std::atomic<Device*> device_ptr{nullptr};
  const DriverApi* api = nullptr;  // set with the device

  mutable std::shared_mutex table_mutex;  // guards `table`; writers also hold resolve_mutex
  std::unordered_map<std::uint64_t, BucketEntry*> table;
  std::mutex resolve_mutex;                                  // one resolution at a time: one SQLite read per bucket
  std::vector<std::unique_ptr<BucketEntry>> entries;         // every entry ever made (pin() retires, never frees)
  std::map<std::string, std::unique_ptr<KernelSlot>> slots;  // by kind + config JSON

  std::unique_ptr<KernelSlot> op_slots[op_count];  // made under resolve_mutex
  std::atomic<KernelSlot*> op_loaded[op_count] = {};
  std::optional<CascadePlans> cascade_plans_;  // made under resolve_mutex
  std::atomic<const CascadePlans*> cascade_plans_ptr{nullptr};

  std::optional<DeviceBuffer> workspace;
  void* workspace_ptr = nullptr;
  size_t workspace_size = 0;

  mutable std::mutex misc_mutex;  // warnings, pending
  std::string warnings;
  std::vector<std::future<void>> pending;
  std::unique_ptr<ThreadPool> background;  // last: joined first on destruction
};

}  // namespace attnc
