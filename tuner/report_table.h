// The summary table of tuning records that `attnc tune` prints after a sweep and for --report:
// one row per record, read back from the stored JSON fields only.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cache/records.h"

namespace attnc {

struct ReportRow {
  std::string mode, bucket, winner;  // winner: "m64n64w4s2 splits=8" (splits=auto for the heuristic)
  double time_us = 0, throughput = 0;
  std::string unit;                        // from measured_how
  std::optional<double> baseline_time_us;  // the default config's median, when it was measured
  std::optional<double> speedup;           // baseline / winner
  int candidates_ok = 0, candidates_total = 0;
  bool complete = true;
};

// Malformed JSON fields give a row with what could be read (never throws).
ReportRow report_row(const TuningRecord&);

// Rows sorted by mode, then bucket size; header: bucket, mode, winner, time_us, throughput,
// heuristic_us, speedup, ok/total.
std::vector<std::vector<std::string>> report_table(const std::vector<TuningRecord>&);

}  // namespace attnc
