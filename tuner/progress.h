// Progress of a sweep on stderr: on a terminal one line redrawn in place (a bar, done/total
// candidates, the current bucket, an ETA); otherwise plain lines, one per bucket, for logs.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace attnc {

struct TuneProgress {
  int done = 0, total = 0;      // candidates over the whole sweep
  int task = 0, tasks = 0;      // the bucket being tuned (0-based) and how many there are
  std::string bucket;           // "decode b64.q1.k8192"
  bool bucket_started = false;  // this update opens a bucket
  std::chrono::milliseconds elapsed{0}, remaining_budget{0};
};

// "ETA" from the pace so far, never past what is left of the budget; 0 before any progress.
std::chrono::milliseconds estimate_eta(const TuneProgress&);

// The progress line (without \r or newline), e.g. "[#####.....] 37/120 decode b64.q1.k8192 ETA 2m10s".
std::string progress_line(const TuneProgress&, int bar_width = 24);

class ProgressPrinter {
 public:
  explicit ProgressPrinter(std::FILE* out = stderr);
  void update(const TuneProgress&);
  void finish();  // ends the redrawn line (a newline), so later output starts clean

 private:
  std::FILE* out_;
  bool tty_;
  std::size_t last_width_ = 0;
};

}  // namespace attnc
