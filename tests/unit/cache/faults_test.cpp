// Faults on purpose: killed mid-write, truncated and scribbled files, missing and read-only
// places, a lock held too long, a full disk. None may crash the caller or corrupt the cache.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "cache_test_util.h"

namespace attnc {
namespace {

using namespace std::chrono_literals;
using test::make_kernel;
using test::RawDb;
using test::spawn;
using test::TempDir;
using test::wait_exit;

std::string joined(const VerifyReport& r) {
  std::string s;
  for (const auto& p : r.problems) s += p + "\n";
  return s;
}

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

// ------------------------------------------------------------------ killed mid-write

TEST(Faults, KilledMidTransactionLeavesOldOrNewState) {
  TempDir d;
  const std::string db = d.file("attnc.db");
  {
    Store s = Store::open(db);
    for (int i = 0; i < 10; ++i) s.put_kernel(make_kernel("base" + std::to_string(i), 4096));
  }
  int old_states = 0, new_states = 0;
  for (int delay_ms : {0, 15, 40, 80}) {
    int ready[2];
    ASSERT_EQ(pipe(ready), 0);
    const std::string tag = "d" + std::to_string(delay_ms) + "-";
    pid_t writer = spawn([&] {
      Store s = Store::open(db);
      std::vector<KernelRecord> batch;
      for (int i = 0; i < 300; ++i) batch.push_back(make_kernel(tag + std::to_string(i), 64 * 1024));
      if (write(ready[1], "x", 1) != 1) return 3;
      s.put_kernels(batch);  // ~19 MB in one transaction
      return 0;
    });
    char c;
    ASSERT_EQ(read(ready[0], &c, 1), 1);
    close(ready[0]);
    close(ready[1]);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    kill(writer, SIGKILL);
    wait_exit(writer);

    auto rep = Store::verify_file(db);
    EXPECT_TRUE(rep.ok()) << "after a kill at " << delay_ms << " ms:\n" << joined(rep);
    Store s = Store::open(db);
    std::int64_t tagged = 0;
    for (const auto& k : s.list_kernels(true)) tagged += contains(k.key, tag) ? 1 : 0;
    EXPECT_TRUE(tagged == 0 || tagged == 300) << "a partial transaction is visible: " << tagged << " rows";
    ++(tagged == 0 ? old_states : new_states);
    for (int i = 0; i < 10; ++i) EXPECT_TRUE(s.find_kernel("base" + std::to_string(i))) << "old rows survive";
  }
  EXPECT_GT(old_states, 0) << "no kill landed inside the transaction; make the batch bigger";
  std::printf("kills inside the transaction: %d, after commit: %d\n", old_states, new_states);
}

// ------------------------------------------------------------------ damaged files

// A cache with enough kernels that the file has many pages, then closed (WAL folded in).
std::string make_populated(const TempDir& d) {
  std::string db = d.file("attnc.db");
  Store s = Store::open(db);
  std::vector<KernelRecord> batch;
  for (int i = 0; i < 60; ++i) batch.push_back(make_kernel("k" + std::to_string(i), 24 * 1024));
  s.put_kernels(batch);
  for (int i = 0; i < 20; ++i) s.put_tuning(test::make_tuning(test::tuning_key("s" + std::to_string(i)), 5.0 + i, 100));
  return db;
}

// Every way a caller touches the cache either works or throws StoreError; at least one throws.
void expect_store_errors_not_crashes(const std::string& db) {
  int failures = 0;
  auto attempt = [&](const char* what, auto&& fn) {
    try {
      fn();
    } catch (const StoreError& e) {
      ++failures;
      EXPECT_TRUE(contains(e.what(), db)) << what << ": " << e.what();
      EXPECT_TRUE(e.code() == StoreErrc::Corrupt || e.code() == StoreErrc::Io) << what << ": " << e.what();
    }
  };
  attempt("open+read", [&] {
    Store s = Store::open(db);
    attempt("list with cubins", [&] { s.list_kernels(true); });
    attempt("find each", [&] {
      for (int i = 0; i < 60; ++i) s.find_kernel("k" + std::to_string(i));
    });
    attempt("list tuning", [&] { s.list_tuning(); });
    attempt("put", [&] { s.put_kernel(make_kernel("new", 24 * 1024)); });
    VerifyReport rep = s.verify();
    EXPECT_FALSE(rep.ok());
  });
  EXPECT_GT(failures, 0) << "damage went unnoticed";
}

TEST(Faults, TruncatedFile) {
  TempDir d;
  std::string db = make_populated(d);
  auto size = std::filesystem::file_size(db);
  std::filesystem::resize_file(db, size / 2);
  expect_store_errors_not_crashes(db);
  auto rep = Store::verify_file(db);
  EXPECT_FALSE(rep.ok());
  std::printf("verify on a truncated file:\n%s", joined(rep).c_str());
}

TEST(Faults, GarbageInTheMiddle) {
  TempDir d;
  std::string db = make_populated(d);
  auto size = std::filesystem::file_size(db);
  {
    std::fstream f(db, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size / 2));
    std::mt19937 gen(7);
    for (int i = 0; i < 16 * 1024; ++i) f.put(static_cast<char>(gen()));
  }
  expect_store_errors_not_crashes(db);
  auto rep = Store::verify_file(db);
  EXPECT_FALSE(rep.ok());
  std::printf("verify on a scribbled file:\n%s", joined(rep).c_str());
}

TEST(Faults, GarbageHeaderIsNotADatabase) {
  TempDir d;
  std::string db = make_populated(d);
  {
    std::fstream f(db, std::ios::in | std::ios::out | std::ios::binary);
    f.write("this is not a database, not at all", 32);
  }
  try {
    Store::open(db);
    FAIL() << "opened a file without an SQLite header";
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), StoreErrc::Corrupt);
    EXPECT_TRUE(contains(e.what(), "not a database")) << e.what();
  }
  auto rep = Store::verify_file(db);
  ASSERT_FALSE(rep.ok());
  EXPECT_TRUE(contains(joined(rep), "not a database")) << joined(rep);
}

