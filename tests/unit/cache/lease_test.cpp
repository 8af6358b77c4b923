// get_or_build across threads and processes: each key built once, dead builders taken over.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <thread>

#include "cache_test_util.h"

namespace attnc {
namespace {

using namespace std::chrono_literals;
using test::make_kernel;
using test::RawDb;
using test::spawn;
using test::TempDir;
using test::wait_exit;

// Appends "<key>\n" with one O_APPEND write, so lines from many processes never interleave.
void log_build(const std::string& log, const std::string& key) {
  int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  std::string line = key + "\n";
  if (fd < 0 || ::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) std::abort();
  ::close(fd);
}

std::map<std::string, int> count_builds(const std::string& log) {
  std::map<std::string, int> n;
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);) ++n[line];
  return n;
}

std::vector<std::string> keys(int n) {
  std::vector<std::string> k;
  for (int i = 0; i < n; ++i) k.push_back("key" + std::to_string(i));
  return k;
}

// nproc processes start together (a pipe as starting gun) and each asks for every key, in its own
// order, with a build that sleeps so that the builds overlap.
void race(int nproc, int nkeys, bool precreate) {
  TempDir d;
  const std::string db = d.file("attnc.db"), log = d.file("builds.log");
  if (precreate) Store::open(db);
  int gun[2];
  ASSERT_EQ(pipe(gun), 0);
  std::vector<pid_t> kids;
  for (int p = 0; p < nproc; ++p) {
    kids.push_back(spawn([&, p] {
      close(gun[1]);
      char c;
      if (read(gun[0], &c, 1) != 0) return 2;  // EOF is the signal
      Store s = Store::open(db);
      auto order = keys(nkeys);
      std::shuffle(order.begin(), order.end(), std::mt19937(p));
      for (const auto& key : order) {
        auto r = s.get_or_build(key, [&] {
          log_build(log, key);
          std::this_thread::sleep_for(std::chrono::milliseconds(50 + 10 * (p % 3)));
          return make_kernel(key, 8192);
        });
        if (r.record.key != key || r.record.cubin != test::fake_cubin(key, 8192) || !r.stored) {
          std::fprintf(stderr, "pid %d: bad result for %s: %s\n", getpid(), key.c_str(), r.store_error.c_str());
          return 1;
        }
      }
      return 0;
    }));
  }
  close(gun[0]);
  close(gun[1]);
  for (pid_t k : kids) EXPECT_EQ(wait_exit(k), 0);

  auto builds = count_builds(log);
  EXPECT_EQ(builds.size(), static_cast<std::size_t>(nkeys));
  for (const auto& [key, n] : builds) EXPECT_EQ(n, 1) << key << " was built " << n << " times";
  Store s = Store::open(db);
  Stats st = s.stats();
  EXPECT_EQ(st.kernels, nkeys);
  EXPECT_EQ(st.leases, 0) << "every lease released";
  auto rep = s.verify();
  EXPECT_TRUE(rep.ok()) << (rep.problems.empty() ? "" : rep.problems[0]);
}

TEST(Lease, TwoProcessesBuildEachKeyOnce) { race(2, 20, true); }
TEST(Lease, EightProcessesBuildEachKeyOnce) { race(8, 20, true); }
TEST(Lease, EightProcessesCreatingTheFileTogether) { race(8, 10, false); }

// The opening half of the test above, many times over and with nothing else to do, so that the
// processes' schema checks overlap the first one's migration as often as possible: every process
// must accept the cache that another one has just created (it once read user_version before and
// sqlite_master after that commit, and called the fresh file "not an attnc cache").
TEST(Lease, EightProcessesOpeningNewFilesTogether) {
  for (int round = 0; round < 40; ++round) {
    TempDir d;
    const std::string db = d.file("attnc.db");
    int gun[2];
    ASSERT_EQ(pipe(gun), 0);
    std::vector<pid_t> kids;
    for (int p = 0; p < 8; ++p) {
      kids.push_back(spawn([&] {
        close(gun[1]);
        char c;
        if (read(gun[0], &c, 1) != 0) return 2;
        Store s = Store::open(db);
        return s.stats().schema_version == schema::kVersion ? 0 : 3;
      }));
    }
    close(gun[0]);
    close(gun[1]);
    for (pid_t k : kids) EXPECT_EQ(wait_exit(k), 0) << "round " << round;
    if (HasFailure()) return;
    EXPECT_TRUE(Store::open(db).verify().ok());
  }
}

TEST(Lease, HitDoesNotBuild) {
  TempDir d;
  Store s = Store::open(d.file("attnc.db"));
  int builds = 0;
  auto build = [&] {
    ++builds;
    return make_kernel("k");
  };
  auto first = s.get_or_build("k", build);
  EXPECT_TRUE(first.built_here);
  EXPECT_TRUE(first.stored);
  EXPECT_EQ(first.record.cubin_bytes, 512);
  auto second = s.get_or_build("k", build);
  EXPECT_FALSE(second.built_here);
  EXPECT_EQ(second.record.cubin, first.record.cubin);
  EXPECT_EQ(builds, 1);
}

