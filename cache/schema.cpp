#include "cache/schema.h"

#include <cstdio>
#include <string>

#include "cache/clock.h"

namespace attnc::schema {
namespace {

// Version 1. The cubin is the last column of kernels: SQLite then reads a row's other columns
// without walking the blob's overflow pages (listing and stats stay cheap).
void create_v1(sql::Conn& c) {
  c.exec(R"sql(
    CREATE TABLE meta(
      key   TEXT PRIMARY KEY,
      value TEXT NOT NULL
    ) WITHOUT ROWID;

    CREATE TABLE specs(
      spec_id        TEXT PRIMARY KEY,
      name           TEXT NOT NULL,
      canonical_yaml TEXT NOT NULL,
      created_at     INTEGER NOT NULL
    );

    CREATE TABLE kernels(
      key            TEXT PRIMARY KEY,
      spec_id        TEXT NOT NULL,
      entry          TEXT NOT NULL,
      family         TEXT NOT NULL,
      arch           TEXT NOT NULL,
      config_json    TEXT NOT NULL,
      nvrtc_version  TEXT NOT NULL,
      registers      INTEGER NOT NULL,
      smem_bytes     INTEGER NOT NULL,
      spill_stores   INTEGER NOT NULL,
      spill_loads    INTEGER NOT NULL,
      compile_ms     REAL NOT NULL,
      created_at     INTEGER NOT NULL,
      last_used_at   INTEGER NOT NULL,
      cubin_checksum INTEGER NOT NULL,
      log            TEXT NOT NULL,
      cubin          BLOB NOT NULL
    );
    CREATE INDEX kernels_by_last_use ON kernels(last_used_at);

    CREATE TABLE tuning(
      spec_id         TEXT NOT NULL,
      device          TEXT NOT NULL,
      arch            TEXT NOT NULL,
      sm_count        INTEGER NOT NULL,
      driver_version  TEXT NOT NULL,
      nvrtc_version   TEXT NOT NULL,
      mode            TEXT NOT NULL,
      bucket          TEXT NOT NULL,
      config_json     TEXT NOT NULL,
      time_us         REAL NOT NULL,
      throughput      REAL NOT NULL,
      candidates_json TEXT NOT NULL,
      measured_how    TEXT NOT NULL,
      created_at      INTEGER NOT NULL,
      PRIMARY KEY(spec_id, device, arch, sm_count, driver_version, nvrtc_version, mode, bucket)
    );

    CREATE TABLE leases(
      key          TEXT PRIMARY KEY,
      pid          INTEGER NOT NULL,
      host         TEXT NOT NULL,
      token        TEXT NOT NULL,
      acquired_ms  INTEGER NOT NULL,
      heartbeat_ms INTEGER NOT NULL
    ) WITHOUT ROWID;
  )sql",
         "create schema v1");
}

// Version 2. Configs lost their compiled split count (always 1; the split count is per call and
// lives beside the config as num_splits): strip "splits" wherever a stored config carries it.
void strip_config_splits_v2(sql::Conn& c) {
  c.exec(R"sql(
    UPDATE kernels SET config_json = json_remove(config_json, '$.splits')
      WHERE json_type(config_json, '$.splits') IS NOT NULL;
    UPDATE tuning SET
      config_json = json_remove(config_json, '$.splits'),
      candidates_json = (SELECT json_group_array(json_remove(value, '$.config.splits'))
                           FROM json_each(tuning.candidates_json)),
      measured_how = json_remove(measured_how, '$.baseline.config.splits');
  )sql",
         "strip compiled split counts from stored configs (schema v2)");
}

std::int64_t pragma_int(sql::Conn& c, const char* pragma) {
  std::string v = c.scalar(pragma, "read database header");
  return v.empty() ? 0 : std::stoll(v);
}

