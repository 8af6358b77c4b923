#include "tuner/progress.h"

#include <unistd.h>

#include <algorithm>

#include "tuner/budget.h"

namespace attnc {

std::chrono::milliseconds estimate_eta(const TuneProgress& p) {
  if (p.done <= 0 || p.total <= p.done) return std::chrono::milliseconds(0);
  const auto eta = std::chrono::milliseconds(p.elapsed.count() * (p.total - p.done) / p.done);
  return std::min(eta, p.remaining_budget);
}

std::string progress_line(const TuneProgress& p, int bar_width) {
  const int filled = p.total > 0 ? static_cast<int>(static_cast<long long>(bar_width) * p.done / p.total) : 0;
  std::string s = "[" + std::string(filled, '#') + std::string(bar_width - filled, '.') + "] ";
  s += std::to_string(p.done) + "/" + std::to_string(p.total) + " " + p.bucket + " (" + std::to_string(p.task + 1) +
       "/" + std::to_string(p.tasks) + ")";
  if (p.done > 0) s += " ETA " + format_duration(estimate_eta(p));
  return s;
}

ProgressPrinter::ProgressPrinter(std::FILE* out) : out_(out), tty_(isatty(fileno(out)) != 0) {}

void ProgressPrinter::update(const TuneProgress& p) {
  if (!tty_) {
    if (p.bucket_started)
      std::fprintf(out_, "tune: %s (bucket %d/%d, %d/%d candidates done%s)\n", p.bucket.c_str(), p.task + 1, p.tasks,
                   p.done, p.total, p.done ? (", ETA " + format_duration(estimate_eta(p))).c_str() : "");
    return;
  }
  const std::string line = progress_line(p);
  std::fprintf(out_, "\r%s", line.c_str());
  if (line.size() < last_width_) std::fprintf(out_, "%s", std::string(last_width_ - line.size(), ' ').c_str());
  last_width_ = line.size();
  std::fflush(out_);
}

void ProgressPrinter::finish() {
  if (tty_ && last_width_) std::fprintf(out_, "\n");
  last_width_ = 0;
}

}  // namespace attnc
