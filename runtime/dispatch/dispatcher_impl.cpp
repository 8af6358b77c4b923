// The dispatcher's choice table: a bucket's config comes from a pin, else its tuning record (read
// once, a miss remembered as the heuristic entry), else the heuristic.
#include "runtime/dispatch/dispatcher_impl.h"

#include <algorithm>

#include "generator/spec/spec_parse.h"
#include "runtime/compiler/nvrtc_compiler.h"
#include "runtime/dispatch/tuning_key.h"

namespace attnc {
namespace {

std::string slot_key(KernelKind kind, const Config& c) { return std::string(to_string(kind)) + c.to_json(); }

}  // namespace

void Attention::Impl::check_kind(KernelKind kind) const {
  if (kind != KernelKind::prefill && kind != KernelKind::prefill_paged && kind != KernelKind::decode)
    throw DispatchError(std::string("attention kind '") + to_string(kind) +
                        "': the dispatcher serves prefill, prefill_paged and decode");
  const auto kinds = kernels_of(spec);
  if (std::find(kinds.begin(), kinds.end(), kind) != kinds.end()) return;
  std::string have;
  for (KernelKind k : kinds) have += (have.empty() ? "" : ", ") + std::string(to_string(k));
  throw DispatchError("spec '" + spec.name + "' has no " + to_string(kind) + " kernel (its kernels: " + have +
                      "); add it to the spec's `kernels:` list");
}

KernelSlot* Attention::Impl::slot_for(KernelKind kind, const Config& config) {
  auto& slot = slots[slot_key(kind, config)];
  if (!slot) {
    try {
      slot = std::make_unique<KernelSlot>(spec, kind, config, info().arch);
    } catch (...) {
      slots.erase(slot_key(kind, config));
      throw;
    }
  }
  return slot.get();
}

KernelSlot* Attention::Impl::heuristic_slot(KernelKind kind) {
  return slot_for(kind, default_config(spec, kind, info().arch));
}

BucketEntry& Attention::Impl::resolve(const ShapeBucket& bucket) {
  std::lock_guard resolve_lock(resolve_mutex);
  {
    std::shared_lock lock(table_mutex);
    if (auto it = table.find(bucket.key()); it != table.end()) return *it->second;
  }
  check_kind(bucket.kind);
  auto e = std::make_unique<BucketEntry>();
  e->bucket = bucket;
  e->fallback = e->wanted = heuristic_slot(bucket.kind);
  e->choice = {e->fallback->plan().config, 0};
  Store* store = builder->store();
  if (options.use_tuning && store) {
    const TuningKey key = tuning_key(info(), spec_id, bucket.kind, bucket);
    try {
      if (auto rec = store->find_tuning(key)) {
        e->origin = ChoiceOrigin::fallback;  // until the record proves usable
        const TunedChoice choice = TunedChoice::from_json(rec->config_json, e->fallback->plan().config);
        e->wanted = slot_for(bucket.kind, choice.config);
        e->choice = choice;
        e->origin = ChoiceOrigin::tuned;
      }
    } catch (const std::exception& ex) {
      warn("tuning record for " + std::string(to_string(bucket.kind)) + " " + bucket.label() +
           " not used (the heuristic serves): " + ex.what());
    }
  }
  BucketEntry* out = e.get();
  entries.push_back(std::move(e));
  std::unique_lock lock(table_mutex);
  table[bucket.key()] = out;
  return *out;
}

void Attention::Impl::pin(const ShapeBucket& bucket, const TunedChoice& choice) {
  std::lock_guard resolve_lock(resolve_mutex);
  check_kind(bucket.kind);
  auto e = std::make_unique<BucketEntry>();
  e->bucket = bucket;
  e->fallback = heuristic_slot(bucket.kind);
  e->wanted = slot_for(bucket.kind, choice.config);
  e->choice = choice;
  e->origin = ChoiceOrigin::memory;
  BucketEntry* out = e.get();
  entries.push_back(std::move(e));
  std::unique_lock lock(table_mutex);
  table[bucket.key()] = out;
}

}  // namespace attnc
