// Shared by the cache tests: temporary directories, record factories, child processes, raw SQL.
#pragma once

#include <fcntl.h>
#include <grp.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "cache/schema.h"
#include "cache/store.h"
#include "tests/unit/temp_dir.h"

namespace attnc::test {

// A fake but well-formed cubin: the ELF magic, then bytes derived from the key.
inline std::vector<char> fake_cubin(const std::string& key, std::size_t bytes) {
  std::vector<char> v(std::max<std::size_t>(bytes, 4));
  std::mt19937 gen(static_cast<unsigned>(std::hash<std::string>{}(key)));
  for (auto& c : v) c = static_cast<char>(gen());
  v[0] = 0x7f;
  v[1] = 'E';
  v[2] = 'L';
  v[3] = 'F';
  return v;
}

inline KernelRecord make_kernel(const std::string& key, std::size_t cubin_bytes = 512,
                                const std::string& arch = "sm_90a", const std::string& family = "prefill_sm90") {
  KernelRecord r;
  r.key = key;
  r.spec_id = "spec-" + key.substr(0, 4);
  r.entry = "attnc_" + key;
  r.family = family;
  r.arch = arch;
  r.config_json = R"({"block_m":128,"block_n":64,"warps":4})";
  r.nvrtc_version = "13.0";
  r.log = "ptxas info: Used 128 registers";
  r.cubin = fake_cubin(key, cubin_bytes);
  r.registers = 128;
  r.smem_bytes = 49152;
  r.compile_ms = 812.5;
  return r;
}

inline TuningKey tuning_key(const std::string& spec, const std::string& bucket = "seq<=1024") {
  return TuningKey{spec, "NVIDIA H200", "sm_90a", 132, "13000", "13.0", "prefill", bucket};
}

inline TuningRecord make_tuning(const TuningKey& key, double time_us, std::int64_t created_at,
                                const std::string& config = R"({"block_m":128})") {
  TuningRecord r;
  r.key = key;
  r.config_json = config;
  r.time_us = time_us;
  r.throughput = 1000.0 / time_us;
  r.candidates_json = R"([{"config":{"block_m":128},"time_us":)" + std::to_string(time_us) + "}]";
  r.measured_how = R"({"repeats":100,"warmup":10})";
  r.created_at = created_at;
  return r;
}

// Runs fn in a forked child and returns its pid; the child exits with fn's return value (an
// exception exits 99 after printing it). Children never touch the parent's Store.
inline pid_t spawn(const std::function<int()>& fn) {
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid != 0) return pid;
  int code = 98;
  try {
    code = fn();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "child %d: %s\n", getpid(), e.what());
    code = 99;
  }
  std::fflush(nullptr);
  _exit(code);
}

inline int wait_exit(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

// Root ignores file permissions, so permission tests drop to "nobody" in a child when run as root.
inline void drop_privileges_if_root() {
  if (geteuid() != 0) return;
  if (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0) {
    std::perror("drop privileges");
    _exit(97);
  }
}

// Raw SQL on a file, beside the Store, as another program (or a damaged one) would.
class RawDb {
 public:
  explicit RawDb(const std::string& path) {
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) throw std::runtime_error("raw open failed");
  }
  ~RawDb() { sqlite3_close(db_); }
  int exec(const std::string& sql) { return sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr); }
  std::string errmsg() const { return sqlite3_errmsg(db_); }
  std::int64_t scalar(const std::string& sql) {
    sqlite3_stmt* st = nullptr;
    std::int64_t v = -1;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
      v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
  }
  sqlite3* raw() const { return db_; }

 private:
  sqlite3* db_ = nullptr;
};

inline std::int64_t unix_now() { return static_cast<std::int64_t>(std::time(nullptr)); }

inline std::int64_t unix_now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

// A file's bytes, to show that something left it exactly as it was.
inline std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The names in a directory, sorted: to show that nothing was left beside a file.
inline std::vector<std::string> dir_names(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// Runs check() in a child that is not root (root ignores file permissions); 0 when it returned "".
inline int as_unprivileged(const std::function<std::string()>& check) {
  return wait_exit(spawn([&] {
    drop_privileges_if_root();
    std::string problem = check();
    if (!problem.empty()) std::fprintf(stderr, "%s\n", problem.c_str());
    return problem.empty() ? 0 : 1;
  }));
}

}  // namespace attnc::test
