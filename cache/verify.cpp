// verify(): what is wrong with a cache file, as readable lines. Never throws: it is what a user
// runs when everything else failed.
#include <algorithm>
#include <filesystem>

#include "cache/clock.h"
#include "cache/file_state.h"
#include "cache/lease_holder.h"
#include "cache/rows.h"
#include "cache/schema.h"
#include "cache/store_impl.h"

namespace attnc {
namespace {

constexpr std::size_t kMaxIntegrityLines = 50;

void check_integrity(sql::Conn& c, bool full, VerifyReport& rep) {
  // integrity_check does everything quick_check does and also checks indexes against tables;
  // quick_check is O(N) and enough for a routine look.
  auto q = c.prepare(full ? "PRAGMA integrity_check" : "PRAGMA quick_check", "integrity check");
  std::size_t lines = 0;
  while (q.step()) {
    std::string line = q.text(0);
    if (line == "ok") continue;
    if (++lines > kMaxIntegrityLines) {
      rep.problems.push_back("integrity check: further problems not shown");
      break;
    }
    rep.problems.push_back("integrity check: " + line);
  }
}

// Returns false when the schema is too broken for the row checks to mean anything.
bool check_schema(sql::Conn& c, VerifyReport& rep) {
  rep.schema_version = schema::version(c);
  std::string app = c.scalar("PRAGMA application_id", "read application id");
  if (rep.schema_version == 0 && app == "0") {
    rep.problems.push_back("not an attnc cache: no schema version and no attnc application id");
    return false;
  }
  if (app != std::to_string(schema::kApplicationId))
    rep.problems.push_back("application_id is " + app + ", not attnc's " + std::to_string(schema::kApplicationId));
  if (rep.schema_version != schema::kVersion)
    rep.problems.push_back("schema version " + std::to_string(rep.schema_version) + ", this attnc knows " +
                           std::to_string(schema::kVersion));
  bool usable = true;
  for (const schema::Table& t : schema::required_tables()) {
    auto q = c.query("SELECT name FROM pragma_table_info(?1)", "read table columns");
    q.bind(1, t.name);
    std::vector<std::string> have;
    while (q.step()) have.push_back(q.text(0));
    if (have.empty()) {
      rep.problems.push_back(std::string("table ") + t.name + " is missing");
      usable = false;
      continue;
    }
    for (const char* col : t.columns) {
      if (std::find(have.begin(), have.end(), col) == have.end()) {
        rep.problems.push_back(std::string("table ") + t.name + " lacks column " + col);
        usable = false;
      }
    }
  }
  return usable;
}

void check_kernels(sql::Conn& c, VerifyReport& rep) {
  auto q = c.query("SELECT key, cubin_checksum, cubin, config_json FROM kernels ORDER BY key", "read kernels");
  while (q.step()) {
    ++rep.kernels_checked;
    std::string key = q.text(0);
    std::vector<char> cubin = q.blob(2);
    if (cubin.empty())
      rep.problems.push_back("kernel " + key + ": empty cubin");
    else if (!rows::is_elf(cubin))
      rep.problems.push_back("kernel " + key + ": cubin does not start with the ELF magic");
    else if (rows::cubin_checksum(cubin) != static_cast<std::uint64_t>(q.i64(1)))
      rep.problems.push_back("kernel " + key + ": cubin checksum mismatch");
    if (!rows::is_json(q.text(3))) rep.problems.push_back("kernel " + key + ": config_json is not valid JSON");
  }
}

void check_tuning(sql::Conn& c, VerifyReport& rep) {
  auto q = c.query("SELECT spec_id, mode, bucket, config_json, candidates_json, measured_how FROM tuning",
                   "read tuning records");
  while (q.step()) {
    ++rep.tuning_checked;
    for (int col : {3, 4, 5}) {
      if (!rows::is_json(q.text(col)))
        rep.problems.push_back("tuning record " + q.text(0) + "/" + q.text(1) + "/" + q.text(2) +
                               ": a JSON field is not valid JSON");
    }
  }
}

// Leases are not damage, but one whose builder is gone or whose clock is wrong is worth knowing
// about: says what a waiter does with it and whether `gc` (with its default policy) removes it.
void note_leases(sql::Conn& c, VerifyReport& rep) {
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  const std::int64_t stale_ms = LeaseOptions{}.stale_after.count();
  const std::int64_t future_ms = duration_cast<milliseconds>(GcPolicy{}.future_leases).count();
  const std::int64_t gc_age_ms = duration_cast<milliseconds>(GcPolicy{}.stale_leases).count();
  auto q = c.query("SELECT key, pid, host, heartbeat_ms FROM leases ORDER BY key", "read leases");
  const std::int64_t now = now_ms();
  while (q.step()) {
    const LeaseWait w{q.text(0), q.i64(1), q.text(2), now - q.i64(3)};
    std::string why;
    if (lease_holder::gone(w.host, w.pid))
      why = "that process is gone: a waiter takes the lease over at once; `attnc cache gc` removes it";
    else if (-w.heartbeat_age_ms > future_ms)
      why = "a waiter takes the lease over after " + std::to_string(stale_ms / 1000) +
            " s of no change; `attnc cache gc` removes it";
    else if (w.heartbeat_age_ms > stale_ms)
      why = std::string("nobody refreshes it: a waiter takes the lease over; `attnc cache gc` removes it") +
            (w.heartbeat_age_ms > gc_age_ms ? "" : " once it is an hour old");
    else
      continue;  // a live build
    rep.notes.push_back("build lease on kernel " + w.key + " (pid " + std::to_string(w.pid) + " on host " + w.host +
                        ", " + w.heartbeat() + "): " + why);
  }
}

VerifyReport verify_on(sql::Conn& c, bool full) {
  VerifyReport rep;
  // Each step on its own: a failure in one (a damaged page) still lets the others report.
  auto step = [&](const char* what, auto&& fn) {
    try {
      return fn();
    } catch (const std::exception& e) {
      rep.problems.push_back(std::string(what) + " failed: " + e.what());
      return false;
    }
  };
  bool usable = step("schema check", [&] { return check_schema(c, rep); });
  step("integrity check", [&] { check_integrity(c, full, rep); return true; });
  if (usable) {
    step("kernel check", [&] { check_kernels(c, rep); return true; });
    step("tuning check", [&] { check_tuning(c, rep); return true; });
    step("lease check", [&] { note_leases(c, rep); return true; });
  }
  return rep;
}

}  // namespace

VerifyReport Store::verify(bool full) {
  try {
    auto c = impl_->borrow();
    return verify_on(*c, full);
  } catch (const std::exception& e) {
    VerifyReport rep;
    rep.problems.push_back(std::string("cannot open a connection: ") + e.what());
    return rep;
  }
}

VerifyReport Store::verify_file(const std::string& path, bool full) {
  VerifyReport rep;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    rep.problems.push_back(path + " does not exist");
    return rep;
  }
  if (std::filesystem::is_directory(path, ec)) {
    rep.problems.push_back(path + " is a directory, not a database file");
    return rep;
  }
  try {
    // Read-only, and without leaving -wal/-shm beside a file that is not ours (file_state.h).
    const bool ours = file_state::inspect(path, 1000).kind == file_state::Kind::Ours;
    auto c = file_state::open_reader(path, 1000, ours);
    c->set_hints(false);
    c->exec("PRAGMA mmap_size = 0", "configure connection");
    c->exec("PRAGMA cell_size_check = ON", "configure connection");
    return verify_on(*c, full);
  } catch (const std::exception& e) {
    rep.problems.push_back(e.what());
    return rep;
  }
}

}  // namespace attnc
