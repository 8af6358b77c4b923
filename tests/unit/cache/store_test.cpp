// The Store's ordinary life: schema, kernels, specs, read-only use, threads.
#include <gtest/gtest.h>

#include <thread>

#include "cache/cache_path.h"
#include "cache_test_util.h"

namespace attnc {
namespace {

using test::make_kernel;
using test::RawDb;
using test::TempDir;

TEST(Store, CreatesVersionedSchemaInWalMode) {
  TempDir d;
  Store s = Store::open(d.file("attnc.db"));
  Stats st = s.stats();
  EXPECT_EQ(st.schema_version, schema::kVersion);
  EXPECT_EQ(st.journal_mode, "wal");
  EXPECT_EQ(st.kernels, 0);
  EXPECT_TRUE(s.verify().ok());
  RawDb raw(d.file("attnc.db"));
  EXPECT_EQ(raw.scalar("PRAGMA application_id"), 0x6174746e);
  EXPECT_EQ(raw.scalar("SELECT count(*) FROM meta WHERE key = 'migration.1'"), 1);
}

// Schema 2 dropped the compiled split count from configs: a version-1 file's stored configs lose
// their "splits" on the first read-write open, and nothing else changes.
TEST(Store, MigrationToV2StripsCompiledSplitCounts) {
  TempDir d;
  const std::string f = d.file("attnc.db");
  {
    Store s = Store::open(f);
    KernelRecord k = make_kernel("k1");
    k.config_json = R"({"family":"decode_split","block_m":16,"splits":1})";
    s.put_kernel(k);
    TuningRecord t = test::make_tuning(test::tuning_key("spec1"), 10.0, test::unix_now(),
                                       R"({"family":"decode_split","splits":1,"num_splits":4})");
    t.candidates_json = R"([{"config":{"block_n":64,"splits":1,"num_splits":0},"time_us":12.5},{"config":{"splits":1}}])";
    t.measured_how = R"({"baseline":{"config":{"splits":1,"stages":2},"time_us":12.5},"complete":true})";
    s.put_tuning(t);
  }
  {
    RawDb raw(f);  // back to what a version-1 attnc wrote
    ASSERT_EQ(raw.exec("PRAGMA user_version = 1; DELETE FROM meta WHERE key = 'migration.2'"), SQLITE_OK);
  }
  Store s = Store::open(f);
  EXPECT_EQ(s.stats().schema_version, 2);
  EXPECT_EQ(s.find_kernel("k1")->config_json, R"({"family":"decode_split","block_m":16})");
  const auto t = s.find_tuning(test::tuning_key("spec1"));
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->config_json, R"({"family":"decode_split","num_splits":4})");
  EXPECT_EQ(t->candidates_json, R"([{"config":{"block_n":64,"num_splits":0},"time_us":12.5},{"config":{}}])");
  EXPECT_EQ(t->measured_how, R"({"baseline":{"config":{"stages":2},"time_us":12.5},"complete":true})");
  EXPECT_TRUE(s.verify().ok());
}

TEST(Store, ReopensExistingFile) {
  TempDir d;
  { Store::open(d.file("attnc.db")).put_kernel(make_kernel("k1")); }
  Store s = Store::open(d.file("attnc.db"));
  EXPECT_TRUE(s.find_kernel("k1").has_value());
}

TEST(Store, KernelRoundTrip) {
  TempDir d;
  Store s = Store::open(d.file("attnc.db"));
  KernelRecord k = make_kernel("abc123", 4096);
  k.spill_stores = 8;
  k.spill_loads = 4;
  EXPECT_TRUE(s.put_kernel(k));
  EXPECT_FALSE(s.put_kernel(k)) << "a second put of the same key inserts nothing";
  auto got = s.find_kernel("abc123");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->cubin, k.cubin);
  EXPECT_EQ(got->cubin_bytes, 4096);
  EXPECT_EQ(got->entry, k.entry);
  EXPECT_EQ(got->family, k.family);
  EXPECT_EQ(got->arch, k.arch);
  EXPECT_EQ(got->config_json, k.config_json);
  EXPECT_EQ(got->nvrtc_version, k.nvrtc_version);
  EXPECT_EQ(got->log, k.log);
  EXPECT_EQ(got->registers, 128);
  EXPECT_EQ(got->smem_bytes, 49152);
  EXPECT_EQ(got->spill_stores, 8);
  EXPECT_EQ(got->spill_loads, 4);
  EXPECT_DOUBLE_EQ(got->compile_ms, 812.5);
  EXPECT_GT(got->created_at, 0);
  EXPECT_FALSE(s.find_kernel("missing").has_value());
}

