#pragma once

#include <string>
#include <vector>

#include "cache/records.h"

namespace attnc {

std::string tuning_report_html(const std::vector<TuningRecord>& records, const std::string& title);

}  // namespace attnc
