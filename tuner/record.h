// What the tuner writes into a TuningRecord: the winner's TunedChoice, every candidate's outcome
// (candidates_json) and how they were measured (measured_how). The HTML report and `--report`
// read exactly these fields; docs/tuner.md lists them.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cache/records.h"
#include "runtime/dispatch/shape_bucket.h"
#include "runtime/dispatch/tuned_choice.h"

namespace attnc {

// Candidate statuses, as stored.
inline constexpr const char* kStatusOk = "ok";
inline constexpr const char* kStatusFailedCheck = "failed_check";
inline constexpr const char* kStatusCompileError = "compile_error";
inline constexpr const char* kStatusSpills = "spills";
inline constexpr const char* kStatusPruned = "pruned";
inline constexpr const char* kStatusTimeout = "timeout";
inline constexpr const char* kStatusError = "error";

struct CandidateResult {
  TunedChoice choice;
  bool baseline = false;
  std::string status;  // one of the above; empty = never reached (budget or Ctrl-C), not recorded
  std::optional<double> time_us, min_us, p90_us, throughput, compile_ms;
  int repeats = 0;
  int splits_used = 0;  // what the timed call used (the heuristic's pick for num_splits 0)
  std::string error;    // why, when not ok
};

// {"config": <TunedChoice>, "status", "time_us", "throughput", "compile_ms" (numbers or null),
//  "error" (when not ok), plus "min_us", "p90_us", "repeats", "splits_used", "baseline" when known}.
nlohmann::ordered_json candidate_json(const CandidateResult&);

struct MeasuredHow {
  int warmup = 0, repeats = 0;  // repeats: the winner's timed launches
  double target_ms = 0;
  int max_repeats = 0;
  int rotation_sets = 0;
  double rotated_bytes = 0, l2_bytes = 0;
  Problem problem;
  int page_size = 0;  // 0 for contiguous prefill
  std::string unit;   // "TFLOP/s" or "TB/s"
  TunedChoice baseline;
  std::optional<double> baseline_time_us;
  double budget_s = 0;
  bool complete = true;
};

// {"timer": "cuda_events", "warmup", "repeats", "statistic": "median", "rotation_sets",
//  "rotated_bytes", "l2_bytes", "problem": {batch, seqlen_q, seqlen_k, page_size}, "unit",
//  "baseline": {"config", "time_us"}, "budget_s", "attnc_version", "complete", "target_ms", "max_repeats"}.
nlohmann::ordered_json measured_how_json(const MeasuredHow&);

// The fastest "ok" candidate; none when no candidate passed.
std::optional<std::size_t> pick_winner(const std::vector<CandidateResult>&);

// The record for one bucket: key as given, config_json = the winner's TunedChoice, its median and
// throughput, every reached candidate, measured_how (repeats from the winner). Requires a winner.
TuningRecord make_tuning_record(const TuningKey&, const std::vector<CandidateResult>&, std::size_t winner,
                                MeasuredHow how);

const char* attnc_version();

}  // namespace attnc
