#include "runtime/dispatch/dispatcher.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cache/cache_path.h"
#include "generator/plan/plan_attention.h"
#include "generator/plan/plan_prefill_sm90.h"
#include "generator/spec/spec_parse.h"
#include "runtime/launch/attention_launch.h"
#include "runtime/driver/cuda_driver.h"
#include "runtime/dispatch/dispatcher_impl.h"

namespace attnc {
namespace {

bool env_no_jit() {
  const char* v = std::getenv("ATTNC_NO_JIT");
  return v && *v && std::string(v) != "0";
}

}  // namespace

const char* to_string(ChoiceOrigin o) {
  switch (o) {
    case ChoiceOrigin::memory:
      return "memory";
    case ChoiceOrigin::tuned:
      return "tuned";
    case ChoiceOrigin::heuristic:
      return "heuristic";
    case ChoiceOrigin::fallback:
      return "fallback";
  }
  return "?";
}

std::string Selection::to_json() const {
  nlohmann::ordered_json j;
  j["kind"] = to_string(bucket.kind);
  j["bucket"] = bucket.label();
  j["config"] = config ? nlohmann::ordered_json::parse(config->to_json()) : nlohmann::ordered_json();
  j["num_splits"] = num_splits;
  j["origin"] = to_string(origin);
  j["entry"] = entry ? *entry : "";
  j["cached"] = cached;
  j["kernel_loaded"] = kernel_loaded;
  return j.dump();
}

Attention::Impl::Impl(Spec s, AttentionOptions o)
    : spec(std::move(s)), spec_id(attnc::spec_id(spec)), options(std::move(o)) {
  no_jit = options.no_jit.value_or(env_no_jit());
  std::string db = options.db;
  if (db == "none" || db == "disabled") {
    db.clear();
    db_label = "none (memory only)";
  } else {
    if (db.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(default_cache_dir(), ec);
      db = default_cache_path();
    }
    db_label = db;
  }
  builder = std::make_unique<KernelBuilder>(db, CompileOptions{});
  if (std::string w = builder->cache_warning(); !w.empty()) warn(w);
  settings = {builder.get(), CompileOptions{}, no_jit, db_label,
              options.spec_path.empty() ? (spec.name.empty() ? "SPEC.yaml" : spec.name + ".yaml") : options.spec_path};
  if (options.device_info) {
    device_info = options.device_info;
    sm_count = device_info->sm_count;
    info_ptr.store(&*device_info, std::memory_order_release);
  }
}

void Attention::Impl::warn(const std::string& w) {
  std::lock_guard lock(misc_mutex);
  if (warnings.find(w) == std::string::npos) warnings += (warnings.empty() ? "" : "\n") + w;
}

Device& Attention::Impl::open_device() {
  std::lock_guard lock(device_mutex);
  if (Device* d = device_ptr.load()) return *d;
  device_owner = std::make_unique<Device>(options.device);  // DriverUnavailable / CudaError say why
  api = &Driver::get().api();
  if (!device_info) {
    device_info = DeviceInfo::of(*device_owner);
    sm_count = device_info->sm_count;
    info_ptr.store(&*device_info, std::memory_order_release);
  }
  device_ptr.store(device_owner.get(), std::memory_order_release);
  return *device_owner;
}

const DeviceInfo& Attention::Impl::info() {
  if (const DeviceInfo* i = info_ptr.load(std::memory_order_acquire)) return *i;
  open_device();
  return *info_ptr.load();
}

void Attention::Impl::queue_background(KernelSlot* slot) {
  if (slot->queued.exchange(true)) return;
  std::lock_guard lock(misc_mutex);
  if (!background) background = std::make_unique<ThreadPool>(1);
  pending.push_back(background->submit([this, slot] {
    try {
      slot->load(settings, device());
    } catch (const std::exception& e) {
      warn(std::string("background compile of ") + slot->source().entry +
           " failed (the heuristic kernel keeps serving): " + e.what());
    }
  }));
}

void Attention::Impl::check_not_capturing(CUstream stream, const std::string& what) {
  device();
  CUstreamCaptureStatus capturing = CU_STREAM_CAPTURE_STATUS_NONE;
  if (api->StreamIsCapturing(stream, &capturing) == CUDA_SUCCESS && capturing != CU_STREAM_CAPTURE_STATUS_NONE)
    throw DispatchError(what + ": its kernel is not loaded and the stream is being captured (loading cannot be "
                        "captured); make the call once before capturing");
}

void Attention::Impl::make_current() {
  Device& dev = device();
  CUcontext current = nullptr;  // contexts are per thread: a new caller thread gets ours
  if (api->CtxGetCurrent(&current) != CUDA_SUCCESS || current != dev.context()) dev.make_current();
}

template <class MakeConfig>
KernelSlot* Attention::Impl::loaded_once(std::atomic<KernelSlot*>& memo, KernelKind kind, MakeConfig make_config,
                                         CUstream stream, const char* what) {
  if (KernelSlot* s = memo.load(std::memory_order_acquire)) return s;
  KernelSlot* s;
  {
    std::lock_guard lock(resolve_mutex);
    s = slot_for(kind, make_config());
  }
  if (!s->loaded()) {
    check_not_capturing(stream, what);
    s->load(settings, device());
  }
  memo.store(s, std::memory_order_release);
  return s;
}

KernelSlot* Attention::Impl::sm80_prefill_ready(CUstream stream) {
  return loaded_once(
      sm80_prefill, KernelKind::prefill,
      [&] { return default_family_config(spec, KernelKind::prefill, info().arch, "prefill_sm80"); }, stream,
      "attention prefill on prefill_sm80 (a call without total_k)");
}

Config Attention::Impl::widening_prefill_config(KernelKind kind) const {
  return default_prefill_sm90_config(spec, kind, VWiden::producer);
}

KernelSlot* Attention::Impl::widening_prefill_ready(KernelKind kind, CUstream stream) {
  return loaded_once(widening_prefill[kind == KernelKind::prefill_paged], kind,
                     [&] { return widening_prefill_config(kind); }, stream,
                     "attention prefill without v_prewiden (the workspace cannot hold the widened V)");
}

// Whether a v_prewiden kernel cannot serve a call of these lengths from `workspace` bytes (the
// kernel that widens V in its producer serves it then): too small, or (paged) max_seqlen_k unknown.
static bool v_prewiden_unservable(const KernelPlan& plan, int batch, int max_seqlen_k, long long total_k,
                                  size_t workspace) {
  if (!plan.config.v_prewiden) return false;
  const long long rows = v_prewiden_rows(plan, batch, max_seqlen_k, total_k);
  return rows < 0 || v_prewiden_workspace_bytes(plan, rows) > workspace;
}

KernelSlot* Attention::Impl::make_ready(BucketEntry& e, CUstream stream) {
  Device& dev = device();
  check_not_capturing(stream, "attention " + std::string(to_string(e.bucket.kind)) + " bucket " + e.bucket.label());
  if (e.wanted != e.fallback && !e.wanted->loaded() && !e.wanted->failed() && options.background_compile) {
    queue_background(e.wanted);
    e.fallback->load(settings, dev);
    return e.wanted->loaded() ? e.wanted : e.fallback;
  }
  if (e.wanted != e.fallback && !e.wanted->failed()) {
    try {
      e.wanted->load(settings, dev);
      return e.wanted;
    } catch (const CompileError& ex) {
      warn(std::string("tuned kernel for ") + to_string(e.bucket.kind) + " " + e.bucket.label() +
           " failed to compile (the heuristic kernel serves): " + ex.what());
    }
  }
  KernelSlot* s = e.wanted->failed() ? e.fallback : e.wanted;
  s->load(settings, dev);
  return s;
}

Attention::Attention(Spec spec, AttentionOptions options)
    : impl_(std::make_unique<Impl>(std::move(spec), std::move(options))) {}

std::unique_ptr<Attention> Attention::from_file(const std::string& path, AttentionOptions options) {
  if (options.spec_path.empty()) options.spec_path = path;
  return std::make_unique<Attention>(load_spec(path), std::move(options));
}

std::unique_ptr<Attention> Attention::from_yaml(const std::string& yaml, AttentionOptions options) {
  return std::make_unique<Attention>(parse_spec(yaml, "<yaml>"), std::move(options));
}

Attention::~Attention() {
  if (!impl_) return;
  {
    std::unique_ptr<ThreadPool> pool;
    {
      std::lock_guard lock(impl_->misc_mutex);
      pool = std::move(impl_->background);
    }
    pool.reset();  // finishes queued compiles while slots and device still exist
  }
  // Modules and the workspace are released in the device's context.
  if (Device* d = impl_->device_ptr.load()) {
    try {
      d->make_current();
    } catch (...) {
    }
  }
}

const Spec& Attention::spec() const { return impl_->spec; }
const std::string& Attention::spec_id() const { return impl_->spec_id; }
const DeviceInfo& Attention::device_info() { return impl_->info(); }

std::string Attention::warnings() const {
  std::lock_guard lock(impl_->misc_mutex);
  return impl_->warnings;
}

Selection Attention::select(const Problem& p, std::optional<size_t> workspace_bytes) {
  Impl& m = *impl_;
  // The split heuristic needs the SM count, known once the device is open: a select() before any
  // call opens it, so it answers what run() will do. Without a GPU the count stays 0 (no split).
  if (m.sm_count.load(std::memory_order_relaxed) == 0) try {
      m.info();
    } catch (const std::exception&) {
    }
  Selection r;
  r.bucket = ShapeBucket::of(p);
  BucketEntry& e = m.entry(r.bucket, &r.cached);
  KernelSlot* s = m.serving(e, &r.origin);
  const size_t workspace = workspace_bytes.value_or(m.workspace_size);
  const int batch = std::max(1, p.batch);
  if (v_prewiden_unservable(s->plan(), batch, p.max_seqlen_k, (long long)batch * p.max_seqlen_k, workspace)) {
    std::lock_guard lock(m.resolve_mutex);  // as run(): the kernel that widens V in its producer
    s = m.slot_for(p.kind, m.widening_prefill_config(p.kind));
  }
  r.config = &s->plan().config;
  r.entry = &s->source().entry;
  r.kernel_loaded = s->loaded();
  const int max_q = std::max(1, p.max_seqlen_q);
  const long long total_q = std::min<long long>((long long)std::max(1, p.batch) * max_q, 1LL << 30);
  r.num_splits = m.splits(e, *s, {p.batch, max_q, p.max_seqlen_k, int(total_q)}, 0, workspace);
  return r;
}

KernelOrigin Attention::prepare(const Problem& p) {
  Impl& m = *impl_;
  BucketEntry& e = m.entry(ShapeBucket::of(p));
  if (e.wanted != e.fallback) {
    try {
      return e.wanted->build(m.settings);
    } catch (const CompileError& ex) {
      m.warn(std::string("tuned kernel ") + e.wanted->source().entry + " failed to compile: " + ex.what());
    }
  }
  return e.fallback->build(m.settings);
}

size_t Attention::workspace_needed(const Problem& largest, int max_num_splits) {
  Impl& m = *impl_;
  auto lengths = [](int top) {  // every power of two below `top`, and top itself
    std::vector<int> out;
    for (int v = 1; v < top; v *= 2) out.push_back(v);
    out.push_back(std::max(1, top));
    return out;
  };
  size_t most = 0;
  for (int q : lengths(largest.max_seqlen_q))
    for (int k : lengths(largest.max_seqlen_k))
      for (int b = 1; b <= std::max(1, largest.batch); ++b) {
        BucketEntry& e = m.entry(ShapeBucket::of({largest.kind, b, q, k}));
        for (KernelSlot* s : {e.wanted, e.fallback}) {
          int forcible = max_useful_splits(s->plan(), k);
          if (max_num_splits > 0) forcible = std::min(forcible, max_num_splits);
          const int n = std::max(m.splits(e, *s, {b, q, k, b * q}, 0, SIZE_MAX), forcible);
          most = std::max(most, attention_workspace_bytes(s->plan(), b * q, n));
          const long long v_rows = v_prewiden_rows(s->plan(), b, k, (long long)b * k);
          most = std::max(most, v_prewiden_workspace_bytes(s->plan(), v_rows));
        }
      }
  return most;
}

void Attention::reserve(const Problem& largest, int max_num_splits) {
  reserve_bytes(workspace_needed(largest, max_num_splits));
}

void Attention::reserve_bytes(size_t bytes) {
  Impl& m = *impl_;
  if (bytes <= m.workspace_size) return;
  m.device().make_current();
  m.workspace_ptr = nullptr;
  m.workspace_size = 0;
  m.workspace.reset();
  m.workspace.emplace(bytes);
  m.workspace_ptr = m.workspace->as<void>();
  m.workspace_size = bytes;
}

size_t Attention::workspace_bytes() const { return impl_->workspace_size; }

void Attention::run(const AttentionArgs& a, KernelKind kind, CUstream stream) {
  Impl& m = *impl_;
  const int max_q = query_len_bound(a);
  BucketEntry& e = m.entry(ShapeBucket::of({kind, a.batch, max_q, a.max_seqlen_k}));
  ChoiceOrigin origin;
  KernelSlot* s = m.serving(e, &origin);
  if (!s->loaded()) s = m.make_ready(e, stream);
  if (needs_total_k(s->plan()) && known_total_k(a) < 0) s = m.sm80_prefill_ready(stream);
  AttentionArgs args = a;
  if (!a.workspace) {
    args.workspace = m.workspace_ptr;
    args.workspace_bytes = m.workspace_size;
  }
  // v_prewiden widens V into the workspace: where it cannot hold it, the kernel that widens V in its
  // producer serves the call.
  if (v_prewiden_unservable(s->plan(), a.batch, a.max_seqlen_k, known_total_k(a), args.workspace_bytes))
    s = m.widening_prefill_ready(kind, stream);
  m.make_current();

  args.num_splits = m.splits(e, *s, {a.batch, max_q, a.max_seqlen_k, a.total_q, 0, a.seqlen_k_sum}, a.num_splits,
                             args.workspace_bytes);
  const AttentionLaunch launch = prepare_attention(s->plan(), args);
  launch_attention(s->kernel(), s->companion(), launch, stream);
}

void Attention::pin(const ShapeBucket& bucket, const TunedChoice& choice) { impl_->pin(bucket, choice); }

void Attention::wait_background() {
  std::vector<std::future<void>> pending;
  {
    std::lock_guard lock(impl_->misc_mutex);
    pending.swap(impl_->pending);
  }
  for (auto& f : pending) f.wait();
}

}  // namespace attnc
