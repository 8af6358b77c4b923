// stats() and gc().
#include <filesystem>

#include "cache/clock.h"
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

}  // namespace

Stats Store::stats() {
  auto c = impl_->borrow();
  Stats s;
  s.journal_mode = c->scalar("PRAGMA journal_mode", "read journal mode");
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

GcReport Store::gc(const GcPolicy& p) {
  auto c = impl_->borrow();
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
    auto q = c->query("DELETE FROM leases WHERE heartbeat_ms < ?1", "drop stale leases");
    q.bind(1, now_ms() - std::chrono::duration_cast<std::chrono::milliseconds>(p.stale_leases).count()).run();
    rep.leases_removed = q.changes();
    txn.commit();
  }
  if (p.vacuum) {
    c->exec("VACUUM", "vacuum");
    // VACUUM in WAL mode writes through the WAL; fold it back and shrink the -wal file.
    c->scalar("PRAGMA wal_checkpoint(TRUNCATE)", "checkpoint");
  }
  rep.db_bytes_after = db_bytes(*c);
  return rep;
}

}  // namespace attnc
