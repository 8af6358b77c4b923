// D3: a cache that cannot be written (file, folder, or both) is still usable read-only: listing,
// stats, verify and every hit work, a miss is built and reported as not stored, and nothing is
// created beside the file. Checked as an unprivileged user (root ignores permissions).
#include <gtest/gtest.h>

#include "cache_test_util.h"

namespace attnc {
namespace {

namespace fs = std::filesystem;
using test::as_unprivileged;
using test::dir_names;
using test::make_kernel;
using test::TempDir;

constexpr fs::perms kReadOnly = fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read;
constexpr fs::perms kReadOnlyDir = kReadOnly | fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec;

// What every read-only use must do; "" when it did.
std::string use_read_only(const std::string& db) {
  Store s = Store::open(db, OpenOptions{.mode = OpenMode::ReadOnly});
  if (!s.read_only()) return "not read-only";
  if (s.list_kernels().size() != 2) return "list lost kernels";
  if (s.stats().kernels != 2) return "stats lost kernels";
  auto hit = s.find_kernel("k1");
  if (!hit || hit->cubin != test::fake_cubin("k1", 512)) return "no hit";
  auto got = s.get_or_build("k1", []() -> KernelRecord { throw std::runtime_error("built a cached kernel"); });
  if (got.built_here) return "get_or_build missed a cached kernel";
  auto miss = s.get_or_build("new", [] { return make_kernel("new"); });
  if (!miss.built_here || miss.stored || miss.store_errc != StoreErrc::ReadOnly) return "a miss was not reported as not stored";
  if (miss.store_error.find("read-only") == std::string::npos) return "store_error: " + miss.store_error;
  auto rep = Store::verify_file(db);
  if (!rep.ok()) return "verify: " + rep.problems.front();
  return "";
}

// A closed cache (WAL folded in, no -wal/-shm) with two kernels, in `dir`.
std::string make_cache(const std::string& dir) {
  const std::string db = dir + "/attnc.db";
  Store s = Store::open(db, OpenOptions{.reserve_bytes = 0});
  s.put_kernel(make_kernel("k1"));
  s.put_kernel(make_kernel("k2"));
  return db;
}

TEST(ReadOnly, FileAndFolderNotWritable) {
  TempDir d;
  fs::permissions(d.path(), fs::perms::all);
  fs::create_directory(d.file("ro"));
  const std::string db = make_cache(d.file("ro"));
  fs::permissions(db, kReadOnly);
  fs::permissions(d.file("ro"), kReadOnlyDir);
  EXPECT_EQ(as_unprivileged([&] { return use_read_only(db); }), 0);
  EXPECT_EQ(dir_names(d.file("ro")), std::vector<std::string>{"attnc.db"});
}

TEST(ReadOnly, FileNotWritableInAWritableFolder) {
  TempDir d;
  fs::permissions(d.path(), fs::perms::all);
  const std::string db = make_cache(d.path());
  fs::permissions(db, kReadOnly);
  EXPECT_EQ(as_unprivileged([&] { return use_read_only(db); }), 0);
  // Nobody may write the file, so it is read as immutable: no -wal/-shm of another user left behind.
  EXPECT_EQ(dir_names(d.path()), std::vector<std::string>{"attnc.db"});
}

TEST(ReadOnly, FolderNotWritable) {
  TempDir d;
  fs::permissions(d.path(), fs::perms::all);
  fs::create_directory(d.file("ro"));
  const std::string db = make_cache(d.file("ro"));
  fs::permissions(db, fs::perms::all);
  fs::permissions(d.file("ro"), kReadOnlyDir);
  EXPECT_EQ(as_unprivileged([&] {
              // Read-write is refused with a reason (SQLite could not create -wal there) ...
              try {
                Store::open(db);
                return std::string("opened read-write in a folder it cannot write");
              } catch (const StoreError& e) {
                if (e.code() != StoreErrc::ReadOnly) return std::string("wrong error: ") + e.what();
              }
              // ... and read-only works.
              return use_read_only(db);
            }),
            0);
  EXPECT_EQ(dir_names(d.file("ro")), std::vector<std::string>{"attnc.db"});
}

}  // namespace
}  // namespace attnc
