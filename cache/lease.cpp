// get_or_build: build leases so that N processes missing on one key compile it once.
//
// Protocol (docs/cache.md has the long form):
//   1. Row present -> return it.
//   2. Under BEGIN IMMEDIATE: if still absent and no live lease, insert our lease (pid, host,
//      random token, heartbeat) and commit. A lease is dead when its heartbeat has not changed for
//      stale_after as this waiter watched it, or is older than stale_after, or when its host is
//      ours and its pid is gone; a dead one is replaced.
//   3. Holder: build while a thread refreshes the heartbeat, then insert the row and delete the
//      lease (by token, so a lease taken over from us is never deleted by us) in one transaction.
//   4. Everyone else polls until the row appears or the lease dies (then back to 2), or, with
//      try_get_or_build, returns at once so that the caller builds other keys meanwhile.
#include <unistd.h>

#include <cstdio>
#include <condition_variable>
#include <random>
#include <thread>

#include "cache/clock.h"
#include "cache/lease_holder.h"
#include "cache/rows.h"
#include "cache/store_impl.h"

namespace attnc {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

using lease_holder::this_host;

// Reseeded in a forked child: a copied generator would give parent and child the same tokens.
std::mt19937_64& rng() {
  thread_local pid_t seeded_in = 0;
  thread_local std::mt19937_64 gen;
  if (seeded_in != getpid()) {
    seeded_in = getpid();
    std::random_device rd;
    gen.seed((static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^ static_cast<std::uint64_t>(seeded_in));
  }
  return gen;
}

std::string new_token() {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(rng()()),
                static_cast<unsigned long long>(rng()()));
  return buf;
}

struct Holder {
  std::int64_t pid = 0;
  std::string host, token;
  std::int64_t heartbeat_ms = 0;
};

std::optional<Holder> read_lease(sql::Conn& c, const std::string& key) {
  auto q = c.query("SELECT pid, host, token, heartbeat_ms FROM leases WHERE key = ?1", "read lease");
  q.bind(1, key);
  if (!q.step()) return std::nullopt;
  return Holder{q.i64(0), q.text(1), q.text(2), q.i64(3)};
}

// What one waiter has seen of a lease. A live builder changes its heartbeat every
// heartbeat_interval; one that has not changed for stale_after, by this process's steady clock, is
// dead whatever the wall clocks say (a heartbeat in the future, a clock that jumped, skew between
// hosts). Two shortcuts find the common dead leases sooner: a heartbeat older than stale_after by
// our wall clock, and a holder on this host whose pid is gone.
class LeaseWatch {
 public:
  bool dead(const Holder& h, const LeaseOptions& o) {
    const auto now = steady_clock::now();
    if (!seen_ || h.token != token_ || h.heartbeat_ms != heartbeat_) {
      seen_ = true;
      token_ = h.token;
      heartbeat_ = h.heartbeat_ms;
      since_ = now;
    }
    if (now - since_ > o.stale_after) return true;
    if (now_ms() - h.heartbeat_ms > o.stale_after.count()) return true;
    return lease_holder::gone(h.host, h.pid);
  }

 private:
  bool seen_ = false;
  std::string token_;
  std::int64_t heartbeat_ = 0;
  steady_clock::time_point since_;
};

bool kernel_exists(sql::Conn& c, const std::string& key) {
  auto q = c.query("SELECT 1 FROM kernels WHERE key = ?1", "look up kernel");
  q.bind(1, key);
  return q.step();
}

// Builds running on this host: leases of live local processes, refreshed within stale_after.
std::int64_t local_builds(sql::Conn& c, const LeaseOptions& o) {
  auto q = c.query("SELECT pid FROM leases WHERE host = ?1 AND heartbeat_ms >= ?2", "count local builds");
  q.bind(1, this_host()).bind(2, now_ms() - o.stale_after.count());
  std::int64_t n = 0;
  while (q.step()) n += lease_holder::pid_alive(q.i64(0)) ? 1 : 0;
  return n;
}

bool host_busy(sql::Conn& c, const LeaseOptions& o) {
  return o.max_builds_on_host > 0 && local_builds(c, o) >= o.max_builds_on_host;
}

enum class Claim { Present, Claimed, Held, Busy };

Claim try_claim(sql::Conn& c, const std::string& key, const std::string& token, const LeaseOptions& o,
                LeaseWatch& watch, Holder& holder) {
  // Look without the write lock first: most waiters see the row or a live lease and go back to sleep.
  if (kernel_exists(c, key)) return Claim::Present;
  if (auto h = read_lease(c, key); h && !watch.dead(*h, o)) {
    holder = *h;
    return Claim::Held;
  }
  if (host_busy(c, o)) return Claim::Busy;
  sql::Txn txn(c, sql::Txn::Immediate);
  if (kernel_exists(c, key)) return Claim::Present;
  if (auto h = read_lease(c, key); h && !watch.dead(*h, o)) {
    holder = *h;
    return Claim::Held;
  }
  if (host_busy(c, o)) return Claim::Busy;
  std::int64_t now = now_ms();
  c.query("INSERT OR REPLACE INTO leases(key, pid, host, token, acquired_ms, heartbeat_ms) "
          "VALUES(?1, ?2, ?3, ?4, ?5, ?5)",
          "take build lease")
      .bind(1, key)
      .bind(2, static_cast<std::int64_t>(getpid()))
      .bind(3, this_host())
      .bind(4, token)
      .bind(5, now)
      .run();
  txn.commit();
  return Claim::Claimed;
}

// Sets a borrowed connection's busy timeout for one step and puts it back afterwards.
class LockWait {
 public:
  LockWait(sql::Conn& c, std::optional<milliseconds> wait) : c_(c), saved_(c.busy_timeout()) {
    if (wait) c_.set_busy_timeout(static_cast<int>(std::min<std::int64_t>(wait->count(), saved_)));
  }
  ~LockWait() { c_.set_busy_timeout(saved_); }

