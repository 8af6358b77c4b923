// gc() and verify() on sound and on structurally wrong databases.
#include <gtest/gtest.h>

#include "cache_test_util.h"

namespace attnc {
namespace {

using namespace std::chrono_literals;
using test::make_kernel;
using test::RawDb;
using test::TempDir;

KernelRecord used_at(const std::string& key, std::int64_t age_s, std::size_t bytes) {
  KernelRecord k = make_kernel(key, bytes);
  k.created_at = k.last_used_at = test::unix_now() - age_s;
  return k;
}

TEST(Gc, DropsKernelsUnusedForLong) {
  TempDir d;
  Store s = Store::open(d.file("attnc.db"));
  s.put_kernel(used_at("fresh", 60, 1000));
  s.put_kernel(used_at("week", 7 * 86400, 2000));
  s.put_kernel(used_at("month", 31 * 86400, 3000));
  s.put_tuning(test::make_tuning(test::tuning_key("a"), 1, 1));
  GcReport r = s.gc({.max_unused = std::chrono::seconds(14 * 86400)});
  EXPECT_EQ(r.kernels_removed, 1);
  EXPECT_EQ(r.cubin_bytes_removed, 3000);
  EXPECT_TRUE(s.find_kernel("week"));
  EXPECT_FALSE(s.find_kernel("month"));
  EXPECT_EQ(s.stats().tuning_records, 1) << "gc never drops tuning records";
}

TEST(Gc, KeepsMostRecentlyUsedUnderAByteBudget) {
  TempDir d;
  Store s = Store::open(d.file("attnc.db"));
  for (int i = 0; i < 10; ++i) s.put_kernel(used_at("k" + std::to_string(i), 100 * i, 1000));  // k0 newest
  GcReport r = s.gc({.max_cubin_bytes = 4500});
  EXPECT_EQ(r.kernels_removed, 6);
  EXPECT_EQ(s.stats().cubin_bytes, 4000);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(s.find_kernel("k" + std::to_string(i)).has_value(), i < 4) << i;
}

TEST(Gc, DropsStaleLeasesAndVacuums) {
  TempDir d;
  std::string db = d.file("attnc.db");
  Store s = Store::open(db);
  for (int i = 0; i < 40; ++i) s.put_kernel(used_at("k" + std::to_string(i), 400 * 86400, 64 * 1024));
  {
    RawDb raw(db);
    raw.exec("INSERT INTO leases VALUES('old', 1, 'h', 't', 0, 0)");
    raw.exec("INSERT INTO leases VALUES('live', 1, 'h', 't2', 0, " + std::to_string(test::unix_now() * 1000) + ")");
  }
  GcReport r = s.gc({.max_unused = std::chrono::seconds(86400), .vacuum = true});
  EXPECT_EQ(r.kernels_removed, 40);
  EXPECT_EQ(r.leases_removed, 1);
  EXPECT_LT(r.db_bytes_after, r.db_bytes_before / 4);
  EXPECT_LT(std::filesystem::file_size(db), 256u * 1024) << "the file itself shrank";
  EXPECT_TRUE(s.verify().ok());
}

TEST(Verify, SoundDatabase) {
  TempDir d;
  Store s = Store::open(d.file("attnc.db"));
  s.put_kernel(make_kernel("k"));
  s.put_tuning(test::make_tuning(test::tuning_key("a"), 1, 1));
  for (bool full : {true, false}) {
    VerifyReport r = s.verify(full);
    EXPECT_TRUE(r.ok());
    EXPECT_EQ(r.schema_version, schema::kVersion);
    EXPECT_EQ(r.kernels_checked, 1);
    EXPECT_EQ(r.tuning_checked, 1);
  }
  EXPECT_TRUE(Store::verify_file(d.file("attnc.db")).ok());
}

TEST(Verify, ReportsMissingTablesColumnsAndBadRows) {
  TempDir d;
  std::string db = d.file("attnc.db");
  { Store::open(db).put_kernel(make_kernel("k")); }
  {
    RawDb raw(db);
    ASSERT_EQ(raw.exec("DROP TABLE leases"), SQLITE_OK);
    ASSERT_EQ(raw.exec("ALTER TABLE specs DROP COLUMN canonical_yaml"), SQLITE_OK) << raw.errmsg();
  }
  VerifyReport r = Store::verify_file(db);
  std::string all;
  for (const auto& p : r.problems) all += p + "\n";
  EXPECT_NE(all.find("table leases is missing"), std::string::npos) << all;
  EXPECT_NE(all.find("table specs lacks column canonical_yaml"), std::string::npos) << all;
}

TEST(Verify, ReportsNonElfAndEmptyCubinsAndBadJson) {
  TempDir d;
  std::string db = d.file("attnc.db");
  {
    Store s = Store::open(db);
    s.put_kernel(make_kernel("a"));
    s.put_kernel(make_kernel("b"));
    s.put_tuning(test::make_tuning(test::tuning_key("t"), 1, 1));
  }
  {
    RawDb raw(db);
    raw.exec("UPDATE kernels SET cubin = X'00112233' WHERE key = 'a'");
    raw.exec("UPDATE kernels SET cubin = X'' WHERE key = 'b'");
    raw.exec("UPDATE tuning SET measured_how = '{oops'");
  }
  VerifyReport r = Store::verify_file(db);
  std::string all;
  for (const auto& p : r.problems) all += p + "\n";
  EXPECT_NE(all.find("kernel a: cubin does not start with the ELF magic"), std::string::npos) << all;
  EXPECT_NE(all.find("kernel b: empty cubin"), std::string::npos) << all;
  EXPECT_NE(all.find("tuning record t/prefill/seq<=1024: a JSON field is not valid JSON"), std::string::npos) << all;
}

// D5: leases whose builder is gone, whose clock is far ahead, or that nobody refreshed for hours
// are notes for verify (not damage) and are removed by gc; a live one stays.
TEST(Gc, ClearsLeasesOfGoneWrongClockAndOldBuilders) {
  TempDir d;
  const std::string db = d.file("attnc.db");
  Store s = Store::open(db);
  const pid_t dead = test::spawn([] { return 0; });
  ASSERT_EQ(test::wait_exit(dead), 0);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const std::int64_t now = test::unix_now_ms();
  auto lease = [&](const std::string& key, std::int64_t pid, const std::string& h, std::int64_t beat) {
    ASSERT_EQ(RawDb(db).exec("INSERT INTO leases VALUES('" + key + "', " + std::to_string(pid) + ", '" + h + "', 't', " +
                             std::to_string(beat) + ", " + std::to_string(beat) + ")"),
              SQLITE_OK);
  };
  lease("gone", dead, host, now);
  lease("future", 1, "elsewhere", now + 3600 * 1000);
  lease("old", 1, "elsewhere", now - 2 * 3600 * 1000);
  lease("live", 1, "elsewhere", now);

  VerifyReport v = s.verify();
  EXPECT_TRUE(v.ok()) << "leases are not damage";
  ASSERT_EQ(v.notes.size(), 3u);
  std::string notes;
  for (const auto& n : v.notes) notes += n + "\n";
  EXPECT_NE(notes.find("kernel future (pid 1 on host elsewhere, heartbeat 3"), std::string::npos) << notes;
  EXPECT_NE(notes.find("that process is gone"), std::string::npos) << notes;
  EXPECT_NE(notes.find("kernel old"), std::string::npos) << notes;
  EXPECT_EQ(notes.find("kernel live"), std::string::npos) << notes;

  EXPECT_EQ(s.gc({}).leases_removed, 3);
  EXPECT_EQ(s.stats().leases, 1);
  EXPECT_TRUE(s.verify().notes.empty());
}

TEST(Verify, DirectoryIsNamed) {
  TempDir d;
  std::filesystem::create_directory(d.file("dir.db"));
  VerifyReport r = Store::verify_file(d.file("dir.db"));
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_NE(r.problems[0].find("dir.db is a directory, not a database file"), std::string::npos) << r.problems[0];
}

TEST(Verify, ForeignDatabase) {
  TempDir d;
  { RawDb(d.file("x.db")).exec("CREATE TABLE t(a)"); }
  VerifyReport r = Store::verify_file(d.file("x.db"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.problems[0].find("not an attnc cache"), std::string::npos) << r.problems[0];
}

}  // namespace
}  // namespace attnc
