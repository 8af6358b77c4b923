#include "runtime/compiler/kernel_builder.h"

#include <algorithm>
#include <future>
#include <thread>

#include "runtime/compiler/thread_pool.h"

namespace attnc {

using namespace std::chrono_literals;

const char* to_string(KernelOrigin o) {
  switch (o) {
    case KernelOrigin::memory: return "memory";
    case KernelOrigin::cache: return "cached";
    case KernelOrigin::compiled: return "compiled";
  }
  return "?";
}

KernelBuilder::KernelBuilder(const std::string& db_path, CompileOptions options) : options_(std::move(options)) {
  cache_asked_ = !db_path.empty();
  if (cache_asked_) open_store(db_path);
}

// A cache we may not write (a read-only file or folder, `chattr +i`) still serves its kernels.
void KernelBuilder::open_store(const std::string& db_path) {
  try {
    store_.emplace(Store::open(db_path));
    return;
  } catch (const StoreError& e) {
    if (e.code() != StoreErrc::ReadOnly) return degrade(e.what());
    try {
      store_.emplace(Store::open(db_path, OpenOptions{.mode = OpenMode::ReadOnly}));
    } catch (const std::exception&) {
      return degrade(e.what());  // the read-write error says best what is wrong with the place
    }
    const std::string& m = e.message();  // its first clause: the advice after it is ours to follow
    const std::string why = "cache " + db_path + " is read-only (" + m.substr(0, m.find(';')) +
                            "): kernels in it are used, new kernels stay in memory (not stored)";
    std::lock_guard lock(mutex_);
    warning_ = why;
    reasons_[StoreErrc::ReadOnly] = why;
  } catch (const std::exception& e) {
    degrade(e.what());
  }
}

void KernelBuilder::degrade(const std::string& why) {
  std::lock_guard lock(mutex_);
  if (warning_.empty()) warning_ = "cache unusable, compiling in memory only: " + why;
}

std::string KernelBuilder::cache_warning() const {
  std::lock_guard lock(mutex_);
  return warning_;
}

void KernelBuilder::set_notice(std::function<void(const std::string&)> notice) { notice_ = std::move(notice); }

void KernelBuilder::mark_not_stored(const std::string& key, StoreErrc code, const std::string& why) {
  std::lock_guard lock(mutex_);
  not_stored_[key] = reasons_.emplace(code, why).first->second;
}

std::optional<std::string> KernelBuilder::not_stored(const std::string& key) const {
  std::lock_guard lock(mutex_);
  if (auto it = not_stored_.find(key); it != not_stored_.end()) return it->second;
  return std::nullopt;
}

KernelRecord KernelBuilder::compile_record(const KernelSource& src, const std::string& key) {
  const CompiledKernel c = compile_kernel(src, options_);
  KernelRecord r;
  r.key = key;
  r.spec_id = src.spec_id;
  r.entry = c.entry;
  r.family = src.family;
  r.arch = c.arch;
  r.config_json = src.config_json;
  r.nvrtc_version = c.nvrtc_version;
  r.log = c.log;
  r.cubin = c.cubin;
  r.cubin_bytes = static_cast<std::int64_t>(c.cubin.size());
  r.registers = c.report.registers;
  // What a launch needs: static shared memory (ptxas) plus the plan's dynamic shared memory.
  r.smem_bytes = std::max(c.report.smem_bytes, 0) + src.launch.smem_bytes;
  r.spill_stores = c.report.spill_stores;
  r.spill_loads = c.report.spill_loads;
  r.compile_ms = c.compile_ms;
  return r;
}

LeaseOptions KernelBuilder::lease_options(const KernelSource& src) const {
  LeaseOptions o;
  // Writers of attnc hold the lock for milliseconds; a lock held longer is another program's, and
  // building meanwhile beats waiting for it. finish() stores what this left unstored.
  o.lock_wait = locked_.load() ? 250ms : 1000ms;
  // As many compilers on this host as it has cores (or as this process was asked to run), however
  // many processes compile at once: more only share the cores and the memory.
  o.max_builds_on_host = std::max(jobs_.load(), static_cast<int>(std::thread::hardware_concurrency()));
  if (notice_) {
    o.on_wait = [notice = notice_, entry = src.entry](const LeaseWait& w) {
      notice("waiting for kernel " + entry + ": " + w.describe() + "; a lease whose heartbeat stops changing for " +
             std::to_string(LeaseOptions{}.stale_after.count() / 1000) + " s is taken over");
    };
  }
  return o;
}

std::optional<BuiltKernel> KernelBuilder::build_one(const KernelSource& src, bool wait) {
  const std::string key = kernel_key(src, options_);
  BuiltKernel out{src, {}, KernelOrigin::memory};
  {
    std::lock_guard lock(mutex_);
    if (auto it = memory_.find(key); it != memory_.end()) {
      out.record = it->second;
      return out;
    }
  }
  bool have = false;
  const auto build = [&] { return compile_record(src, key); };
  if (store_ && !store_->read_only() && cache_warning().empty()) {
    try {
      const LeaseOptions lo = lease_options(src);
      auto got = wait ? std::optional(store_->get_or_build(key, build, lo)) : store_->try_get_or_build(key, build, lo);
      if (!got) return std::nullopt;  // another builder holds it: come back later
      out.record = std::move(got->record);
      out.origin = got->built_here ? KernelOrigin::compiled : KernelOrigin::cache;
      if (got->built_here) locked_.store(!got->stored && got->store_errc == StoreErrc::Locked);
      if (!got->stored) {
        mark_not_stored(key, got->store_errc, got->store_error);
        if (got->store_errc == StoreErrc::Locked) {
          std::lock_guard lock(mutex_);
          pending_.push_back(out.record);
        }
      }
      have = true;
    } catch (const CompileError&) {
      throw;
    } catch (const StoreError& e) {  // the cache failed, not the compile: carry on without it
      if (e.code() != StoreErrc::Timeout) degrade(e.what());
      mark_not_stored(key, e.code(), e.code() == StoreErrc::Timeout ? e.what() : cache_warning());
    } catch (const std::exception& e) {
      degrade(e.what());
    }
  } else if (store_ && store_->read_only()) {
    try {
      if (auto r = store_->find_kernel(key)) {
        out.record = std::move(*r);
        out.origin = KernelOrigin::cache;
        have = true;
      }
    } catch (const StoreError& e) {
      degrade(e.what());
    }
    if (!have) mark_not_stored(key, StoreErrc::ReadOnly, cache_warning());
  }
  if (!have) {
    out.record = compile_record(src, key);
    out.origin = KernelOrigin::compiled;
    if (cache_asked_ && !not_stored(key)) mark_not_stored(key, StoreErrc::Open, cache_warning());
  }
  std::lock_guard lock(mutex_);
  memory_.emplace(key, out.record);
  return out;
}

BuiltKernel KernelBuilder::build(const KernelSource& src) { return *build_one(src, true); }

std::vector<BuildOutcome> KernelBuilder::build_many(const std::vector<KernelSource>& sources, int jobs) {
  jobs_.store(std::max(1, jobs));
  std::vector<BuildOutcome> out(sources.size());
  std::mutex deferred_mutex;
  std::vector<size_t> deferred;  // leased by another builder: built or loaded in the second round
  const auto run = [&](size_t i, bool wait) {
    try {
      if (auto b = build_one(sources[i], wait)) {
        out[i].kernel = std::move(*b);
      } else {
        std::lock_guard lock(deferred_mutex);
        deferred.push_back(i);
      }
    } catch (const std::exception& e) {
      out[i].error = e.what();
    }
  };
  {
    ThreadPool pool(jobs);
    std::vector<std::future<void>> done;
    for (size_t i = 0; i < sources.size(); ++i) done.push_back(pool.submit([&, i] { run(i, false); }));
    for (auto& f : done) f.get();
    std::sort(deferred.begin(), deferred.end());
    done.clear();
    for (size_t i : std::vector<size_t>(deferred)) done.push_back(pool.submit([&, i] { run(i, true); }));
    for (auto& f : done) f.get();
  }
  return out;
}

void KernelBuilder::add_spec(const std::string& spec_id, const std::string& name, const std::string& canonical_yaml) {
  std::lock_guard lock(mutex_);
  specs_.push_back(SpecRecord{spec_id, name, canonical_yaml, 0});
}

void KernelBuilder::finish() {
  if (!store_ || store_->read_only() || !cache_warning().empty()) return;
  std::vector<KernelRecord> pending;
  std::vector<SpecRecord> specs;
  {
    std::lock_guard lock(mutex_);
    pending.swap(pending_);
    specs.swap(specs_);
  }
  try {
    if (!pending.empty()) {
      store_->put_kernels(pending);  // insert-if-absent: another process may have stored some
      std::lock_guard lock(mutex_);
      for (const auto& r : pending) not_stored_.erase(r.key);
    }
    for (const auto& s : specs) store_->put_spec(s.spec_id, s.name, s.canonical_yaml);
  } catch (const StoreError& e) {
    // Still locked (or full): the kernels stay "not stored", now with this reason.
    std::lock_guard lock(mutex_);
    reasons_.erase(e.code());
    const std::string& why = reasons_.emplace(e.code(), e.what()).first->second;
    for (const auto& r : pending)
      if (not_stored_.count(r.key)) not_stored_[r.key] = why;
  }
}

}  // namespace attnc
