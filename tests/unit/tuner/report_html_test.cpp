#include "tuner/report_html.h"

#include <gtest/gtest.h>

namespace attnc {
namespace {

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TuningRecord decode_record() {
  TuningRecord r;
  r.key = {"abc123", "NVIDIA H200", "sm_90a", 132, "13000", "13.0", "decode", "b64.q1.k8192"};
  r.config_json = R"({"family":"decode_split","block_m":16,"block_n":64,"warps":1,"stages":3,"splits":1,"num_splits":4})";
  r.time_us = 600;
  r.throughput = 3.5;
  r.candidates_json = R"([
    {"config":{"family":"decode_split","block_m":64,"block_n":64,"warps":4,"stages":2,"splits":1,"num_splits":0},
     "status":"ok","time_us":1200.0,"throughput":1.7},
    {"config":{"family":"decode_split","block_m":16,"block_n":64,"warps":1,"stages":3,"splits":1,"num_splits":4},
     "status":"ok","time_us":600.0,"throughput":3.5},
    {"config":{"family":"decode_split","block_m":16,"block_n":128,"warps":1,"stages":4,"splits":1,"num_splits":1},
     "status":"compile_error","time_us":null,"error":"<ptxas> too much shared data"}])";
  r.measured_how = R"({"timer":"cuda_events","unit":"TB/s","baseline":{"config":
    {"family":"decode_split","block_m":64,"block_n":64,"warps":4,"stages":2,"splits":1,"num_splits":0},"time_us":1200.0}})";
  return r;
}

TEST(TuningReportHtml, ShowsWinnerAgainstHeuristicAndEveryCandidate) {
  const std::string h = tuning_report_html({decode_record()}, "attnc <tuning>");
  EXPECT_NE(h.find("<title>attnc &lt;tuning&gt;</title>"), std::string::npos);
  EXPECT_NE(h.find("decode_split m16n64w1s3 splits 4"), std::string::npos);
  EXPECT_NE(h.find("2.00x"), std::string::npos);  // 1200 us heuristic / 600 us winner
  EXPECT_NE(h.find("2 / 3"), std::string::npos);  // candidates ok / total
  EXPECT_EQ(count(h, "<rect"), 2u);               // one bar per timed candidate
  EXPECT_NE(h.find("fill=\"#2a9d4b\""), std::string::npos);  // the winner's bar
  EXPECT_NE(h.find("fill=\"#3a6fd0\""), std::string::npos);  // the heuristic's bar
  EXPECT_NE(h.find("compile_error - &lt;ptxas&gt; too much shared data"), std::string::npos);
  EXPECT_EQ(h.find("<script"), std::string::npos);  // self-contained, static
}

TEST(TuningReportHtml, DamagedOrEmptyInputStillRenders) {
  EXPECT_NE(tuning_report_html({}, "t").find("No tuning records"), std::string::npos);
  TuningRecord r = decode_record();
  r.candidates_json = "not json";
  r.measured_how = "{";
  const std::string h = tuning_report_html({r}, "t");
  EXPECT_NE(h.find("0 / 0"), std::string::npos);
  EXPECT_NE(h.find("no candidate was timed"), std::string::npos);
}

}  // namespace
}  // namespace attnc