 private:
  sql::Conn& c_;
  int saved_;
};

// By token: a lease taken over from us (we looked dead) is the new holder's, never ours to delete.
constexpr const char* kReleaseSql = "DELETE FROM leases WHERE key = ?1 AND token = ?2";

void release(Store::Impl& impl, const std::string& key, const std::string& token) {
  try {
    auto c = impl.borrow();
    c->query(kReleaseSql, "release build lease").bind(1, key).bind(2, token).run();
  } catch (const StoreError&) {
    // The lease then dies of old age (stale_after); waiters take it over.
  }
}

// Refreshes the lease while the build runs, on its own connection from the pool. A beat never
// waits longer than one interval for the lock, so that stopping it never waits on a stuck writer.
class Heartbeat {
 public:
  Heartbeat(Store::Impl& impl, const std::string& key, const std::string& token, milliseconds every)
      : impl_(impl), key_(key), token_(token), every_(every), thread_([this] { loop(); }) {}
  ~Heartbeat() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  void loop() {
    std::unique_lock lock(mutex_);
    while (!cv_.wait_for(lock, every_, [this] { return stop_; })) {
      lock.unlock();
      beat();
      lock.lock();
    }
  }
  void beat() {
    try {
      auto c = impl_.borrow();
      LockWait wait(*c, every_);
      c->query("UPDATE leases SET heartbeat_ms = ?3 WHERE key = ?1 AND token = ?2", "refresh build lease")
          .bind(1, key_)
          .bind(2, token_)
          .bind(3, now_ms())
          .run();
    } catch (...) {
      // A missed beat is harmless: stale_after is many beats long.
    }
  }

  Store::Impl& impl_;
  std::string key_, token_;
  milliseconds every_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;  // last: starts after everything it uses
};

milliseconds jittered(milliseconds base) {
  std::uniform_real_distribution<double> d(0.5, 1.5);  // keeps waiters from polling in lockstep
  return milliseconds(std::max<std::int64_t>(1, static_cast<std::int64_t>(base.count() * d(rng()))));
}

Store::GetOrBuild found(KernelRecord&& r) {
  Store::GetOrBuild out;
  out.record = std::move(r);
  return out;
}

// Runs build() and fills in what the store would: the key, the times, the size; checks the result.
KernelRecord built(const std::string& path, const std::string& key, const std::function<KernelRecord()>& build) {
  KernelRecord r = build();
  r.key = key;
  if (r.created_at == 0) r.created_at = now_seconds();
  if (r.last_used_at == 0) r.last_used_at = r.created_at;
  rows::validate(path, r);
  r.cubin_bytes = static_cast<std::int64_t>(r.cubin.size());
  return r;
}

// A record built without storing it (read-only store, or the lease could not be taken).
Store::GetOrBuild unstored(KernelRecord&& r, StoreErrc why, const std::string& message) {
  Store::GetOrBuild out = found(std::move(r));
  out.built_here = true;
  out.stored = false;
  out.store_errc = why;
  out.store_error = message;
  return out;
}

LeaseWait describe(const std::string& key, const Holder& h, milliseconds waited) {
  return LeaseWait{key, h.pid, h.host, now_ms() - h.heartbeat_ms, waited};
}

}  // namespace