TEST(Lease, ThreadsOfOneProcessBuildEachKeyOnce) {
  TempDir d;
  Store s = Store::open(d.file("attnc.db"));
  std::mutex m;
  std::map<std::string, int> builds;
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      auto order = keys(12);
      std::shuffle(order.begin(), order.end(), std::mt19937(t));
      for (const auto& key : order) {
        s.get_or_build(key, [&] {
          {
            std::lock_guard lock(m);
            ++builds[key];
          }
          std::this_thread::sleep_for(20ms);
          return make_kernel(key);
        });
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(builds.size(), 12u);
  for (const auto& [key, n] : builds) EXPECT_EQ(n, 1) << key;
}

// A builder killed mid-build leaves its lease behind; on the same host its dead pid gives it away
// at once, whether or not its parent has reaped it yet.
void killed_holder(bool reap_first) {
  TempDir d;
  const std::string db = d.file("attnc.db");
  Store::open(db);
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t holder = spawn([&] {
    Store s = Store::open(db);
    s.get_or_build("k", [&]() -> KernelRecord {
      if (write(ready[1], "x", 1) != 1) _exit(3);
      std::this_thread::sleep_for(60s);
      _exit(4);
    });
    return 5;
  });
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  close(ready[0]);
  close(ready[1]);
  { EXPECT_EQ(RawDb(db).scalar("SELECT pid FROM leases WHERE key = 'k'"), holder); }
  kill(holder, SIGKILL);
  if (reap_first) {
    EXPECT_EQ(wait_exit(holder), 128 + SIGKILL);
  } else {
    std::this_thread::sleep_for(50ms);  // let it die; it stays a zombie until reaped below
  }

  Store s = Store::open(db);
  auto t0 = std::chrono::steady_clock::now();
  auto r = s.get_or_build("k", [] { return make_kernel("k"); });  // default stale_after: 30 s
  auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_TRUE(r.built_here);
  EXPECT_TRUE(r.stored);
  EXPECT_LT(waited, 2s) << "took the dead pid's lease over without waiting for the heartbeat timeout";
  EXPECT_EQ(s.stats().leases, 0);
  if (!reap_first) {
    EXPECT_EQ(wait_exit(holder), 128 + SIGKILL);
  }
  EXPECT_TRUE(s.verify().ok());
}

TEST(Lease, KilledBuilderIsTakenOver) { killed_holder(true); }
TEST(Lease, KilledUnreapedBuilderIsTakenOver) { killed_holder(false); }

void forge_lease(const std::string& db, const std::string& key, const std::string& host, std::int64_t age_ms) {
  std::int64_t now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  RawDb raw(db);
  ASSERT_EQ(raw.exec("INSERT INTO leases VALUES('" + key + "', 1, '" + host + "', 'forged', " +
                     std::to_string(now_ms - age_ms) + ", " + std::to_string(now_ms - age_ms) + ")"),
            SQLITE_OK);
}

TEST(Lease, OldHeartbeatFromAnotherHostIsTakenOver) {
  TempDir d;
  Store s = Store::open(d.file("attnc.db"));
  forge_lease(d.file("attnc.db"), "k", "elsewhere", 60000);
  auto r = s.get_or_build("k", [] { return make_kernel("k"); }, LeaseOptions{.stale_after = 30s});
  EXPECT_TRUE(r.built_here);
  EXPECT_EQ(s.stats().leases, 0);
}

TEST(Lease, LiveLeaseMakesWaiterTimeOutClearly) {
  TempDir d;
  Store s = Store::open(d.file("attnc.db"));
  forge_lease(d.file("attnc.db"), "k", "elsewhere", 0);
  bool built = false;
  auto t0 = std::chrono::steady_clock::now();
  try {
    s.get_or_build("k", [&] {
      built = true;
      return make_kernel("k");
    }, LeaseOptions{.poll_interval = 20ms, .wait_timeout = 300ms});
    FAIL() << "did not time out";
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), StoreErrc::Timeout);
    std::string w = e.what();
    EXPECT_NE(w.find("host elsewhere"), std::string::npos) << w;
    EXPECT_NE(w.find("kernel k"), std::string::npos) << w;
  }
  EXPECT_FALSE(built);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 300ms);
}

