#include "tuner/record.h"

#include <stdexcept>

#include "attnc_version.h"

namespace attnc {
namespace {

nlohmann::ordered_json number_or_null(const std::optional<double>& v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json choice_json(const TunedChoice& c) { return nlohmann::ordered_json::parse(c.to_json()); }

}  // namespace

const char* attnc_version() { return ATTNC_VERSION; }

nlohmann::ordered_json candidate_json(const CandidateResult& c) {
  nlohmann::ordered_json j;
  j["config"] = choice_json(c.choice);
  j["status"] = c.status;
  j["time_us"] = number_or_null(c.time_us);
  j["throughput"] = number_or_null(c.throughput);
  j["compile_ms"] = number_or_null(c.compile_ms);
  if (c.status != kStatusOk) j["error"] = c.error;
  if (c.min_us) j["min_us"] = *c.min_us;
  if (c.p90_us) j["p90_us"] = *c.p90_us;
  if (c.repeats) j["repeats"] = c.repeats;
  if (c.time_us) j["splits_used"] = c.splits_used;
  if (c.baseline) j["baseline"] = true;
  return j;
}

nlohmann::ordered_json measured_how_json(const MeasuredHow& m) {
  nlohmann::ordered_json j;
  j["timer"] = "cuda_events";
  j["warmup"] = m.warmup;
  j["repeats"] = m.repeats;
  j["statistic"] = "median";
  j["rotation_sets"] = m.rotation_sets;
  j["rotated_bytes"] = m.rotated_bytes;
  j["l2_bytes"] = m.l2_bytes;
  j["problem"] = {{"batch", m.problem.batch},
                  {"seqlen_q", m.problem.max_seqlen_q},
                  {"seqlen_k", m.problem.max_seqlen_k},
                  {"page_size", m.page_size}};
  j["unit"] = m.unit;
  j["baseline"] = {{"config", choice_json(m.baseline)}, {"time_us", number_or_null(m.baseline_time_us)}};
  j["budget_s"] = m.budget_s;
  j["attnc_version"] = attnc_version();
  j["complete"] = m.complete;
  j["target_ms"] = m.target_ms;
  j["max_repeats"] = m.max_repeats;
  return j;
}

std::optional<std::size_t> pick_winner(const std::vector<CandidateResult>& cs) {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < cs.size(); ++i)
    if (cs[i].status == kStatusOk && cs[i].time_us && (!best || *cs[i].time_us < *cs[*best].time_us)) best = i;
  return best;
}

TuningRecord make_tuning_record(const TuningKey& key, const std::vector<CandidateResult>& cs, std::size_t winner,
                                MeasuredHow how) {
  if (winner >= cs.size() || cs[winner].status != kStatusOk || !cs[winner].time_us)
    throw std::logic_error("make_tuning_record: the winner must be an ok candidate with a time");
  const CandidateResult& w = cs[winner];
  TuningRecord r;
  r.key = key;
  r.config_json = w.choice.to_json();
  r.time_us = *w.time_us;
  r.throughput = w.throughput.value_or(0);
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  for (const auto& c : cs)
    if (!c.status.empty()) all.push_back(candidate_json(c));
  r.candidates_json = all.dump();
  how.repeats = w.repeats;
  for (const auto& c : cs)
    if (c.baseline && c.time_us) how.baseline_time_us = c.time_us;
  r.measured_how = measured_how_json(how).dump();
  return r;
}

}  // namespace attnc