std::string LeaseWait::heartbeat() const {
  char text[96];
  if (heartbeat_age_ms >= 0)
    std::snprintf(text, sizeof text, "last heartbeat %.1f s ago", heartbeat_age_ms / 1000.0);
  else
    std::snprintf(text, sizeof text, "heartbeat %.1f s in the future: its clock is ahead of ours", -heartbeat_age_ms / 1000.0);
  return text;
}

std::string LeaseWait::describe() const {
  return "pid " + std::to_string(pid) + " on host " + host + " is building it (" + heartbeat() + ")";
}

Store::GetOrBuild Store::get_or_build(const std::string& key, const std::function<KernelRecord()>& build,
                                      const LeaseOptions& o) {
  return *get_or_build_impl(key, build, o, true, nullptr);
}

std::optional<Store::GetOrBuild> Store::try_get_or_build(const std::string& key,
                                                         const std::function<KernelRecord()>& build,
                                                         const LeaseOptions& o, LeaseWait* held) {
  return get_or_build_impl(key, build, o, false, held);
}

std::optional<Store::GetOrBuild> Store::get_or_build_impl(const std::string& key,
                                                          const std::function<KernelRecord()>& build,
                                                          const LeaseOptions& o, bool wait, LeaseWait* held) {
  if (key.empty()) throw StoreError(StoreErrc::Invalid, impl_->path, "get_or_build with an empty key");
  if (auto r = find_kernel(key)) return found(std::move(*r));
  if (!impl_->writable())
    return unstored(built(impl_->path, key, build), StoreErrc::ReadOnly, "the cache " + impl_->path + " is read-only");

  const std::string token = new_token();
  auto start = steady_clock::now();  // of the wait for this key's holder (not for a build slot)
  LeaseWatch watch;
  bool told = false;
  for (;;) {
    Holder holder;
    Claim claim;
    try {
      auto c = impl_->borrow();
      LockWait lock_wait(*c, o.lock_wait);
      claim = try_claim(*c, key, token, o, watch, holder);
    } catch (const StoreError& e) {
      // Another connection holds the write lock for long (another program's transaction), or the
      // disk is full: build without a lease; the caller may store the record later.
      if (e.code() != StoreErrc::Locked && e.code() != StoreErrc::Full) throw;
      return unstored(built(impl_->path, key, build), e.code(), e.what());
    }
    if (claim == Claim::Claimed) break;
    if (claim == Claim::Present) {
      if (auto r = find_kernel(key)) return found(std::move(*r));
      continue;  // dropped again in between (gc, damaged): try to claim it
    }
    if (claim == Claim::Busy) {  // as many builds as this host takes: wait for one to end
      if (!wait) {
        if (held) *held = LeaseWait{key, 0, this_host(), 0, milliseconds(0)};
        return std::nullopt;
      }
      start = steady_clock::now();
      std::this_thread::sleep_for(jittered(o.poll_interval));
      continue;
    }
    const auto waited = std::chrono::duration_cast<milliseconds>(steady_clock::now() - start);
    const LeaseWait w = describe(key, holder, waited);
    if (!wait) {
      if (held) *held = w;
      return std::nullopt;
    }
    if (!told && waited >= o.notice_after && o.on_wait) {
      told = true;
      o.on_wait(w);
    }
    if (waited >= o.wait_timeout)
      throw StoreError(StoreErrc::Timeout, impl_->path,
                       "waited " + std::to_string(o.wait_timeout.count()) + " ms for kernel " + key + ", which " +
                           w.describe());
    std::this_thread::sleep_for(jittered(o.poll_interval));
  }

  GetOrBuild out;
  out.built_here = true;
  {
    Heartbeat heartbeat(*impl_, key, token, o.heartbeat_interval);
    try {
      out.record = built(impl_->path, key, build);
    } catch (...) {
      release(*impl_, key, token);
      throw;
    }
    try {
      auto c = impl_->borrow();
      LockWait lock_wait(*c, o.lock_wait);
      sql::Txn txn(*c, sql::Txn::Immediate);
      rows::insert_kernel(*c, out.record);
      c->query(kReleaseSql, "release build lease").bind(1, key).bind(2, token).run();
      txn.commit();
    } catch (const StoreError& e) {
      // The caller still gets its kernel; the cache just does not keep it this time.
      out.stored = false;
      out.store_error = e.what();
      out.store_errc = e.code();
      release(*impl_, key, token);
    }
  }
  return out;
}

}  // namespace attnc