TEST(Faults, VerifyFileOfMissingFile) {
  auto rep = Store::verify_file("/nonexistent-attnc/attnc.db");
  ASSERT_FALSE(rep.ok());
  EXPECT_TRUE(contains(rep.problems[0], "does not exist"));
}

// ------------------------------------------------------------------ places

TEST(Faults, MissingDirectoryIsNamed) {
  TempDir d;
  std::string db = d.file("no/such/dir/attnc.db");
  try {
    Store::open(db);
    FAIL();
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), StoreErrc::Open);
    EXPECT_TRUE(contains(e.what(), "directory " + d.file("no/such/dir") + " does not exist")) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(d.file("no")));
}

using test::as_unprivileged;

std::string expect_error(const std::function<void()>& fn, StoreErrc code, const std::string& needle) {
  try {
    fn();
    return "no error";
  } catch (const StoreError& e) {
    if (e.code() != code) return std::string("wrong code: ") + e.what();
    if (!contains(e.what(), needle)) return "message lacks '" + needle + "': " + e.what();
    return "";
  }
}

TEST(Faults, ReadOnlyDirectory) {
  TempDir d;
  namespace fs = std::filesystem;
  fs::permissions(d.path(), fs::perms::all);  // "nobody" must be able to reach inside
  fs::create_directory(d.file("ro"));
  fs::permissions(d.file("ro"), fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                                    fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  std::string db = d.file("ro/attnc.db");
  EXPECT_EQ(as_unprivileged([&] {
              return expect_error([&] { Store::open(db); }, StoreErrc::ReadOnly,
                                  "directory " + d.file("ro") + " is not writable");
            }),
            0);
  EXPECT_FALSE(fs::exists(db));
}

TEST(Faults, ReadOnlyFile) {
  TempDir d;
  namespace fs = std::filesystem;
  fs::permissions(d.path(), fs::perms::all);
  std::string db = d.file("attnc.db");
  { Store::open(db).put_kernel(make_kernel("k")); }
  fs::permissions(db, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  EXPECT_EQ(as_unprivileged([&] {
              std::string p = expect_error([&] { Store::open(db); }, StoreErrc::ReadOnly, "file is not writable");
              if (!p.empty()) return p;
              // Read-only mode still serves hits.
              Store ro = Store::open(db, OpenOptions{.mode = OpenMode::ReadOnly});
              if (!ro.find_kernel("k")) return std::string("read-only open lost the kernel");
              return expect_error([&] { ro.put_kernel(make_kernel("k2")); }, StoreErrc::ReadOnly, db);
            }),
            0);
}

// ------------------------------------------------------------------ locks

TEST(Faults, LockHeldPastTheBusyTimeout) {
  TempDir d;
  std::string db = d.file("attnc.db");
  Store s = Store::open(db, OpenOptions{.busy_timeout = 200ms});
  s.put_kernel(make_kernel("k1"));
  RawDb other(db);
  ASSERT_EQ(other.exec("BEGIN EXCLUSIVE; INSERT INTO specs VALUES('x', 'x', 'x', 0)"), SQLITE_OK) << other.errmsg();

  auto t0 = std::chrono::steady_clock::now();
  try {
    s.put_kernel(make_kernel("k2"));
    FAIL() << "wrote while another connection held the lock";
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), StoreErrc::Locked);
    EXPECT_TRUE(contains(e.what(), "database is locked")) << e.what();
    EXPECT_TRUE(contains(e.what(), db)) << e.what();
  }
  auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(waited, 180ms);
  EXPECT_LT(waited, 5s);
  EXPECT_TRUE(s.find_kernel("k1")) << "readers are not blocked by a writer (WAL)";
  EXPECT_THROW(s.put_tuning(test::make_tuning(test::tuning_key("a"), 1, 1)), StoreError);

  ASSERT_EQ(other.exec("ROLLBACK"), SQLITE_OK);
  EXPECT_TRUE(s.put_kernel(make_kernel("k2")));
  EXPECT_TRUE(s.verify().ok());
  EXPECT_EQ(s.stats().kernels, 2);
  EXPECT_EQ(s.stats().specs, 0);
}