// D5: a heartbeat an hour in the future (a clock ahead of ours, or one that jumped back here) is
// taken over once it has not changed for stale_after as the waiter watched it.
TEST(Lease, FutureHeartbeatIsTakenOverAfterStaleAfter) {
  TempDir d;
  Store s = Store::open(d.file("attnc.db"));
  forge_lease(d.file("attnc.db"), "k", "elsewhere", -3600 * 1000);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = s.get_or_build("k", [] { return make_kernel("k"); }, LeaseOptions{.stale_after = 300ms, .poll_interval = 20ms});
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_TRUE(r.built_here);
  EXPECT_TRUE(r.stored);
  EXPECT_GE(waited, 300ms);
  EXPECT_LT(waited, 3s);
  EXPECT_EQ(s.stats().leases, 0);
}

// Refreshes a forged lease's heartbeat every 50 ms with `offset_ms` added, as a live builder with
// that clock would.
class ForgedBuilder {
 public:
  ForgedBuilder(const std::string& db, std::int64_t offset_ms)
      : thread_([this, db, offset_ms] {
          RawDb raw(db);
          while (!stop_) {
            raw.exec("UPDATE leases SET heartbeat_ms = " + std::to_string(test::unix_now_ms() + offset_ms));
            std::this_thread::sleep_for(50ms);
          }
        }) {}
  ~ForgedBuilder() {
    stop_ = true;
    thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// A lease whose heartbeat keeps changing is live, however wrong its clock: the waiter waits (and
// says so once, after notice_after) until its wait_timeout.
TEST(Lease, ChangingHeartbeatIsLiveWhateverItsClockAndTheWaiterIsToldOnce) {
  TempDir d;
  const std::string db = d.file("attnc.db");
  Store s = Store::open(db);
  forge_lease(db, "k", "elsewhere", -3600 * 1000);
  ForgedBuilder builder(db, 3600 * 1000);
  std::vector<LeaseWait> told;
  bool built = false;
  try {
    s.get_or_build("k", [&] {
      built = true;
      return make_kernel("k");
    }, LeaseOptions{.stale_after = 300ms, .poll_interval = 20ms, .wait_timeout = 900ms, .notice_after = 100ms,
                    .on_wait = [&](const LeaseWait& w) { told.push_back(w); }});
    FAIL() << "did not time out";
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), StoreErrc::Timeout);
    EXPECT_NE(std::string(e.what()).find("in the future: its clock is ahead of ours"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(built);
  ASSERT_EQ(told.size(), 1u);
  EXPECT_EQ(told[0].key, "k");
  EXPECT_EQ(told[0].host, "elsewhere");
  EXPECT_EQ(told[0].pid, 1);
  EXPECT_LT(told[0].heartbeat_age_ms, -3500 * 1000);
  EXPECT_GE(told[0].waited, 100ms);
  EXPECT_NE(told[0].describe().find("pid 1 on host elsewhere is building it (heartbeat 3"), std::string::npos)
      << told[0].describe();
}

// try_get_or_build never waits: a key another builder holds comes back empty, with its holder,
// so that the caller builds other keys meanwhile.
TEST(Lease, TryGetOrBuildReturnsAtOnceOnAHeldKey) {
  TempDir d;
  Store s = Store::open(d.file("attnc.db"));
  forge_lease(d.file("attnc.db"), "held", "elsewhere", 0);
  LeaseWait holder;
  const auto t0 = std::chrono::steady_clock::now();
  auto none = s.try_get_or_build("held", [] { return make_kernel("held"); }, {}, &holder);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 200ms);
  EXPECT_FALSE(none.has_value());
  EXPECT_EQ(holder.host, "elsewhere");
  EXPECT_EQ(holder.key, "held");
  auto other = s.try_get_or_build("free", [] { return make_kernel("free"); });
  ASSERT_TRUE(other.has_value());
  EXPECT_TRUE(other->built_here);
  EXPECT_TRUE(other->stored);
}

// N processes each wanting the same keys in the same order (as `attnc compile specs/` run N times
// at once): waiting on each held key lines them up behind one builder; trying every key first
// (try_get_or_build) and coming back to the held ones lets them build different keys at once.
// Builds sleep instead of computing, so the result does not depend on free cores.
double seconds_for(int nproc, int nkeys, bool move_on, const LeaseOptions& o = {}, const std::string& log = "") {
  TempDir d;
  const std::string db = d.file("attnc.db");
  Store::open(db);
  int gun[2];
  if (pipe(gun) != 0) return -1;
  std::vector<pid_t> kids;
  for (int p = 0; p < nproc; ++p) {
    kids.push_back(spawn([&] {
      close(gun[1]);
      char c;
      if (read(gun[0], &c, 1) != 0) return 2;
      Store s = Store::open(db);
      const auto build = [&](const std::string& key) {
        return [&, key] {
          if (!log.empty()) log_build(log, "+");
          std::this_thread::sleep_for(100ms);
          if (!log.empty()) log_build(log, "-");
          return make_kernel(key);
        };
      };
      std::vector<std::string> later;
      for (const auto& key : keys(nkeys)) {
        if (!move_on) s.get_or_build(key, build(key), o);
        else if (!s.try_get_or_build(key, build(key), o)) later.push_back(key);
      }
      for (const auto& key : later) s.get_or_build(key, build(key), o);
      return 0;
    }));
  }
  const auto t0 = std::chrono::steady_clock::now();
  close(gun[0]);
  close(gun[1]);
  for (pid_t k : kids) EXPECT_EQ(wait_exit(k), 0);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(Lease, MovingOnLetsProcessesBuildDifferentKeysAtOnce) {
  const double waiting = seconds_for(8, 16, false), moving_on = seconds_for(8, 16, true);
  std::printf("8 processes x 16 keys of 100 ms: %.2f s waiting on each key, %.2f s building others first\n", waiting,
              moving_on);
  EXPECT_GT(waiting, 1.5) << "16 builds of 100 ms one after another";
  EXPECT_LT(moving_on, waiting / 2);
}

// max_builds_on_host caps the builds running at once over all processes of the host.
TEST(Lease, BuildsOnAHostAreCapped) {
  TempDir d;
  const std::string log = d.file("builds.log");
  seconds_for(6, 12, true, LeaseOptions{.poll_interval = 10ms, .max_builds_on_host = 2}, log);
  int running = 0, most = 0, builds = 0;
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);) {
    running += line == "+" ? 1 : -1;
    builds += line == "+" ? 1 : 0;
    most = std::max(most, running);
  }
  EXPECT_EQ(builds, 12) << "each key built once";
  EXPECT_EQ(most, 2);
}

TEST(Lease, HeartbeatKeepsALongBuildAlive) {
  TempDir d;
  const std::string db = d.file("attnc.db");
  Store s = Store::open(db);
  LeaseOptions o{.heartbeat_interval = 50ms, .stale_after = 250ms, .poll_interval = 20ms};
  std::atomic<int> builds{0};
  std::atomic<bool> leased{false};
  std::int64_t acquired = 0, beat = 0;
  std::thread builder([&] {
    s.get_or_build("k", [&] {
      ++builds;
      // Make the lease look like another host's, so that only its heartbeat can keep it alive
      // (on this host the live pid alone would).
      RawDb raw(db);
      raw.exec("UPDATE leases SET host = 'elsewhere' WHERE key = 'k'");
      leased = true;
      std::this_thread::sleep_for(600ms);  // more than twice stale_after
      acquired = raw.scalar("SELECT acquired_ms FROM leases WHERE key = 'k'");
      beat = raw.scalar("SELECT heartbeat_ms FROM leases WHERE key = 'k'");
      return make_kernel("k");
    }, o);
  });
  while (!leased) std::this_thread::sleep_for(5ms);
  Store other = Store::open(db);
  auto r = other.get_or_build("k", [&] {
    ++builds;
    return make_kernel("k");
  }, o);
  builder.join();
  EXPECT_EQ(builds, 1);
  EXPECT_FALSE(r.built_here);
  EXPECT_GE(beat - acquired, 400) << "heartbeat refreshed during the build";
}

TEST(Lease, FailedBuildReleasesTheLease) {
  TempDir d;
  Store s = Store::open(d.file("attnc.db"));
  EXPECT_THROW(s.get_or_build("k", []() -> KernelRecord { throw std::runtime_error("nvrtc said no"); }),
               std::runtime_error);
  EXPECT_EQ(s.stats().leases, 0);
  EXPECT_TRUE(s.get_or_build("k", [] { return make_kernel("k"); }).built_here);
}

TEST(Lease, InvalidBuildResultReleasesTheLease) {
  TempDir d;
  Store s = Store::open(d.file("attnc.db"));
  EXPECT_THROW(s.get_or_build("k", [] {
    auto k = make_kernel("k");
    k.cubin = {'n', 'o', 'p', 'e'};
    return k;
  }), StoreError);
  EXPECT_EQ(s.stats().leases, 0);
}

TEST(Lease, UnstorableResultIsStillReturned) {
  TempDir d;
  { Store::open(d.file("attnc.db")); }
  Store s = Store::open(d.file("attnc.db"), OpenOptions{.max_db_bytes = 256 * 1024});
  auto r = s.get_or_build("big", [] { return make_kernel("big", 1 << 20); });
  EXPECT_TRUE(r.built_here);
  EXPECT_FALSE(r.stored);
  EXPECT_EQ(r.record.cubin.size(), 1u << 20);
  EXPECT_NE(r.store_error.find("full"), std::string::npos) << r.store_error;
  EXPECT_EQ(s.stats().leases, 0) << "the lease is released even though the row could not be written";
  EXPECT_EQ(s.stats().kernels, 0);
}

}  // namespace
}  // namespace attnc
