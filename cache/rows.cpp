#include "cache/rows.h"

#include <nlohmann/json.hpp>

#include "cache/clock.h"

namespace attnc::rows {

std::uint64_t cubin_checksum(std::span<const char> cubin) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (char ch : cubin) {
    h ^= static_cast<unsigned char>(ch);
    h *= 0x100000001b3ull;
  }
  return h;
}

bool is_elf(std::span<const char> b) {
  return b.size() >= 4 && b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F';
}

bool is_json(const std::string& text) { return nlohmann::json::accept(text); }

namespace {
[[noreturn]] void invalid(const std::string& path, const std::string& what) {
  throw StoreError(StoreErrc::Invalid, path, what);
}
}  // namespace

void validate(const std::string& path, const KernelRecord& r) {
  if (r.key.empty()) invalid(path, "kernel record has an empty key");
  if (r.cubin.empty()) invalid(path, "kernel " + r.key + ": empty cubin");
  if (!is_elf(r.cubin)) invalid(path, "kernel " + r.key + ": cubin is not an ELF image (no \\x7fELF magic)");
  if (!is_json(r.config_json)) invalid(path, "kernel " + r.key + ": config_json is not valid JSON");
}

void validate(const std::string& path, const TuningRecord& r) {
  const TuningKey& k = r.key;
  if (k.spec_id.empty() || k.device.empty() || k.arch.empty() || k.mode.empty() || k.bucket.empty())
    invalid(path, "tuning record: spec_id, device, arch, mode and bucket must be set");
  const std::pair<const char*, const std::string*> json_fields[] = {
      {"config_json", &r.config_json}, {"candidates_json", &r.candidates_json}, {"measured_how", &r.measured_how}};
  for (auto [name, text] : json_fields)
    if (!is_json(*text)) invalid(path, "tuning record for spec " + k.spec_id + ": " + name + " is not valid JSON");
}

// ---------------------------------------------------------------- kernels

// Columns before the blob; the blob comes last so that listing skips it cheaply.
#define ATTNC_KERNEL_COLUMNS                                                                       \
  "key, spec_id, entry, family, arch, config_json, nvrtc_version, registers, smem_bytes, "         \
  "spill_stores, spill_loads, compile_ms, created_at, last_used_at, cubin_checksum, log, length(cubin)"

namespace {
KernelRecord kernel_from(const sql::Query& q, bool with_cubin) {
  KernelRecord r;
  r.key = q.text(0);
  r.spec_id = q.text(1);
  r.entry = q.text(2);
  r.family = q.text(3);
  r.arch = q.text(4);
  r.config_json = q.text(5);
  r.nvrtc_version = q.text(6);
  r.registers = static_cast<int>(q.i64(7));
  r.smem_bytes = static_cast<int>(q.i64(8));
  r.spill_stores = static_cast<int>(q.i64(9));
  r.spill_loads = static_cast<int>(q.i64(10));
  r.compile_ms = q.f64(11);
  r.created_at = q.i64(12);
  r.last_used_at = q.i64(13);
  r.log = q.text(15);
  r.cubin_bytes = q.i64(16);
  if (with_cubin) r.cubin = q.blob(17);
  return r;
}

void check_cubin(const std::string& path, const KernelRecord& r, std::uint64_t stored) {
  std::uint64_t actual = cubin_checksum(r.cubin);
  if (actual != stored)
    throw StoreError(StoreErrc::Corrupt, path,
                     "kernel " + r.key + ": cubin checksum mismatch (the stored cubin is damaged)");
}
}  // namespace

bool insert_kernel(sql::Conn& c, const KernelRecord& r) {
  std::int64_t created = r.created_at ? r.created_at : now_seconds();
  auto q = c.query(
      "INSERT OR IGNORE INTO kernels(key, spec_id, entry, family, arch, config_json, nvrtc_version, "
      "registers, smem_bytes, spill_stores, spill_loads, compile_ms, created_at, last_used_at, "
      "cubin_checksum, log, cubin) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
      "insert kernel " + r.key);
  q.bind(1, r.key).bind(2, r.spec_id).bind(3, r.entry).bind(4, r.family).bind(5, r.arch);
  q.bind(6, r.config_json).bind(7, r.nvrtc_version).bind(8, r.registers).bind(9, r.smem_bytes);
  q.bind(10, r.spill_stores).bind(11, r.spill_loads).bind(12, r.compile_ms).bind(13, created);
  q.bind(14, r.last_used_at ? r.last_used_at : created);
  q.bind(15, static_cast<std::int64_t>(cubin_checksum(r.cubin))).bind(16, r.log).bind_blob(17, r.cubin);
  q.run();
  return q.changes() > 0;
}

