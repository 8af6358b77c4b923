#include "tuner/report_table.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <tuple>

#include "runtime/dispatch/tuned_choice.h"

namespace attnc {
namespace {

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string choice_label(const std::string& config_json) {
  try {
    const TunedChoice c = TunedChoice::from_json(config_json, Config{});
    return c.config.short_name() + " splits=" + (c.num_splits ? std::to_string(c.num_splits) : "auto");
  } catch (const std::exception&) {
    return config_json;
  }
}

}  // namespace

ReportRow report_row(const TuningRecord& r) {
  ReportRow row;
  row.mode = r.key.mode;
  row.bucket = r.key.bucket;
  row.winner = choice_label(r.config_json);
  row.time_us = r.time_us;
  row.throughput = r.throughput;
  const auto how = nlohmann::json::parse(r.measured_how, nullptr, false);
  if (how.is_object()) {
    if (how.contains("unit") && how["unit"].is_string()) row.unit = how["unit"];
    if (how.contains("complete") && how["complete"].is_boolean()) row.complete = how["complete"];
    if (how.contains("baseline") && how["baseline"].is_object() && how["baseline"].contains("time_us") &&
        how["baseline"]["time_us"].is_number())
      row.baseline_time_us = how["baseline"]["time_us"].get<double>();
  }
  if (row.baseline_time_us && r.time_us > 0) row.speedup = *row.baseline_time_us / r.time_us;
  const auto cands = nlohmann::json::parse(r.candidates_json, nullptr, false);
  if (cands.is_array())
    for (const auto& c : cands) {
      ++row.candidates_total;
      if (c.is_object() && c.contains("status") && c["status"] == "ok") ++row.candidates_ok;
    }
  return row;
}

std::vector<std::vector<std::string>> report_table(const std::vector<TuningRecord>& records) {
  std::vector<ReportRow> rows;
  for (const auto& r : records) rows.push_back(report_row(r));
  auto size_key = [](const ReportRow& r) {
    int b = 0, q = 0, k = 0;
    std::sscanf(r.bucket.c_str(), "b%d.q%d.k%d", &b, &q, &k);
    return std::tuple(r.mode, b, q, k, r.bucket);
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const auto& a, const auto& b) { return size_key(a) < size_key(b); });
  std::vector<std::vector<std::string>> out;
  out.push_back({"bucket", "mode", "winner", "time_us", "throughput", "heuristic_us", "speedup", "ok/total"});
  for (const auto& r : rows)
    out.push_back({r.bucket + (r.complete ? "" : " (partial)"), r.mode, r.winner, fixed(r.time_us, 1),
                   fixed(r.throughput, r.unit == "TB/s" ? 2 : 1) + (r.unit.empty() ? "" : " " + r.unit),
                   r.baseline_time_us ? fixed(*r.baseline_time_us, 1) : "-",
                   r.speedup ? fixed(*r.speedup, 2) + "x" : "-",
                   std::to_string(r.candidates_ok) + "/" + std::to_string(r.candidates_total)});
  return out;
}

}  // namespace attnc
