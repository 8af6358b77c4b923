// TEMPORARY stand-in for tuner/report_html.cpp (written by the lead), so the tuner branch links.
// Delete this file when report_html.cpp is merged.
#include "tuner/report_html.h"

namespace attnc {

std::string tuning_report_html(const std::vector<TuningRecord>& records, const std::string& title) {
  return "<!doctype html><html><head><meta charset=\"utf-8\"><title>attnc tuning</title></head><body><p>" +
         std::to_string(records.size()) + " tuning records (report renderer not merged yet)</p></body></html>\n";
}

}  // namespace attnc
