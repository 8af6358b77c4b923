// The sweep: for each (kind, shape bucket) task of one spec, enumerate the search space, prune,
// compile in parallel (cache hits reused), gate every candidate against the float64 reference,
// time the ones that pass, and write one TuningRecord per bucket (TuningConflict::Replace).
// A budget, Ctrl-C (an atomic flag) and a GPU timeout stop it cleanly: what was measured is kept.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cache/store.h"
#include "runtime/driver/device.h"
#include "runtime/compiler/kernel_builder.h"
#include "runtime/dispatch/shape_bucket.h"
#include "tuner/measure.h"
#include "tuner/progress.h"

namespace attnc {

struct TuneOptions {
  std::chrono::milliseconds budget{std::chrono::minutes(10)};
  int compile_jobs = 0;  // <= 0: one per hardware thread
  MeasureOptions measure;
  const std::atomic<bool>* interrupt = nullptr;  // set (by a SIGINT handler): stop after the current candidate
  std::function<void(const TuneProgress&)> progress;
};

struct BucketOutcome {
  ShapeBucket bucket;
  std::optional<TuningRecord> record;  // written to the store (none when no candidate passed)
  bool complete = true;                // false: cut short by the budget, Ctrl-C or a GPU failure
  int candidates = 0, ok = 0;
  std::string error;  // why nothing could be measured, when so
};

struct TuneResult {
  std::vector<BucketOutcome> buckets;  // one per task started
  // "" (ran to the end), "budget", "interrupted", "timeout" (a kernel did not finish), "gpu_error".
  std::string stopped;
  std::string stop_detail;
  int tasks_total = 0;
};

// `dev`'s context must be current on this thread. `builder` compiles for dev.arch() with the
// compile timeout; records go to `store`.
TuneResult tune(const Spec&, const std::vector<ShapeBucket>& tasks, const Device& dev, KernelBuilder& builder,
                Store& store, const TuneOptions&);

}  // namespace attnc
