// Timing one attention kernel on one bucket's representative problem with CUDA events: warm-up,
// then back-to-back launches until about `target_ms` of GPU time or `max_repeats` launches, each
// launch between its own pair of events; median, min and p90 of those. Inputs are random (never
// zeros) and rotated past L2: enough independent input sets (contiguous Q/K/V, or Q plus block
// tables over disjoint page ranges of one big paged cache) that consecutive launches never find
// their inputs in L2.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <vector>

#include "runtime/launch/attention_args.h"
#include "runtime/driver/device.h"
#include "runtime/launch/kv_cache_layout.h"
#include "runtime/driver/module.h"
#include "runtime/dispatch/shape_bucket.h"

namespace attnc {

struct MeasureOptions {
  int warmup = 5;
  double target_ms = 50;  // GPU time spent in timed launches per candidate, about
  int min_repeats = 10, max_repeats = 200;
  std::chrono::milliseconds run_timeout{10000};  // a launch batch past this is a timeout (GpuTimeout)
  double rotation_factor = 2;                    // distinct input bytes >= this * L2 (when memory allows)
  double memory_fraction = 0.6;                  // of free device memory the inputs may take
};

struct Timing {
  double median_us = 0, min_us = 0, p90_us = 0;
  int repeats = 0, warmup = 0;
  int num_splits = 1;  // what the call used (the heuristic's pick for 0)
};

// Median, min and p90 of per-launch times (ms in, us out). Empty in: all zero.
Timing summarize_times(std::vector<float> ms);

// How many input sets to rotate: at least 2 and enough for rotation_factor * L2 distinct bytes,
// at most what `memory_budget` holds (and 256). 0 when not even one set fits.
int rotation_sets(std::size_t set_bytes, std::size_t l2_bytes, std::size_t memory_budget, double rotation_factor);

// Device inputs for one bucket's representative problem, built once and shared by every candidate
// of the bucket. Paged kinds use `layout` and `page_size` (the spec's) and the block-table form.
class TimingInputs {
 public:
  TimingInputs(const Device&, const Spec&, KernelKind, const Problem&, int page_size, KvCacheLayout,
               const MeasureOptions&);
  ~TimingInputs();
  TimingInputs(const TimingInputs&) = delete;
  TimingInputs& operator=(const TimingInputs&) = delete;

  int sets() const;
  std::size_t rotated_bytes() const;  // distinct input bytes over all sets
  const Problem& problem() const;

  // Times `kernel` (+ `combine` when the call splits) with `num_splits` per call (0: heuristic).
  // Throws GpuTimeout past options.run_timeout, BadCall when the kernel refuses the call.
  Timing time(const KernelPlan&, const Kernel& kernel, const Kernel* combine, int num_splits);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Throughput of one call of the problem taking `time_us`: TFLOP/s for prefill (2 * visible pairs *
// Hq * (D + Dv)), TB/s for decode (K and V bytes read once).
double problem_throughput(const Spec&, KernelKind, const Problem&, double time_us);
const char* throughput_unit(KernelKind);

}  // namespace attnc
