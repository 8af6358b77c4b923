#include "runtime/compiler/kernel_builder.h"

#include <algorithm>
#include <future>

#include "runtime/compiler/thread_pool.h"

namespace attnc {

const char* to_string(KernelOrigin o) {
  switch (o) {
    case KernelOrigin::memory: return "memory";
    case KernelOrigin::cache: return "cached";
    case KernelOrigin::compiled: return "compiled";
  }
  return "?";
}

KernelBuilder::KernelBuilder(const std::string& db_path, CompileOptions options) : options_(std::move(options)) {
  if (db_path.empty()) return;
  try {
    store_.emplace(Store::open(db_path));
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

BuiltKernel KernelBuilder::build(const KernelSource& src) {
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
  if (store_ && cache_warning().empty()) {
    try {
      auto got = store_->get_or_build(key, [&] { return compile_record(src, key); });
      out.record = std::move(got.record);
      out.origin = got.built_here ? KernelOrigin::compiled : KernelOrigin::cache;
      if (!got.stored) degrade("could not store " + src.entry + ": " + got.store_error);
      have = true;
    } catch (const CompileError&) {
      throw;
    } catch (const std::exception& e) {  // the cache failed, not the compile: carry on without it
      degrade(e.what());
    }
  }
  if (!have) {
    out.record = compile_record(src, key);
    out.origin = KernelOrigin::compiled;
  }
  std::lock_guard lock(mutex_);
  memory_.emplace(key, out.record);
  return out;
}

std::vector<BuildOutcome> KernelBuilder::build_many(const std::vector<KernelSource>& sources, int jobs) {
  std::vector<BuildOutcome> out(sources.size());
  ThreadPool pool(jobs);
  std::vector<std::future<void>> done;
  for (size_t i = 0; i < sources.size(); ++i)
    done.push_back(pool.submit([&, i] {
      try {
        out[i].kernel = build(sources[i]);
      } catch (const std::exception& e) {
        out[i].error = e.what();
      }
    }));
  for (auto& f : done) f.get();
  return out;
}

}  // namespace attnc

