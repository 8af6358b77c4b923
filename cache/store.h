// The attnc cache: one SQLite file shared by every process on a machine (and by exports between
// machines). Kernels by content key, specs, tuning records, and build leases so that N processes
// missing on the same kernel compile it once. See docs/cache.md for schema, lease protocol and
// failure behaviour.
//
// Thread safety: a Store may be used from any number of threads at once. It keeps a small pool of
// SQLite connections and each call borrows one for its duration, so readers run in parallel (WAL)
// and writers serialise on SQLite's own lock, exactly as separate processes would. Destroying a
// Store while another thread is still inside one of its calls is not allowed.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cache/error.h"
#include "cache/records.h"

namespace attnc {

enum class OpenMode { ReadWrite, ReadOnly };

struct OpenOptions {
  OpenMode mode = OpenMode::ReadWrite;
  // How long a call waits for another connection's write lock before failing with Locked.
  std::chrono::milliseconds busy_timeout{10000};
  // A hard cap on the database size (0: none). Writes past it fail with Full and change nothing,
  // exactly like a full disk; the fault tests use it to produce SQLITE_FULL.
  std::int64_t max_db_bytes = 0;
  // Room kept beside a read-write database (<db>-reserve) so that gc can run on a full disk (0: none).
  std::int64_t reserve_bytes = 1 << 20;
};

// What a waiter knows about the builder it waits for (LeaseOptions::on_wait, Timeout errors).
struct LeaseWait {
  std::string key;
  std::int64_t pid = 0;
  std::string host;
  std::int64_t heartbeat_age_ms = 0;  // by this host's clock; negative: the heartbeat is in the future
  std::chrono::milliseconds waited{0};
  // "last heartbeat 0.4 s ago", or "heartbeat 3600.0 s in the future: its clock is ahead of ours"
  std::string heartbeat() const;
  // "pid 12 on host h is building it (last heartbeat 0.4 s ago)"
  std::string describe() const;
};

struct LeaseOptions {
  std::chrono::milliseconds heartbeat_interval{2000};  // how often a builder refreshes its lease
  // A lease is dead when its heartbeat has not changed for this long as the waiter watched it (by
  // the waiter's steady clock, so a heartbeat in the future or from a clock that jumped dies too),
  // or is older than this by the waiter's wall clock, or its holder is a dead pid on this host.
  std::chrono::milliseconds stale_after{30000};
  std::chrono::milliseconds poll_interval{50};     // how often a waiter looks for the row
  std::chrono::milliseconds wait_timeout{600000};  // a waiter gives up (Timeout) after this
  // How long claiming a lease and storing the result wait for the write lock (default: the store's
  // busy_timeout). A claim that cannot get the lock (or finds the disk full) builds without a lease
  // and returns the record with stored = false and store_errc = Locked (Full), for the caller to
  // store later.
  std::optional<std::chrono::milliseconds> lock_wait{};
  // At most this many builds at once on this host, over all processes sharing the file (0: no
  // limit): a claim waits while this many live local leases exist (try_get_or_build returns
  // nullopt). Keeps N processes that each build in parallel from running N times as many
  // compilers as the machine has cores.
  int max_builds_on_host = 0;
  // Called once, on the waiting thread, when a waiter has waited notice_after for another builder.
  std::chrono::milliseconds notice_after{1000};
  std::function<void(const LeaseWait&)> on_wait{};
};

struct Stats {
  int schema_version = 0;
  std::string journal_mode;
  std::int64_t kernels = 0, cubin_bytes = 0;
  std::int64_t specs = 0, tuning_records = 0, leases = 0;
  std::int64_t db_bytes = 0, free_bytes = 0, wal_bytes = 0;
  struct Group {
    std::int64_t kernels = 0, cubin_bytes = 0;
  };
  std::map<std::string, Group> by_arch, by_family;
};

struct VerifyReport {
  int schema_version = 0;
  std::int64_t kernels_checked = 0, tuning_checked = 0;
  std::vector<std::string> problems;  // readable lines; empty when the database is sound
  // Facts that are not damage: leases left by dead builders or stamped by a clock far ahead of ours
  // (`gc` removes both; a waiter takes them over after stale_after).
  std::vector<std::string> notes;
  bool ok() const { return problems.empty(); }
};

struct GcPolicy {
  std::optional<std::chrono::seconds> max_unused{};  // drop kernels not used for this long
  std::optional<std::int64_t> max_cubin_bytes{};     // then drop least recently used beyond this
  std::chrono::seconds stale_leases{3600};           // drop leases not refreshed for this long,
  std::chrono::seconds future_leases{60};            // leases whose heartbeat is this far ahead of now,
                                                     // and leases of processes on this host that are gone
  bool vacuum = false;                               // give freed pages back to the file system
};

struct GcReport {
  std::int64_t kernels_removed = 0, cubin_bytes_removed = 0, leases_removed = 0;
  std::int64_t db_bytes_before = 0, db_bytes_after = 0;
  bool used_reserve = false;  // the disk was full: the reserve made room for the gc
  bool vacuumed = false;      // a --vacuum asked for ran (never on a full disk)
};

struct ImportReport {
  std::int64_t kernels_added = 0, kernels_present = 0;
  std::int64_t specs_added = 0, specs_present = 0;
  std::int64_t tuning_added = 0, tuning_replaced = 0, tuning_kept = 0;
};

// What put_tuning does when a record with the same key exists.
enum class TuningConflict {
  Replace,     // the new record wins (a fresh tuning run on this machine)
  KeepBetter,  // the faster one wins, then the newer (the merge rule; see docs/cache.md)
};

class Store {
 public:
  // Opens (ReadWrite: creating if missing) the database at `path`. The directory must exist and
  // be writable; otherwise a StoreError names it. Creates or migrates the schema; a schema newer
  // than this build, or an SQLite file that is not an attnc cache, is a Schema error, found before
  // anything is written (an empty file, 0 bytes or an SQLite file without tables, is initialised).
  // ReadOnly works on files and directories that cannot be written (see docs/cache.md).
  static Store open(const std::string& path, const OpenOptions& options = {});
  // Opens default_cache_path() (cache/cache_path.h), creating its directory when missing.
  static Store open_default(const OpenOptions& options = {});