TEST(Store, RejectsBadKernels) {
  TempDir d;
  Store s = Store::open(d.file("attnc.db"));
  auto expect_invalid = [&](KernelRecord k, const char* needle) {
    try {
      s.put_kernel(k);
      ADD_FAILURE() << "accepted a bad record (" << needle << ")";
    } catch (const StoreError& e) {
      EXPECT_EQ(e.code(), StoreErrc::Invalid);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  KernelRecord k = make_kernel("k");
  k.key.clear();
  expect_invalid(k, "empty key");
  k = make_kernel("k");
  k.cubin.clear();
  expect_invalid(k, "empty cubin");
  k = make_kernel("k");
  k.cubin[0] = 'X';
  expect_invalid(k, "not an ELF");
  k = make_kernel("k");
  k.config_json = "{block_m:";
  expect_invalid(k, "config_json");
  EXPECT_EQ(s.stats().kernels, 0);
}

TEST(Store, ListsWithAndWithoutCubins) {
  TempDir d;
  Store s = Store::open(d.file("attnc.db"));
  std::vector<KernelRecord> batch = {make_kernel("a", 100), make_kernel("b", 200), make_kernel("c", 300)};
  EXPECT_EQ(s.put_kernels(batch), 3u);
  EXPECT_EQ(s.put_kernels(batch), 0u);
  auto light = s.list_kernels();
  ASSERT_EQ(light.size(), 3u);
  EXPECT_TRUE(light[1].cubin.empty());
  EXPECT_EQ(light[1].cubin_bytes, 200);
  auto full = s.list_kernels(true);
  ASSERT_EQ(full.size(), 3u);
  EXPECT_EQ(full[2].cubin, batch[2].cubin);
}

TEST(Store, HitRefreshesOnlyStaleLastUse) {
  TempDir d;
  Store s = Store::open(d.file("attnc.db"));
  KernelRecord old_one = make_kernel("old");
  old_one.created_at = old_one.last_used_at = test::unix_now() - 3600;
  KernelRecord recent = make_kernel("recent");
  recent.created_at = recent.last_used_at = test::unix_now() - 10;
  s.put_kernel(old_one);
  s.put_kernel(recent);
  EXPECT_GE(s.find_kernel("old")->last_used_at, test::unix_now() - 1);
  EXPECT_EQ(s.find_kernel("recent")->last_used_at, recent.last_used_at) << "no write for a recent hit";
  RawDb raw(d.file("attnc.db"));
  EXPECT_GE(raw.scalar("SELECT last_used_at FROM kernels WHERE key = 'old'"), test::unix_now() - 1);
}

TEST(Store, DamagedCubinIsReportedAndDropped) {
  TempDir d;
  Store s = Store::open(d.file("attnc.db"));
  s.put_kernel(make_kernel("k", 1024));
  {
    RawDb raw(d.file("attnc.db"));
    // Same length, same magic, different bytes: only the checksum can tell.
    ASSERT_EQ(raw.exec("UPDATE kernels SET cubin = X'7F454C46' || zeroblob(1020) WHERE key = 'k'"), SQLITE_OK);
  }
  auto rep = s.verify();
  ASSERT_FALSE(rep.ok());
  EXPECT_NE(rep.problems[0].find("checksum"), std::string::npos) << rep.problems[0];
  try {
    s.find_kernel("k");
    ADD_FAILURE() << "a damaged cubin was returned";
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), StoreErrc::Corrupt);
    EXPECT_NE(std::string(e.what()).find("checksum"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(s.find_kernel("k").has_value()) << "the damaged row is gone";
  EXPECT_TRUE(s.put_kernel(make_kernel("k", 1024))) << "and a rebuild can be stored";
  EXPECT_TRUE(s.verify().ok());
}

TEST(Store, Specs) {
  TempDir d;
  Store s = Store::open(d.file("attnc.db"));
  s.put_spec("s1", "llama3-8b", "head_dim: 128\n");
  s.put_spec("s1", "other-name", "head_dim: 64\n");  // same id, same content: first one stays
  s.put_spec("s0", "qwen2", "head_dim: 128\ngqa: 7\n");
  auto specs = s.list_specs();
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].spec_id, "s0");
  auto s1 = s.find_spec("s1");
  ASSERT_TRUE(s1);
  EXPECT_EQ(s1->name, "llama3-8b");
  EXPECT_EQ(s1->canonical_yaml, "head_dim: 128\n");
  EXPECT_FALSE(s.find_spec("nope"));
  EXPECT_THROW(s.put_spec("", "x", "y"), StoreError);
}

TEST(Store, StatsGroupByArchAndFamily) {
  TempDir d;
  Store s = Store::open(d.file("attnc.db"));
  s.put_kernel(make_kernel("a", 100, "sm_90a", "prefill_sm90"));
  s.put_kernel(make_kernel("b", 200, "sm_90a", "decode_split"));
  s.put_kernel(make_kernel("c", 400, "sm_80", "prefill_sm80"));
  s.put_spec("s", "n", "y");
  Stats st = s.stats();
  EXPECT_EQ(st.kernels, 3);
  EXPECT_EQ(st.cubin_bytes, 700);
  EXPECT_EQ(st.specs, 1);
  EXPECT_EQ(st.by_arch["sm_90a"].kernels, 2);
  EXPECT_EQ(st.by_arch["sm_90a"].cubin_bytes, 300);
  EXPECT_EQ(st.by_family["prefill_sm80"].cubin_bytes, 400);
  EXPECT_GT(st.db_bytes, 0);
}

TEST(Store, NewerSchemaIsAClearError) {
  TempDir d;
  { Store::open(d.file("attnc.db")); }
  { RawDb(d.file("attnc.db")).exec("PRAGMA user_version = 99"); }
  try {
    Store::open(d.file("attnc.db"));
    FAIL() << "opened a newer schema";
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), StoreErrc::Schema);
    std::string w = e.what();
    EXPECT_NE(w.find("schema version 99 is newer"), std::string::npos) << w;
    EXPECT_NE(w.find(d.file("attnc.db")), std::string::npos) << w;
  }
}

