// Internal: how records map to rows. The only place that knows column lists and conflict rules,
// shared by the Store's own calls and by export/import.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include "cache/records.h"
#include "cache/sql.h"
#include "cache/store.h"

namespace attnc::rows {

// FNV-1a, 64 bit: catches a cubin damaged on disk where SQLite's page checks cannot (bytes in
// the middle of a blob), before the driver is handed garbage.
std::uint64_t cubin_checksum(std::span<const char> cubin);
bool is_elf(std::span<const char> bytes);
bool is_json(const std::string& text);

// Throw StoreError(Invalid) naming the field that is wrong.
void validate(const std::string& path, const KernelRecord& r);
void validate(const std::string& path, const TuningRecord& r);

// Inserts when absent; returns whether it inserted. Fills created_at/last_used_at when 0.
bool insert_kernel(sql::Conn& c, const KernelRecord& r);
// Raises last_used_at to `when` if older.
void touch_kernel(sql::Conn& c, const std::string& key, std::int64_t when);
// With cubin; throws Corrupt when the cubin does not match its checksum.
std::optional<KernelRecord> read_kernel(sql::Conn& c, const std::string& key);
void for_each_kernel(sql::Conn& c, bool with_cubin, const std::function<void(KernelRecord&&)>& fn);

bool insert_spec(sql::Conn& c, const SpecRecord& r);
std::optional<SpecRecord> read_spec(sql::Conn& c, const std::string& spec_id);
void for_each_spec(sql::Conn& c, const std::function<void(SpecRecord&&)>& fn);

enum class Upserted { Added, Replaced, Kept };
Upserted upsert_tuning(sql::Conn& c, const TuningRecord& r, TuningConflict on_conflict);
std::optional<TuningRecord> read_tuning(sql::Conn& c, const TuningKey& key);
void for_each_tuning(sql::Conn& c, const TuningFilter& f, const std::function<void(TuningRecord&&)>& fn);

}  // namespace attnc::rows
