// export_to() and import_from(): moving tuning records (and kernels) between cache files, e.g. to
// combine sweeps run on many GPUs. Both are one copy routine: export copies into a new file,
// import copies from another file into this one.
#include <cstdio>
#include <filesystem>

#include "cache/rows.h"
#include "cache/store_impl.h"

namespace attnc {
namespace fs = std::filesystem;

namespace {

// One read snapshot of `from`, one write transaction on `to`: an import lands whole or not at
// all. Kernels and specs are content-addressed, so "present" means "the same": keep ours (raising
// last_used_at). Tuning conflicts follow TuningConflict::KeepBetter.
ImportReport copy_records(sql::Conn& from, sql::Conn& to, bool kernels) {
  ImportReport rep;
  sql::Txn read(from, sql::Txn::Deferred);
  sql::Txn write(to, sql::Txn::Immediate);
  rows::for_each_spec(from, [&](SpecRecord&& s) { ++(rows::insert_spec(to, s) ? rep.specs_added : rep.specs_present); });
  rows::for_each_tuning(from, {}, [&](TuningRecord&& t) {
    rows::validate(from.path(), t);
    switch (rows::upsert_tuning(to, t, TuningConflict::KeepBetter)) {
      case rows::Upserted::Added: ++rep.tuning_added; break;
      case rows::Upserted::Replaced: ++rep.tuning_replaced; break;
      case rows::Upserted::Kept: ++rep.tuning_kept; break;
    }
  });
  if (kernels) {
    rows::for_each_kernel(from, true, [&](KernelRecord&& k) {
      rows::validate(from.path(), k);
      if (rows::insert_kernel(to, k)) {
        ++rep.kernels_added;
      } else {
        ++rep.kernels_present;
        rows::touch_kernel(to, k.key, k.last_used_at);
      }
    });
  }
  write.commit();
  read.commit();
  return rep;
}

// The file to import is the user's input, not a cache of ours: say that it is not something to
// import, and never give the cache's own advice (verify it, delete it) about it.
Store open_import_source(const std::string& path, std::chrono::milliseconds busy_timeout) {
  try {
    return Store::open(path, OpenOptions{.mode = OpenMode::ReadOnly, .busy_timeout = busy_timeout});
  } catch (const StoreError& e) {
    if (e.code() == StoreErrc::Corrupt) {
      const std::string why = e.sqlite_code() ? sqlite3_errstr(e.sqlite_code()) : "it has no SQLite header";
      throw StoreError(e.code(), path, "is not an attnc cache or export (" + why + "); nothing was imported",
                       e.sqlite_code());
    }
    if (e.code() == StoreErrc::Schema) {  // its first clause, without the advice meant for a cache path
      const std::string& m = e.message();
      throw StoreError(e.code(), path, m.substr(0, m.find(';')) + "; nothing was imported");
    }
    throw;
  }
}

void remove_with_sidecars(const std::string& db) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal", "-reserve"}) std::remove((db + suffix).c_str());
}

}  // namespace

void Store::export_to(const std::string& out_path, bool include_kernels) {
  std::error_code ec;
  if (fs::exists(out_path, ec))
    throw StoreError(StoreErrc::Invalid, out_path, "already exists; export writes a new file only");
  // Build under a temporary name and rename: a killed export never leaves a half file at out_path.
  const std::string tmp = out_path + ".partial";
  remove_with_sidecars(tmp);
  try {
    {
      Store dst = Store::open(tmp, OpenOptions{.busy_timeout = impl_->options.busy_timeout, .reserve_bytes = 0});
      auto from = impl_->borrow();
      auto to = dst.impl_->borrow();
      copy_records(*from, *to, include_kernels);
    }  // last connection closed: the WAL is folded into the file
    {
      // One self-contained file to ship: leave WAL mode (a later read-write open returns to it).
      sql::Conn c(tmp, SQLITE_OPEN_READWRITE, static_cast<int>(impl_->options.busy_timeout.count()));
      c.scalar("PRAGMA journal_mode = DELETE", "finish export");
    }
    fs::rename(tmp, out_path);
  } catch (const fs::filesystem_error& e) {
    remove_with_sidecars(tmp);
    throw StoreError(StoreErrc::Io, out_path, std::string("cannot move the export into place: ") + e.what());
  } catch (...) {
    remove_with_sidecars(tmp);
    throw;
  }
}

ImportReport Store::import_from(const std::string& in_path) {
  std::error_code ec;
  if (fs::equivalent(in_path, impl_->path, ec))
    throw StoreError(StoreErrc::Invalid, in_path, "is this cache itself; nothing to import");
  Store src = open_import_source(in_path, impl_->options.busy_timeout);
  auto from = src.impl_->borrow();
  auto to = impl_->borrow();
  return copy_records(*from, *to, true);
}

}  // namespace attnc