TEST(Store, ForeignSqliteFileIsRejected) {
  TempDir d;
  { RawDb(d.file("other.db")).exec("CREATE TABLE notes(x)"); }
  try {
    Store::open(d.file("other.db"));
    FAIL() << "took over somebody else's database";
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), StoreErrc::Schema);
    EXPECT_NE(std::string(e.what()).find("not an attnc cache"), std::string::npos) << e.what();
  }
  RawDb raw(d.file("other.db"));
  EXPECT_EQ(raw.scalar("SELECT count(*) FROM sqlite_master"), 1) << "and left it untouched";
}

TEST(Store, ReadOnlyModeReadsButRefusesWrites) {
  TempDir d;
  { Store::open(d.file("attnc.db")).put_kernel(make_kernel("k")); }
  Store ro = Store::open(d.file("attnc.db"), OpenOptions{.mode = OpenMode::ReadOnly});
  EXPECT_TRUE(ro.find_kernel("k").has_value());
  try {
    ro.put_kernel(make_kernel("k2"));
    FAIL() << "wrote through a read-only store";
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), StoreErrc::ReadOnly);
    EXPECT_NE(std::string(e.what()).find(d.file("attnc.db")), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("readonly"), std::string::npos) << e.what();
  }
  // get_or_build still serves: it builds and says it could not store.
  auto r = ro.get_or_build("k3", [] { return make_kernel("k3"); });
  EXPECT_TRUE(r.built_here);
  EXPECT_FALSE(r.stored);
}

TEST(Store, ReadOnlyOpenOfMissingFile) {
  TempDir d;
  try {
    Store::open(d.file("nope.db"), OpenOptions{.mode = OpenMode::ReadOnly});
    FAIL();
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), StoreErrc::Open);
    EXPECT_NE(std::string(e.what()).find("nope.db: does not exist"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(d.file("nope.db")));
}

TEST(Store, OpenDefaultCreatesItsDirectory) {
  TempDir d;
  std::string dir = d.file("a/b/attnc");
  setenv("ATTNC_CACHE_DIR", dir.c_str(), 1);
  {
    Store s = Store::open_default();
    EXPECT_EQ(s.path(), dir + "/attnc.db");
  }
  unsetenv("ATTNC_CACHE_DIR");
  EXPECT_TRUE(std::filesystem::exists(dir + "/attnc.db"));
}

TEST(Store, OneStoreManyThreads) {
  TempDir d;
  Store s = Store::open(d.file("attnc.db"));
  constexpr int kThreads = 8, kPerThread = 40;
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        for (int i = 0; i < kPerThread; ++i) {
          std::string key = "t" + std::to_string(t) + "-" + std::to_string(i);
          s.put_kernel(make_kernel(key, 2048));
          auto got = s.find_kernel(key);
          if (!got || got->cubin != test::fake_cubin(key, 2048)) ++errors;
          s.put_tuning(test::make_tuning(test::tuning_key(key), 10.0 + i, 1000 + i));
          if (i % 10 == 0) s.list_kernels();
          if (i % 20 == 0) s.stats();
        }
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what();
        ++errors;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors, 0);
  EXPECT_EQ(s.stats().kernels, kThreads * kPerThread);
  EXPECT_EQ(s.stats().tuning_records, kThreads * kPerThread);
  EXPECT_TRUE(s.verify().ok());
}

TEST(Store, MovedStoreKeepsWorking) {
  TempDir d;
  Store a = Store::open(d.file("attnc.db"));
  Store b = std::move(a);
  EXPECT_TRUE(b.put_kernel(make_kernel("k")));
  EXPECT_EQ(b.path(), d.file("attnc.db"));
}

}  // namespace
}  // namespace attnc
