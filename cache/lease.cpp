// get_or_build: build leases so that N processes missing on one key compile it once.
//
// Protocol (docs/cache.md has the long form):
//   1. Row present -> return it.
//   2. Under BEGIN IMMEDIATE: if still absent and no live lease, insert our lease (pid, host,
//      random token, heartbeat) and commit. A lease is dead when its heartbeat is older than
//      stale_after, or when its host is ours and its pid is gone; a dead one is replaced.
//   3. Holder: build while a thread refreshes the heartbeat, then insert the row and delete the
//      lease (by token, so a lease taken over from us is never deleted by us) in one transaction.
//   4. Everyone else polls until the row appears or the lease dies (then back to 2).
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <condition_variable>
#include <fstream>
#include <random>
#include <thread>

#include "cache/clock.h"
#include "cache/rows.h"
#include "cache/store_impl.h"

namespace attnc {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

const std::string& this_host() {
  static const std::string host = [] {
    char buf[256] = {};
    if (gethostname(buf, sizeof buf - 1) != 0) return std::string("?");
    return std::string(buf);
  }();
  return host;
}

bool pid_alive(std::int64_t pid) {
  if (pid <= 0 || pid > INT_MAX) return false;
  if (kill(static_cast<pid_t>(pid), 0) != 0) return errno == EPERM;  // EPERM: alive, not ours
  // A dead but unreaped process (zombie) still answers kill(); /proc tells it apart.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  auto paren = line.rfind(')');
  if (paren != std::string::npos && paren + 2 < line.size()) {
    char state = line[paren + 2];
    if (state == 'Z' || state == 'X') return false;
  }
  return true;
}

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

bool is_stale(const Holder& h, const LeaseOptions& o) {
  if (now_ms() - h.heartbeat_ms > o.stale_after.count()) return true;
  return h.host == this_host() && !pid_alive(h.pid);
}

bool kernel_exists(sql::Conn& c, const std::string& key) {
  auto q = c.query("SELECT 1 FROM kernels WHERE key = ?1", "look up kernel");
  q.bind(1, key);
  return q.step();
}

enum class Claim { Present, Claimed, Held };

Claim try_claim(sql::Conn& c, const std::string& key, const std::string& token, const LeaseOptions& o,
                Holder& holder) {
  // Look without the write lock first: most waiters see the row or a live lease and go back to sleep.
  if (kernel_exists(c, key)) return Claim::Present;
  if (auto h = read_lease(c, key); h && !is_stale(*h, o)) {
    holder = *h;
    return Claim::Held;
  }
  sql::Txn txn(c, sql::Txn::Immediate);
  if (kernel_exists(c, key)) return Claim::Present;
  if (auto h = read_lease(c, key); h && !is_stale(*h, o)) {
    holder = *h;
    return Claim::Held;
  }
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

// Refreshes the lease while the build runs, on its own connection from the pool.
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

}  // namespace

Store::GetOrBuild Store::get_or_build(const std::string& key, const std::function<KernelRecord()>& build,
                                      const LeaseOptions& o) {
  if (key.empty()) throw StoreError(StoreErrc::Invalid, impl_->path, "get_or_build with an empty key");
  if (auto r = find_kernel(key)) return found(std::move(*r));
  if (!impl_->writable()) {
    GetOrBuild out = found(build());
    out.record.key = key;
    out.built_here = true;
    out.stored = false;
    out.store_error = "the cache is open read-only";
    return out;
  }

  const std::string token = new_token();
  const auto deadline = steady_clock::now() + o.wait_timeout;
  for (;;) {
    Holder holder;
    Claim claim;
    {
      auto c = impl_->borrow();
      claim = try_claim(*c, key, token, o, holder);
    }
    if (claim == Claim::Claimed) break;
    if (claim == Claim::Present) {
      if (auto r = find_kernel(key)) return found(std::move(*r));
      continue;  // dropped again in between (gc, damaged): try to claim it
    }
    if (steady_clock::now() >= deadline) {
      throw StoreError(StoreErrc::Timeout, impl_->path,
                       "waited " + std::to_string(o.wait_timeout.count()) + " ms for kernel " + key +
                           ", which pid " + std::to_string(holder.pid) + " on host " + holder.host +
                           " is still building (last heartbeat " + std::to_string(now_ms() - holder.heartbeat_ms) +
                           " ms ago)");
    }
    std::this_thread::sleep_for(jittered(o.poll_interval));
  }

  GetOrBuild out;
  out.built_here = true;
  {
    Heartbeat heartbeat(*impl_, key, token, o.heartbeat_interval);
    try {
      out.record = build();
      out.record.key = key;
      if (out.record.created_at == 0) out.record.created_at = now_seconds();
      if (out.record.last_used_at == 0) out.record.last_used_at = out.record.created_at;
      rows::validate(impl_->path, out.record);
    } catch (...) {
      release(*impl_, key, token);
      throw;
    }
    try {
      auto c = impl_->borrow();
      sql::Txn txn(*c, sql::Txn::Immediate);
      rows::insert_kernel(*c, out.record);
      c->query(kReleaseSql, "release build lease").bind(1, key).bind(2, token).run();
      txn.commit();
    } catch (const StoreError& e) {
      // The caller still gets its kernel; the cache just does not keep it this time.
      out.stored = false;
      out.store_error = e.what();
      release(*impl_, key, token);
    }
  }
  out.record.cubin_bytes = static_cast<std::int64_t>(out.record.cubin.size());
  return out;
}

}  // namespace attnc
