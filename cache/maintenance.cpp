// stats() and gc().
#include <filesystem>

#include "cache/clock.h"
#include "cache/file_state.h"
#include "cache/lease_holder.h"
#include "cache/reserve.h"
#include "cache/schema.h"
#include "cache/store_impl.h"

namespace attnc {
namespace {

std::int64_t pragma_i64(sql::Conn& c, const char* pragma) {
  std::string v = c.scalar(pragma, "read database size");
  return v.empty() ? 0 : std::stoll(v);
}

// The logical size (what the file holds once the WAL is checkpointed).
std::int64_t db_bytes(sql::Conn& c) {
  return pragma_i64(c, "PRAGMA page_count") * pragma_i64(c, "PRAGMA page_size");
}

void count_groups(sql::Conn& c, const char* sql, std::map<std::string, Stats::Group>& out) {
  auto q = c.query(sql, "count kernels");
  while (q.step()) out[q.text(0)] = {q.i64(1), q.i64(2)};
}

// Deletes with RETURNING the cubin size, so the report says what went.
void drop(sql::Query& q, GcReport& rep) {
  while (q.step()) {
    ++rep.kernels_removed;
    rep.cubin_bytes_removed += q.i64(0);
  }
}

// Leases of processes on this host that are gone (killed mid-build; or their release found the
// disk full). Elsewhere a pid means nothing to us: those wait for their age.
std::int64_t drop_gone_holders(sql::Conn& c) {
  std::vector<std::pair<std::string, std::string>> gone;  // key, token
  {
    auto q = c.query("SELECT key, token, pid FROM leases WHERE host = ?1", "read leases");
    q.bind(1, lease_holder::this_host());
    while (q.step())
      if (!lease_holder::pid_alive(q.i64(2))) gone.emplace_back(q.text(0), q.text(1));
  }
  for (const auto& [key, token] : gone)
    c.query("DELETE FROM leases WHERE key = ?1 AND token = ?2", "drop leases of gone builders").bind(1, key).bind(2, token).run();
  return static_cast<std::int64_t>(gone.size());
}

}  // namespace

Stats Store::stats() {
  auto c = impl_->borrow();
  Stats s;
  s.journal_mode = c->scalar("PRAGMA journal_mode", "read journal mode");
  if (s.journal_mode == "delete" && file_state::wal_mode(impl_->path)) s.journal_mode = "wal";  // read as immutable
  {
    sql::Txn snapshot(*c, sql::Txn::Deferred);  // all counts from one state of the file
    s.schema_version = schema::version(*c);
    {
      auto q = c->query("SELECT count(*), coalesce(sum(length(cubin)), 0) FROM kernels", "count kernels");
      q.step();
      s.kernels = q.i64(0);
      s.cubin_bytes = q.i64(1);
    }
    s.specs = pragma_i64(*c, "SELECT count(*) FROM specs");
    s.tuning_records = pragma_i64(*c, "SELECT count(*) FROM tuning");
    s.leases = pragma_i64(*c, "SELECT count(*) FROM leases");
    count_groups(*c, "SELECT arch, count(*), sum(length(cubin)) FROM kernels GROUP BY arch", s.by_arch);
    count_groups(*c, "SELECT family, count(*), sum(length(cubin)) FROM kernels GROUP BY family", s.by_family);
    s.db_bytes = db_bytes(*c);
    s.free_bytes = pragma_i64(*c, "PRAGMA freelist_count") * pragma_i64(*c, "PRAGMA page_size");
    snapshot.commit();
  }
  std::error_code ec;
  auto wal = std::filesystem::file_size(impl_->path + "-wal", ec);
  s.wal_bytes = ec ? 0 : static_cast<std::int64_t>(wal);
  return s;
}

namespace {

// One pass of gc. Freed pages go back to the file system in the deleting transaction itself
// (incremental vacuum; caches made before auto_vacuum was set keep them on the freelist until a
// --vacuum), so that the checkpoint after it has only the pages still in use to write: on a full
// disk that is what lets the file shrink. `make_room` also truncates the WAL.
GcReport gc_once(Store::Impl& impl, const GcPolicy& p, bool make_room) {
  auto c = impl.borrow();
  GcReport rep;
  rep.db_bytes_before = db_bytes(*c);
  {
    sql::Txn txn(*c, sql::Txn::Immediate);
    if (p.max_unused) {
      auto q = c->query("DELETE FROM kernels WHERE last_used_at < ?1 RETURNING length(cubin)", "drop unused kernels");
      q.bind(1, now_seconds() - p.max_unused->count());
      drop(q, rep);
    }
    if (p.max_cubin_bytes) {
      // Keep the most recently used kernels while their cubins fit; drop the rest.
      auto q = c->query("DELETE FROM kernels WHERE key IN (SELECT key FROM (SELECT key, sum(length(cubin)) "
                        "OVER (ORDER BY last_used_at DESC, key) AS running FROM kernels) WHERE running > ?1) "
                        "RETURNING length(cubin)",
                        "drop least recently used kernels");
      q.bind(1, *p.max_cubin_bytes);
      drop(q, rep);
    }
    // Leases nobody refreshes, and leases stamped by a clock far ahead of ours (they would
    // otherwise look fresh for as long as that clock is ahead).
    using std::chrono::duration_cast;
    using std::chrono::milliseconds;
    const std::int64_t now = now_ms();
    auto q = c->query("DELETE FROM leases WHERE heartbeat_ms < ?1 OR heartbeat_ms > ?2", "drop stale leases");
    q.bind(1, now - duration_cast<milliseconds>(p.stale_leases).count())
        .bind(2, now + duration_cast<milliseconds>(p.future_leases).count())
        .run();
    rep.leases_removed = q.changes();
    rep.leases_removed += drop_gone_holders(*c);
    if (pragma_i64(*c, "PRAGMA auto_vacuum") == 2) c->exec("PRAGMA incremental_vacuum", "give freed pages back");
    txn.commit();
  }
  // VACUUM writes a second copy of the database: never on a full disk (the incremental vacuum
  // above already gave the freed pages back, where the cache was made with auto_vacuum).
  if (p.vacuum && !make_room) {
    // Also turns a cache made before auto_vacuum was set into one whose gc gives pages back.
    c->exec("PRAGMA auto_vacuum = INCREMENTAL", "vacuum");
    c->exec("VACUUM", "vacuum");
  }
  rep.vacuumed = p.vacuum && !make_room;
  if (p.vacuum || make_room) {
    // Fold the WAL back into the file and shrink the -wal file. On a full disk this may still
    // fail; the deletions above are committed either way.
    try {
      c->scalar("PRAGMA wal_checkpoint(TRUNCATE)", "checkpoint");
    } catch (const StoreError& e) {
      if (e.code() != StoreErrc::Full && e.code() != StoreErrc::Io && e.code() != StoreErrc::Locked) throw;
    }
  }
  rep.db_bytes_after = db_bytes(*c);
  return rep;
}

}  // namespace

GcReport Store::gc(const GcPolicy& p) {
  try {
    return gc_once(*impl_, p, false);
  } catch (const StoreError& e) {
    if (e.code() != StoreErrc::Full || !reserve::release(impl_->path)) throw;
  }
  // The disk is full: the reserve's room lets the deletions commit and the file shrink.
  GcReport rep;
  try {
    rep = gc_once(*impl_, p, true);
  } catch (const StoreError& e) {
    reserve::ensure(impl_->path, impl_->options.reserve_bytes);
    if (e.code() != StoreErrc::Full) throw;
    throw StoreError(StoreErrc::Full, impl_->path,
                     std::string("gc: the disk is still full after releasing the cache's reserve (") +
                         sqlite3_errstr(e.sqlite_code()) + "); free space on that file system",
                     e.sqlite_code());
  }
  rep.used_reserve = true;
  reserve::ensure(impl_->path, impl_->options.reserve_bytes);
  return rep;
}

}  // namespace attnc
