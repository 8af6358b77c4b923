// The JSON a tuning record carries (candidates_json, measured_how, config_json): the field names
// the HTML report and --report read, and the summary table built from them.
#include "tuner/record.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tuner/report_table.h"

namespace attnc {
namespace {

using nlohmann::json;

Config decode_config(int block_n) {
  Config c;
  c.family = "decode_split";
  c.block_m = 64;
  c.warps = 4;
  c.block_n = block_n;
  return c;
}

std::vector<CandidateResult> candidates() {
  std::vector<CandidateResult> cs(4);
  cs[0].choice = {decode_config(64), 0};
  cs[0].baseline = true;
  cs[0].status = kStatusOk;
  cs[0].time_us = 100;
  cs[0].min_us = 95;
  cs[0].p90_us = 110;
  cs[0].throughput = 2.5;
  cs[0].compile_ms = 1200;
  cs[0].repeats = 50;
  cs[0].splits_used = 3;
  cs[1].choice = {decode_config(128), 8};
  cs[1].status = kStatusOk;
  cs[1].time_us = 80;
  cs[1].throughput = 3.1;
  cs[1].compile_ms = 900;
  cs[1].repeats = 60;
  cs[1].splits_used = 8;
  cs[2].choice = {decode_config(32), 2};
  cs[2].status = kStatusFailedCheck;
  cs[2].error = "FAIL max_abs_err=1";
  cs[2].compile_ms = 800;
  cs[3].choice = {decode_config(256), 0};  // never reached: not recorded
  return cs;
}

TuningKey key() {
  return {"0123456789abcdef", "NVIDIA H200", "sm_90a", 132, "13000", "13.0", "decode", "b64.q1.k8192"};
}

MeasuredHow how() {
  MeasuredHow m;
  m.warmup = 5;
  m.rotation_sets = 2;
  m.rotated_bytes = 4e9;
  m.l2_bytes = 60e6;
  m.problem = {KernelKind::decode, 64, 1, 8192};
  m.page_size = 16;
  m.unit = "TB/s";
  m.baseline = {decode_config(64), 0};
  m.budget_s = 600;
  m.complete = false;
  return m;
}

TEST(Record, WinnerIsTheFastestOk) {
  auto cs = candidates();
  EXPECT_EQ(pick_winner(cs), 1u);
  cs[1].status = kStatusTimeout;
  EXPECT_EQ(pick_winner(cs), 0u);
  cs[0].status = kStatusError;
  EXPECT_FALSE(pick_winner(cs).has_value());
}

TEST(Record, CandidateObjects) {
  const auto cs = candidates();
  const json ok = json::parse(candidate_json(cs[0]).dump());
  EXPECT_EQ(ok["status"], "ok");
  EXPECT_EQ(ok["time_us"], 100.0);
  EXPECT_EQ(ok["throughput"], 2.5);
  EXPECT_EQ(ok["compile_ms"], 1200.0);
  EXPECT_FALSE(ok.contains("error"));
  EXPECT_EQ(ok["config"]["num_splits"], 0);
  EXPECT_EQ(ok["config"]["family"], "decode_split");
  EXPECT_EQ(TunedChoice::from_json(ok["config"].dump(), Config{}), cs[0].choice);
  const json bad = json::parse(candidate_json(cs[2]).dump());
  EXPECT_EQ(bad["status"], "failed_check");
  EXPECT_TRUE(bad["time_us"].is_null());
  EXPECT_TRUE(bad["throughput"].is_null());
  EXPECT_EQ(bad["error"], "FAIL max_abs_err=1");
}

TEST(Record, TuningRecordFields) {
  const auto cs = candidates();
  const TuningRecord r = make_tuning_record(key(), cs, 1, how());
  EXPECT_EQ(r.key, key());
  EXPECT_EQ(r.time_us, 80);
  EXPECT_EQ(r.throughput, 3.1);
  EXPECT_EQ(TunedChoice::from_json(r.config_json, Config{}), cs[1].choice);
  const json c = json::parse(r.candidates_json);
  ASSERT_TRUE(c.is_array());
  EXPECT_EQ(c.size(), 3u);  // the unreached one is left out
  for (const auto& o : c)
    for (const char* f : {"config", "status", "time_us", "throughput", "compile_ms"}) EXPECT_TRUE(o.contains(f)) << f;
  const json m = json::parse(r.measured_how);
  EXPECT_EQ(m["timer"], "cuda_events");
  EXPECT_EQ(m["statistic"], "median");
  EXPECT_EQ(m["warmup"], 5);
  EXPECT_EQ(m["repeats"], 60);  // the winner's
  EXPECT_EQ(m["rotation_sets"], 2);
  EXPECT_EQ(m["rotated_bytes"], 4e9);
  EXPECT_EQ(m["l2_bytes"], 60e6);
  EXPECT_EQ(m["problem"], json({{"batch", 64}, {"seqlen_q", 1}, {"seqlen_k", 8192}, {"page_size", 16}}));
  EXPECT_EQ(m["unit"], "TB/s");
  EXPECT_EQ(m["baseline"]["time_us"], 100.0);
  EXPECT_EQ(m["baseline"]["config"]["num_splits"], 0);
  EXPECT_EQ(m["budget_s"], 600.0);
  EXPECT_EQ(m["attnc_version"], ATTNC_PROJECT_VERSION);  // CMake's project() version
  EXPECT_EQ(m["complete"], false);
  EXPECT_THROW(make_tuning_record(key(), cs, 2, how()), std::logic_error);
}

TEST(Record, ReportTableRow) {
  const TuningRecord r = make_tuning_record(key(), candidates(), 1, how());
  const ReportRow row = report_row(r);
  EXPECT_EQ(row.winner, "m64n128w4s2 splits=8");
  EXPECT_EQ(row.unit, "TB/s");
  ASSERT_TRUE(row.speedup.has_value());
  EXPECT_DOUBLE_EQ(*row.speedup, 1.25);
  EXPECT_EQ(row.candidates_ok, 2);
  EXPECT_EQ(row.candidates_total, 3);
  EXPECT_FALSE(row.complete);
  const auto table = report_table({r});
  ASSERT_EQ(table.size(), 2u);
  EXPECT_EQ(table[0][0], "bucket");
  EXPECT_EQ(table[1][0], "b64.q1.k8192 (partial)");
  EXPECT_EQ(table[1][6], "1.25x");
  EXPECT_EQ(table[1][7], "2/3");
  TuningRecord junk = r;  // unreadable JSON still gives a row
  junk.candidates_json = "nope";
  junk.measured_how = "{";
  EXPECT_EQ(report_row(junk).candidates_total, 0);
  EXPECT_FALSE(report_row(junk).speedup.has_value());
}

}  // namespace
}  // namespace attnc