void migrate(sql::Conn& c) {
  sql::Txn txn(c, sql::Txn::Immediate);
  // Another process may have created or migrated the file while we waited for the lock.
  std::int64_t from = pragma_int(c, "PRAGMA user_version");
  if (from >= kVersion) return;  // nothing left to do; the rollback releases the lock
  // Store::open only gets here for an empty file or one of ours; tables without a version would be
  // another program's, written since (the rollback leaves them as they were).
  if (from == 0 && pragma_int(c, "SELECT count(*) FROM sqlite_master") > 0)
    not_ours(c.path(), pragma_int(c, "PRAGMA application_id"));
  for (const Migration& m : migrations()) {
    if (m.version <= from) continue;
    m.apply(c);
    c.query("INSERT OR REPLACE INTO meta(key, value) VALUES(?1, ?2)", "record migration")
        .bind(1, "migration." + std::to_string(m.version))
        .bind(2, std::string(m.description) + " @" + std::to_string(now_seconds()))
        .run();
  }
  c.exec(("PRAGMA user_version = " + std::to_string(kVersion)).c_str(), "set schema version");
  c.exec(("PRAGMA application_id = " + std::to_string(kApplicationId)).c_str(), "set application id");
  txn.commit();
}

}  // namespace

const std::vector<Migration>& migrations() {
  static const std::vector<Migration> list = {
      {1, "initial schema: meta, specs, kernels, tuning, leases", create_v1},
      {2, "configs without a compiled split count", strip_config_splits_v2},
  };
  return list;
}

int version(sql::Conn& c) { return static_cast<int>(pragma_int(c, "PRAGMA user_version")); }

void not_ours(const std::string& path, std::int64_t app_id) {
  char hex[16];
  std::snprintf(hex, sizeof hex, "0x%08llx", static_cast<unsigned long long>(static_cast<std::uint32_t>(app_id)));
  throw StoreError(StoreErrc::Schema, path,
                   std::string("is an SQLite database but not an attnc cache (application_id ") + hex +
                       "); it was left unchanged; choose another cache path");
}

namespace {

// What ensure() decides on, read from one snapshot of the file. Read one by one (each its own
// implicit read transaction), they could straddle another process's commit of the migration: a
// process creating the file at the same time as others would then see user_version 0 (before)
// beside a non-empty sqlite_master (after) and take our own fresh cache for a foreign database.
struct Header {
  std::int64_t version = 0, application_id = 0, objects = 0;
};

Header read_header(sql::Conn& c) {
  sql::Txn txn(c, sql::Txn::Deferred);  // the first read below fixes the snapshot for all three
  Header h;
  h.version = pragma_int(c, "PRAGMA user_version");
  h.application_id = pragma_int(c, "PRAGMA application_id");
  h.objects = pragma_int(c, "SELECT count(*) FROM sqlite_master");
  txn.commit();
  return h;
}

}  // namespace

void ensure(sql::Conn& c, bool read_only) {
  const Header h = read_header(c);
  const std::int64_t v = h.version, app = h.application_id;
  if (v > kVersion) {
    throw StoreError(StoreErrc::Schema, c.path(),
                     "schema version " + std::to_string(v) + " is newer than this attnc knows (" +
                         std::to_string(kVersion) + "); use a newer attnc or another cache path");
  }
  if (v > 0 && app != kApplicationId) not_ours(c.path(), app);
  if (v == kVersion) return;
  if (v == 0 && h.objects > 0) not_ours(c.path(), app);
  if (read_only) {
    throw StoreError(StoreErrc::Schema, c.path(),
                     v == 0 ? "is not an attnc cache yet (empty); open it read-write once to create it"
                            : "schema version " + std::to_string(v) + " is older than " +
                                  std::to_string(kVersion) + "; open it read-write once to migrate");
  }
  migrate(c);
  ensure(c, read_only);  // check what the migration (ours or a racing process's) left
}

const std::vector<Table>& required_tables() {
  static const std::vector<Table> tables = {
      {"meta", {"key", "value"}},
      {"specs", {"spec_id", "name", "canonical_yaml", "created_at"}},
      {"kernels",
       {"key", "spec_id", "entry", "family", "arch", "config_json", "nvrtc_version", "registers",
        "smem_bytes", "spill_stores", "spill_loads", "compile_ms", "created_at", "last_used_at",
        "cubin_checksum", "log", "cubin"}},
      {"tuning",
       {"spec_id", "device", "arch", "sm_count", "driver_version", "nvrtc_version", "mode", "bucket",
        "config_json", "time_us", "throughput", "candidates_json", "measured_how", "created_at"}},
      {"leases", {"key", "pid", "host", "token", "acquired_ms", "heartbeat_ms"}},
  };
  return tables;
}

}  // namespace attnc::schema