void touch_kernel(sql::Conn& c, const std::string& key, std::int64_t when) {
  c.query("UPDATE kernels SET last_used_at = ?2 WHERE key = ?1 AND last_used_at < ?2", "touch kernel")
      .bind(1, key)
      .bind(2, when)
      .run();
}

std::optional<KernelRecord> read_kernel(sql::Conn& c, const std::string& key) {
  auto q = c.query("SELECT " ATTNC_KERNEL_COLUMNS ", cubin FROM kernels WHERE key = ?1", "read kernel " + key);
  q.bind(1, key);
  if (!q.step()) return std::nullopt;
  KernelRecord r = kernel_from(q, true);
  check_cubin(c.path(), r, static_cast<std::uint64_t>(q.i64(14)));
  return r;
}

void for_each_kernel(sql::Conn& c, bool with_cubin, const std::function<void(KernelRecord&&)>& fn) {
  auto q = with_cubin ? c.query("SELECT " ATTNC_KERNEL_COLUMNS ", cubin FROM kernels ORDER BY key", "list kernels")
                      : c.query("SELECT " ATTNC_KERNEL_COLUMNS ", NULL FROM kernels ORDER BY key", "list kernels");
  while (q.step()) {
    KernelRecord r = kernel_from(q, with_cubin);
    if (with_cubin) check_cubin(c.path(), r, static_cast<std::uint64_t>(q.i64(14)));
    fn(std::move(r));
  }
}

#undef ATTNC_KERNEL_COLUMNS

// ---------------------------------------------------------------- specs

bool insert_spec(sql::Conn& c, const SpecRecord& r) {
  auto q = c.query("INSERT OR IGNORE INTO specs(spec_id, name, canonical_yaml, created_at) VALUES(?1, ?2, ?3, ?4)",
                   "insert spec " + r.spec_id);
  q.bind(1, r.spec_id).bind(2, r.name).bind(3, r.canonical_yaml).bind(4, r.created_at ? r.created_at : now_seconds());
  q.run();
  return q.changes() > 0;
}

namespace {
SpecRecord spec_from(const sql::Query& q) { return {q.text(0), q.text(1), q.text(2), q.i64(3)}; }
}  // namespace

std::optional<SpecRecord> read_spec(sql::Conn& c, const std::string& spec_id) {
  auto q = c.query("SELECT spec_id, name, canonical_yaml, created_at FROM specs WHERE spec_id = ?1", "read spec");
  q.bind(1, spec_id);
  if (!q.step()) return std::nullopt;
  return spec_from(q);
}

void for_each_spec(sql::Conn& c, const std::function<void(SpecRecord&&)>& fn) {
  auto q = c.query("SELECT spec_id, name, canonical_yaml, created_at FROM specs ORDER BY spec_id", "list specs");
  while (q.step()) fn(spec_from(q));
}

// ---------------------------------------------------------------- tuning

#define ATTNC_TUNING_KEY "spec_id, device, arch, sm_count, driver_version, nvrtc_version, mode, bucket"
#define ATTNC_TUNING_COLUMNS \
  ATTNC_TUNING_KEY ", config_json, time_us, throughput, candidates_json, measured_how, created_at"
#define ATTNC_TUNING_KEY_MATCH                                                                     \
  "spec_id = ?1 AND device = ?2 AND arch = ?3 AND sm_count = ?4 AND driver_version = ?5 AND "      \
  "nvrtc_version = ?6 AND mode = ?7 AND bucket = ?8"