TEST(Faults, ExclusiveLockingModeBlocksReadersToo) {
  TempDir d;
  std::string db = d.file("attnc.db");
  { Store::open(db).put_kernel(make_kernel("k1")); }
  RawDb other(db);
  ASSERT_EQ(other.exec("PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE; INSERT INTO specs VALUES('x','x','x',0)"),
            SQLITE_OK)
      << other.errmsg();
  try {
    Store s = Store::open(db, OpenOptions{.busy_timeout = 100ms});
    s.find_kernel("k1");
    FAIL() << "read through an exclusive lock";
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), StoreErrc::Locked) << e.what();
  }
  ASSERT_EQ(other.exec("ROLLBACK; PRAGMA locking_mode = NORMAL; SELECT 1 FROM kernels"), SQLITE_OK);
}

// ------------------------------------------------------------------ full disk

TEST(Faults, FullDiskChangesNothing) {
  TempDir d;
  std::string db = d.file("attnc.db");
  {
    Store s = Store::open(db);
    for (int i = 0; i < 5; ++i) s.put_kernel(make_kernel("k" + std::to_string(i), 16 * 1024));
  }
  auto cap = static_cast<std::int64_t>(std::filesystem::file_size(db)) + 100 * 1024;
  Store s = Store::open(db, OpenOptions{.max_db_bytes = cap});

  int stored = 0;
  try {
    for (; stored < 50; ++stored) s.put_kernel(make_kernel("more" + std::to_string(stored), 32 * 1024));
    FAIL() << "never hit the cap";
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), StoreErrc::Full);
    EXPECT_TRUE(contains(e.what(), "full")) << e.what();
    EXPECT_TRUE(contains(e.what(), "unchanged")) << e.what();
    std::printf("%s\n", e.what());
  }
  EXPECT_GT(stored, 0);
  EXPECT_EQ(s.stats().kernels, 5 + stored);

  // A batch that does not fit lands not at all.
  std::vector<KernelRecord> batch;
  for (int i = 0; i < 10; ++i) batch.push_back(make_kernel("batch" + std::to_string(i), 32 * 1024));
  EXPECT_THROW(s.put_kernels(batch), StoreError);
  EXPECT_EQ(s.stats().kernels, 5 + stored);
  EXPECT_TRUE(s.verify().ok()) << joined(s.verify());
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(s.find_kernel("k" + std::to_string(i)));

  Store roomy = Store::open(db);
  EXPECT_EQ(roomy.put_kernels(batch), 10u) << "with room again, writes work";
}

}  // namespace
}  // namespace attnc
