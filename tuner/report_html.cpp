#include "tuner/report_html.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <tuple>

namespace attnc {
namespace {

using nlohmann::json;

std::string escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string num(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// A record's JSON fields were validated when stored; a foreign or damaged one still renders.
json parse(const std::string& text) { return json::parse(text, nullptr, false); }

double number(const json& j, const char* key, double fallback = 0) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

std::string text(const json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// "decode_split m16n64w1s3 splits 8" from a TunedChoice object.
std::string config_name(const json& c) {
  if (!c.is_object()) return "?";
  auto field = [&](const char* k) { return std::to_string(static_cast<long long>(number(c, k, -1))); };
  std::string s = text(c, "family") + " m" + field("block_m") + "n" + field("block_n") + "w" + field("warps") + "s" +
                  field("stages");
  const int splits = static_cast<int>(number(c, "num_splits", 0));
  s += splits == 0 ? " splits auto" : " splits " + std::to_string(splits);
  return s;
}

struct Candidate {
  std::string name, status, error;
  double time_us = -1;
};

std::vector<Candidate> candidates_of(const TuningRecord& r) {
  std::vector<Candidate> out;
  const json a = parse(r.candidates_json);
  if (!a.is_array()) return out;
  for (const json& c : a) {
    Candidate k;
    k.name = config_name(c.is_object() && c.contains("config") ? c["config"] : json());
    k.status = text(c, "status");
    k.error = text(c, "error");
    k.time_us = number(c, "time_us", -1);
    out.push_back(std::move(k));
  }
  return out;
}

const char* kStyle = R"css(
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
th { background: #f0f0f0; } td.l, th.l { text-align: left; }
.win { color: #0a6d2c; font-weight: bold; } .slow { color: #a33; }
details { margin: 0.6em 0; } summary { cursor: pointer; }
svg text { font: 11px monospace; } .fail { color: #a33; font-family: monospace; }
)css";

// Horizontal bars, fastest first; the winner green, the heuristic blue, others grey.
std::string bars_svg(std::vector<Candidate> ok, const std::string& winner, const std::string& baseline) {
  std::sort(ok.begin(), ok.end(), [](const Candidate& a, const Candidate& b) { return a.time_us < b.time_us; });
  double worst = 0;
  for (const auto& c : ok) worst = std::max(worst, c.time_us);
  if (ok.empty() || worst <= 0) return "<p>no candidate was timed</p>";
  const int row = 16, label = 330, width = 420;
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(label + width + 90) +
                  "\" height=\"" + std::to_string(row * ok.size() + 4) + "\">";
  for (std::size_t i = 0; i < ok.size(); ++i) {
    const Candidate& c = ok[i];
    const int y = static_cast<int>(i) * row;
    const int w = std::max(1, static_cast<int>(width * c.time_us / worst));
    const char* color = c.name == winner ? "#2a9d4b" : c.name == baseline ? "#3a6fd0" : "#aaa";
    s += "<text x=\"0\" y=\"" + std::to_string(y + 12) + "\">" + escape(c.name) + "</text>";
    s += "<rect x=\"" + std::to_string(label) + "\" y=\"" + std::to_string(y + 2) + "\" width=\"" + std::to_string(w) +
         "\" height=\"" + std::to_string(row - 4) + "\" fill=\"" + color + "\"/>";
    s += "<text x=\"" + std::to_string(label + w + 4) + "\" y=\"" + std::to_string(y + 12) + "\">" +
         num(c.time_us, 1) + " us</text>";
  }
  return s + "</svg>";
}

}  // namespace

std::string tuning_report_html(const std::vector<TuningRecord>& records_in, const std::string& title) {
  std::vector<TuningRecord> records = records_in;
  std::sort(records.begin(), records.end(), [](const TuningRecord& a, const TuningRecord& b) {
    return std::tie(a.key.spec_id, a.key.device, a.key.mode, a.key.bucket) <
           std::tie(b.key.spec_id, b.key.device, b.key.mode, b.key.bucket);
  });
  char when[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M", std::localtime(&now));

  std::string h = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + escape(title) +
                  "</title><style>" + kStyle + "</style></head><body>\n<h1>" + escape(title) + "</h1>\n<p>" +
                  std::to_string(records.size()) + " tuning records, written " + when +
                  ". Times are medians of CUDA-event timings; the heuristic is the untuned default config.</p>\n";
  if (records.empty()) return h + "<p>No tuning records: run <code>attnc tune SPEC</code> first.</p></body></html>\n";

  h += "<h2>Winners</h2>\n<table><tr><th class=l>spec</th><th class=l>device</th><th class=l>mode</th>"
       "<th class=l>bucket</th><th class=l>winner</th><th>time us</th><th>throughput</th><th>heuristic us</th>"
       "<th>speedup</th><th>candidates ok</th></tr>\n";
  for (const auto& r : records) {
    const json how = parse(r.measured_how);
    const json base = how.is_object() && how.contains("baseline") ? how["baseline"] : json();
    const double base_us = number(base, "time_us", 0);
    const auto cands = candidates_of(r);
    const long ok = std::count_if(cands.begin(), cands.end(), [](const Candidate& c) { return c.status == "ok"; });
    const double speedup = base_us > 0 && r.time_us > 0 ? base_us / r.time_us : 0;
    const bool complete = !how.is_object() || !how.contains("complete") || how["complete"] != false;
    h += "<tr><td class=l>" + escape(r.key.spec_id.substr(0, 12)) + "</td><td class=l>" + escape(r.key.device) +
         " (" + escape(r.key.arch) + ", " + std::to_string(r.key.sm_count) + " SMs)</td><td class=l>" +
         escape(r.key.mode) + "</td><td class=l>" + escape(r.key.bucket) + (complete ? "" : " (cut short)") +
         "</td><td class=l>" + escape(config_name(parse(r.config_json))) + "</td><td>" + num(r.time_us, 1) +
         "</td><td>" + num(r.throughput, 2) + " " + escape(text(how, "unit")) + "</td><td>" +
         (base_us > 0 ? num(base_us, 1) : "-") + "</td><td class=\"" + (speedup >= 1.0 ? "win" : "slow") + "\">" +
         (speedup > 0 ? num(speedup, 2) + "x" : "-") + "</td><td>" + std::to_string(ok) + " / " +
         std::to_string(cands.size()) + "</td></tr>\n";
  }
  h += "</table>\n<h2>The search</h2>\n<p>Green: the winner; blue: the heuristic's config.</p>\n";
  for (const auto& r : records) {
    const json how = parse(r.measured_how);
    const json base = how.is_object() && how.contains("baseline") ? how["baseline"] : json();
    const auto cands = candidates_of(r);
    std::vector<Candidate> ok, failed;
    for (const auto& c : cands) (c.status == "ok" && c.time_us > 0 ? ok : failed).push_back(c);
    h += "<details><summary>" + escape(r.key.mode) + " " + escape(r.key.bucket) + " on " + escape(r.key.device) +
         ": " + std::to_string(ok.size()) + " timed, " + std::to_string(failed.size()) + " not</summary>\n";
    h += "<p>measured: <code>" + escape(how.is_object() ? how.dump() : r.measured_how) + "</code></p>\n";
    h += bars_svg(ok, config_name(parse(r.config_json)), config_name(base.is_object() ? base["config"] : json()));
    if (!failed.empty()) {
      h += "<ul>";
      for (const auto& c : failed)
        h += "<li class=fail>" + escape(c.name) + ": " + escape(c.status) + (c.error.empty() ? "" : " - ") +
             escape(c.error.substr(0, 300)) + "</li>";
      h += "</ul>";
    }
    h += "</details>\n";
  }
  return h + "</body></html>\n";
}

}  // namespace attnc