namespace {
void bind_key(sql::Query& q, const TuningKey& k) {
  q.bind(1, k.spec_id).bind(2, k.device).bind(3, k.arch).bind(4, k.sm_count);
  q.bind(5, k.driver_version).bind(6, k.nvrtc_version).bind(7, k.mode).bind(8, k.bucket);
}

TuningRecord tuning_from(const sql::Query& q) {
  TuningRecord r;
  r.key = {q.text(0), q.text(1), q.text(2), static_cast<int>(q.i64(3)), q.text(4), q.text(5), q.text(6), q.text(7)};
  r.config_json = q.text(8);
  r.time_us = q.f64(9);
  r.throughput = q.f64(10);
  r.candidates_json = q.text(11);
  r.measured_how = q.text(12);
  r.created_at = q.i64(13);
  return r;
}
}  // namespace

Upserted upsert_tuning(sql::Conn& c, const TuningRecord& r, TuningConflict on_conflict) {
  bool existed;
  {
    auto exists = c.query("SELECT 1 FROM tuning WHERE " ATTNC_TUNING_KEY_MATCH, "read tuning");
    bind_key(exists, r.key);
    existed = exists.step();
  }

  // The merge rule, as one ordering: a known time beats an unknown one, a shorter time beats a
  // longer one, then the newer record wins, then (only to make merging order-independent) the
  // config text decides.
  auto q = c.query(
      "INSERT INTO tuning(" ATTNC_TUNING_COLUMNS ") VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14) "
      "ON CONFLICT(" ATTNC_TUNING_KEY ") DO UPDATE SET config_json = excluded.config_json, "
      "time_us = excluded.time_us, throughput = excluded.throughput, "
      "candidates_json = excluded.candidates_json, measured_how = excluded.measured_how, "
      "created_at = excluded.created_at "
      "WHERE ?15 = 0 OR "
      "(CASE WHEN excluded.time_us > 0 THEN excluded.time_us ELSE 1e308 END, -excluded.created_at, excluded.config_json) < "
      "(CASE WHEN tuning.time_us > 0 THEN tuning.time_us ELSE 1e308 END, -tuning.created_at, tuning.config_json)",
      "write tuning record for spec " + r.key.spec_id);
  bind_key(q, r.key);
  q.bind(9, r.config_json).bind(10, r.time_us).bind(11, r.throughput).bind(12, r.candidates_json);
  q.bind(13, r.measured_how).bind(14, r.created_at ? r.created_at : now_seconds());
  q.bind(15, on_conflict == TuningConflict::KeepBetter ? 1 : 0);
  q.run();
  if (!existed) return Upserted::Added;
  return q.changes() > 0 ? Upserted::Replaced : Upserted::Kept;
}

std::optional<TuningRecord> read_tuning(sql::Conn& c, const TuningKey& key) {
  auto q = c.query("SELECT " ATTNC_TUNING_COLUMNS " FROM tuning WHERE " ATTNC_TUNING_KEY_MATCH, "read tuning");
  bind_key(q, key);
  if (!q.step()) return std::nullopt;
  return tuning_from(q);
}

void for_each_tuning(sql::Conn& c, const TuningFilter& f, const std::function<void(TuningRecord&&)>& fn) {
  // One statement for every filter: an unbound (NULL) parameter matches anything.
  auto q = c.query("SELECT " ATTNC_TUNING_COLUMNS " FROM tuning WHERE "
                   "(?1 IS NULL OR spec_id = ?1) AND (?2 IS NULL OR device = ?2) AND "
                   "(?3 IS NULL OR arch = ?3) AND (?4 IS NULL OR sm_count = ?4) AND "
                   "(?5 IS NULL OR driver_version = ?5) AND (?6 IS NULL OR nvrtc_version = ?6) AND "
                   "(?7 IS NULL OR mode = ?7) AND (?8 IS NULL OR bucket = ?8) "
                   "ORDER BY " ATTNC_TUNING_KEY,
                   "list tuning records");
  auto opt = [&q](int i, const std::optional<std::string>& v) {
    if (v) q.bind(i, *v);
  };
  opt(1, f.spec_id);
  opt(2, f.device);
  opt(3, f.arch);
  if (f.sm_count) q.bind(4, *f.sm_count);
  opt(5, f.driver_version);
  opt(6, f.nvrtc_version);
  opt(7, f.mode);
  opt(8, f.bucket);
  while (q.step()) fn(tuning_from(q));
}

#undef ATTNC_TUNING_KEY_MATCH
#undef ATTNC_TUNING_COLUMNS
#undef ATTNC_TUNING_KEY

}  // namespace attnc::rows
