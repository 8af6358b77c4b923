// The tuning report: one self-contained HTML page (no scripts, no external files) over tuning
// records: the winner per (spec, device, mode, bucket) against the heuristic, and the search
// itself, every candidate's time as a bar, failures with their reason.
#pragma once

#include <string>
#include <vector>

#include "cache/records.h"

namespace attnc {

std::string tuning_report_html(const std::vector<TuningRecord>&, const std::string& title);

}  // namespace attnc
