// D6: a hit never waits on a writer. Another program holds the write lock (BEGIN EXCLUSIVE, which
// in WAL mode shuts out writers, not readers) for longer than the busy timeout: opening the store,
// hits, a spec already present and stats all return at once; a miss is built without a lease and
// handed back unstored (Locked) after lock_wait, and stores once the lock is free.
#include <gtest/gtest.h>

#include <chrono>

#include "cache_test_util.h"

namespace attnc {
namespace {

using namespace std::chrono_literals;
using test::make_kernel;
using test::RawDb;
using test::TempDir;

using Clock = std::chrono::steady_clock;

TEST(Locked, HitsNeverWaitOnAWriter) {
  TempDir d;
  const std::string db = d.file("attnc.db");
  {
    Store s = Store::open(db);
    s.put_kernel(make_kernel("k1"));
    s.put_spec("spec1", "llama", "name: llama\n");
  }
  RawDb other(db);
  ASSERT_EQ(other.exec("BEGIN EXCLUSIVE; INSERT INTO specs VALUES('x', 'x', 'x', 0)"), SQLITE_OK) << other.errmsg();

  const auto t0 = Clock::now();
  Store s = Store::open(db, OpenOptions{.busy_timeout = 3s});
  auto hit = s.get_or_build("k1", []() -> KernelRecord { throw std::runtime_error("built a cached kernel"); });
  EXPECT_FALSE(hit.built_here);
  EXPECT_TRUE(s.find_kernel("k1"));
  s.put_spec("spec1", "llama", "name: llama\n");  // present: a read, no write lock
  EXPECT_EQ(s.stats().kernels, 1);
  const auto hits_took = Clock::now() - t0;
  EXPECT_LT(hits_took, 500ms) << "a hit waited on the writer";

  const auto t1 = Clock::now();
  auto miss = s.get_or_build("k2", [] { return make_kernel("k2"); }, LeaseOptions{.lock_wait = 100ms});
  const auto miss_took = Clock::now() - t1;
  EXPECT_TRUE(miss.built_here);
  EXPECT_FALSE(miss.stored);
  EXPECT_EQ(miss.store_errc, StoreErrc::Locked) << miss.store_error;
  EXPECT_LT(miss_took, 1500ms) << "the miss waited for the whole busy timeout";
  std::printf("under an exclusive lock: open + hits %.1f ms, miss %.1f ms\n",
              std::chrono::duration<double, std::milli>(hits_took).count(),
              std::chrono::duration<double, std::milli>(miss_took).count());

  ASSERT_EQ(other.exec("ROLLBACK"), SQLITE_OK);
  EXPECT_TRUE(s.put_kernel(miss.record)) << "stored once the lock is free";
  EXPECT_EQ(s.stats().leases, 0) << "no lease was taken while locked";
}

}  // namespace
}  // namespace attnc