  Store(Store&&) noexcept;
  Store& operator=(Store&&) noexcept;
  ~Store();

  const std::string& path() const;
  bool read_only() const;

  // --- kernels
  // A hit refreshes last_used_at, at most once a minute per kernel (a hit costs no write).
  // Throws Corrupt when the stored cubin fails its checksum (the bad row is dropped first, so the
  // next build can store a good one).
  std::optional<KernelRecord> find_kernel(const std::string& key);
  // Inserts when absent; returns whether it inserted. The cubin must be a non-empty ELF image.
  bool put_kernel(const KernelRecord& record);
  // Same, many records in one transaction; returns how many were inserted.
  std::size_t put_kernels(std::span<const KernelRecord> records);
  std::vector<KernelRecord> list_kernels(bool with_cubin = false);

  // Returns the cached kernel for `key`, or builds it. Across all processes and threads sharing
  // the file, `build` runs at most once per key while its builder's lease is live; the others
  // wait for the row. A dead builder's lease (its pid gone on this host, or no heartbeat for
  // stale_after) is taken over. An exception from `build` releases the lease and propagates.
  // If the built record cannot be stored (disk full, locked, a read-only store), it is still
  // returned, with stored = false and the reason in store_error / store_errc.
  struct GetOrBuild {
    KernelRecord record;
    bool built_here = false;
    bool stored = true;
    std::string store_error;
    StoreErrc store_errc = StoreErrc::Other;  // when !stored
  };
  GetOrBuild get_or_build(const std::string& key, const std::function<KernelRecord()>& build,
                          const LeaseOptions& options = {});
  // The same without waiting: nullopt when another live builder holds the key's lease (its holder
  // in *held when given; pid 0 when the host has max_builds_on_host builds running), so that the
  // caller can build other keys first and come back.
  std::optional<GetOrBuild> try_get_or_build(const std::string& key, const std::function<KernelRecord()>& build,
                                             const LeaseOptions& options = {}, LeaseWait* held = nullptr);

  // --- specs (insert if absent: a spec id is a content hash, so it never changes meaning; a spec
  // already present costs a read, never a wait for the write lock)
  void put_spec(const std::string& spec_id, const std::string& name, const std::string& canonical_yaml);
  std::optional<SpecRecord> find_spec(const std::string& spec_id);
  std::vector<SpecRecord> list_specs();

  // --- tuning records. JSON fields must be valid JSON. Returns whether the record was stored.
  bool put_tuning(const TuningRecord& record, TuningConflict on_conflict = TuningConflict::Replace);
  std::optional<TuningRecord> find_tuning(const TuningKey& key);
  std::vector<TuningRecord> list_tuning(const TuningFilter& filter = {});

  // --- maintenance
  Stats stats();
  // Integrity check (full) or quick check, schema version, tables and columns, every cubin
  // non-empty, ELF and matching its checksum, every JSON field valid. Never throws.
  VerifyReport verify(bool full = true);
  // The same on a file that may not even open as a Store. Never throws.
  static VerifyReport verify_file(const std::string& path, bool full = true);
  // On a full disk (Full), deletes the reserve to make room and tries once more.
  GcReport gc(const GcPolicy& policy);
  // Writes specs and tuning records (and kernels when asked; never leases) into a new file,
  // which must not exist yet. The file appears complete or not at all.
  void export_to(const std::string& out_path, bool include_kernels);
  // Merges another cache file into this one in one transaction: kernels and specs are added when
  // absent, tuning conflicts are settled by TuningConflict::KeepBetter. Order-independent.
  ImportReport import_from(const std::string& in_path);

  struct Impl;  // opaque; named here only so the implementation files can share it

 private:
  explicit Store(std::unique_ptr<Impl> impl);
  std::optional<GetOrBuild> get_or_build_impl(const std::string& key, const std::function<KernelRecord()>& build,
                                              const LeaseOptions& options, bool wait, LeaseWait* held);
  std::unique_ptr<Impl> impl_;
};

}  // namespace attnc
