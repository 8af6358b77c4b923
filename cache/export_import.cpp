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

void remove_with_sidecars(const std::string& db) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::remove((db + suffix).c_str());
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
      Store dst = Store::open(tmp, OpenOptions{.busy_timeout = impl_->options.busy_timeout});
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
  Store src = Store::open(in_path, OpenOptions{.mode = OpenMode::ReadOnly, .busy_timeout = impl_->options.busy_timeout});
  auto from = src.impl_->borrow();
  auto to = impl_->borrow();
  return copy_records(*from, *to, true);
}

}  // namespace attnc
