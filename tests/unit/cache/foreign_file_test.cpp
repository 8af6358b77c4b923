// D2: another program's SQLite file is never modified, whatever opens it (read-write, read-only,
// verify): not one byte, and no -wal/-shm/-reserve file left beside it. Only an empty file (0
// bytes, or an SQLite file with no tables and no ids) becomes a cache.
#include <gtest/gtest.h>

#include "cache_test_util.h"

namespace attnc {
namespace {

using test::dir_names;
using test::file_bytes;
using test::RawDb;
using test::TempDir;

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

// Each foreign file is made by `make` in its own directory, closed, then opened by every path.
struct Foreign {
  const char* what;
  const char* sql;
};

const Foreign kForeign[] = {
    {"rollback journal, no ids", "CREATE TABLE kernels(id INTEGER PRIMARY KEY, foo TEXT); INSERT INTO kernels(foo) VALUES('x')"},
    {"WAL mode, no ids", "PRAGMA journal_mode = WAL; CREATE TABLE t(x); INSERT INTO t VALUES(1)"},
    {"another application_id", "PRAGMA application_id = 1234; CREATE TABLE t(x)"},
    {"a user_version but no application_id", "PRAGMA user_version = 1; CREATE TABLE meta(key, value)"},
    {"no tables but a user_version", "PRAGMA user_version = 7"},
};

TEST(ForeignFile, NeverModifiedByAnyOpen) {
  for (const Foreign& f : kForeign) {
    SCOPED_TRACE(f.what);
    TempDir d;
    const std::string db = d.file("other.db");
    { ASSERT_EQ(RawDb(db).exec(f.sql), SQLITE_OK); }
    const std::string before = file_bytes(db);
    ASSERT_FALSE(before.empty());
    const auto names = dir_names(d.path());
    ASSERT_EQ(names, std::vector<std::string>{"other.db"});

    for (OpenMode mode : {OpenMode::ReadWrite, OpenMode::ReadOnly}) {
      try {
        Store::open(db, OpenOptions{.mode = mode});
        ADD_FAILURE() << "opened another program's database as a cache";
      } catch (const StoreError& e) {
        EXPECT_EQ(e.code(), StoreErrc::Schema) << e.what();
        EXPECT_TRUE(contains(e.what(), "not an attnc cache")) << e.what();
        EXPECT_TRUE(contains(e.what(), "left unchanged")) << e.what();
      }
    }
    EXPECT_FALSE(Store::verify_file(db).ok());
    EXPECT_EQ(file_bytes(db), before) << "the file changed";
    EXPECT_EQ(dir_names(d.path()), names) << "files were left beside it";
  }
}

TEST(ForeignFile, NotADatabaseIsNamedAndUntouched) {
  TempDir d;
  const std::string db = d.file("notes.db");
  { std::ofstream(db) << "hello, not a database\n"; }
  try {
    Store::open(db);
    FAIL();
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), StoreErrc::Corrupt);
    EXPECT_TRUE(contains(e.what(), "not a database")) << e.what();
  }
  EXPECT_EQ(file_bytes(db), "hello, not a database\n");
  EXPECT_EQ(dir_names(d.path()), std::vector<std::string>{"notes.db"});
}

TEST(ForeignFile, EmptyFilesBecomeCaches) {
  TempDir d;
  { std::ofstream(d.file("zero.db")); }  // 0 bytes
  { ASSERT_EQ(RawDb(d.file("blank.db")).exec("PRAGMA journal_mode = WAL"), SQLITE_OK); }  // a header, no tables
  for (const char* name : {"zero.db", "blank.db"}) {
    SCOPED_TRACE(name);
    Store s = Store::open(d.file(name));
    EXPECT_TRUE(s.put_kernel(test::make_kernel("k")));
    EXPECT_TRUE(s.verify().ok());
  }
}

// The cosmetic half: a read-only open of a cache in a place we may write leaves nothing behind.
TEST(ForeignFile, ReadOnlyOpensLeaveNoSidecars) {
  TempDir d;
  const std::string db = d.file("attnc.db");
  { Store::open(db, OpenOptions{.reserve_bytes = 0}).put_kernel(test::make_kernel("k")); }
  ASSERT_EQ(dir_names(d.path()), std::vector<std::string>{"attnc.db"});
  {
    Store ro = Store::open(db, OpenOptions{.mode = OpenMode::ReadOnly});
    EXPECT_EQ(ro.stats().kernels, 1);
    EXPECT_TRUE(ro.find_kernel("k"));
  }
  EXPECT_TRUE(Store::verify_file(db).ok());
  EXPECT_EQ(dir_names(d.path()), std::vector<std::string>{"attnc.db"});
}

}  // namespace
}  // namespace attnc
