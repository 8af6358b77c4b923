// KernelBuilder over a real cache file and real NVRTC compiles: a kernel whose lease another
// builder holds is built last (the others do not wait behind it, and the wait is told), and
// kernels built while another program held the write lock are stored by finish().
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "runtime/compiler/kernel_builder.h"
#include "tests/unit/cache/cache_test_util.h"
#include "tests/unit/runtime/compiler/test_kernels.h"

namespace attnc {
namespace {

using namespace std::chrono_literals;

using test::TempDir;

// Plain SQL beside the builder, as another program would run it.
struct Sql : test::RawDb {
  using RawDb::RawDb;
  bool has_kernel(const std::string& key) { return scalar("SELECT count(*) FROM kernels WHERE key = '" + key + "'") == 1; }
};

std::vector<KernelSource> three_kernels() {
  std::vector<KernelSource> v;
  for (const char* name : {"attnc_builder_a", "attnc_builder_b", "attnc_builder_c"}) {
    v.push_back(test::plain_kernel(name, std::string("  x[threadIdx.x] *= ") + std::to_string(v.size() + 2) + ".f;"));
    v.back().config_json = "{}";  // the cache keeps JSON only
  }
  return v;
}

TEST(KernelBuilder, BuildsLeasedKernelsLast) {
  TempDir dir;
  const std::string db = dir.file("attnc.db");
  const auto sources = three_kernels();
  const std::string key_a = kernel_key(sources[0], {});
  { KernelBuilder(db, {}); }  // creates the cache
  // Another host's live builder holds kernel a: a lease whose heartbeat keeps moving.
  Sql other(db);
  ASSERT_EQ(other.exec("INSERT INTO leases VALUES('" + key_a + "', 1, 'elsewhere', 't', " + std::to_string(test::unix_now_ms()) +
                       ", " + std::to_string(test::unix_now_ms()) + ")"),
            SQLITE_OK);
  std::atomic<bool> released{false};
  std::thread beat([&] {
    Sql sql(db);
    while (!released) {
      sql.exec("UPDATE leases SET heartbeat_ms = " + std::to_string(test::unix_now_ms()));
      std::this_thread::sleep_for(50ms);
    }
  });

  KernelBuilder builder(db, {});
  std::mutex m;
  std::vector<std::string> notices;
  builder.set_notice([&](const std::string& n) {
    std::lock_guard lock(m);
    notices.push_back(n);
  });
  std::vector<BuildOutcome> out;
  std::thread run([&] { out = builder.build_many(sources, 1); });

  // b and c land in the cache while a is still held elsewhere.
  const std::string key_b = kernel_key(sources[1], {}), key_c = kernel_key(sources[2], {});
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  while (!(other.has_kernel(key_b) && other.has_kernel(key_c)) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(other.has_kernel(key_b) && other.has_kernel(key_c)) << "the others waited behind the held kernel";
  EXPECT_FALSE(other.has_kernel(key_a));
  std::this_thread::sleep_for(1200ms);  // long enough for the waiter to say that it waits
  released = true;
  beat.join();
  ASSERT_EQ(other.exec("DELETE FROM leases"), SQLITE_OK);  // the other builder gave up
  run.join();

  ASSERT_EQ(out.size(), 3u);
  for (const auto& o : out) ASSERT_TRUE(o.ok()) << o.error;
  EXPECT_EQ(out[0].kernel->origin, KernelOrigin::compiled);
  EXPECT_TRUE(other.has_kernel(key_a));
  for (const auto& s : sources) EXPECT_FALSE(builder.not_stored(kernel_key(s, {})));
  std::lock_guard lock(m);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("waiting for kernel attnc_builder_a: pid 1 on host elsewhere is building it"),
            std::string::npos)
      << notices[0];
}

TEST(KernelBuilder, StoresWhatAHeldLockKeptOutWhenFinishing) {
  TempDir dir;
  const std::string db = dir.file("attnc.db");
  const auto sources = three_kernels();
  KernelBuilder builder(db, {});
  Sql other(db);
  ASSERT_EQ(other.exec("BEGIN EXCLUSIVE; INSERT INTO meta VALUES('lock', '1')"), SQLITE_OK);
  const auto t0 = std::chrono::steady_clock::now();
  const auto out = builder.build_many({sources[0], sources[1]}, 1);
  const auto took = std::chrono::steady_clock::now() - t0;
  for (const auto& o : out) ASSERT_TRUE(o.ok()) << o.error;
  for (const auto& o : out) {
    auto why = builder.not_stored(o.kernel->record.key);
    ASSERT_TRUE(why);
    EXPECT_NE(why->find("locked"), std::string::npos) << *why << " / " << builder.cache_warning();
  }
  std::printf("two kernels built under a held write lock in %.1f s\n", std::chrono::duration<double>(took).count());
  ASSERT_EQ(other.exec("ROLLBACK"), SQLITE_OK);
  builder.finish();
  for (const auto& o : out) {
    EXPECT_FALSE(builder.not_stored(o.kernel->record.key));
    EXPECT_TRUE(other.has_kernel(o.kernel->record.key));
  }
}

}  // namespace
}  // namespace attnc
