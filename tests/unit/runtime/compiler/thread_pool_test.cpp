#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>

#include "runtime/compiler/thread_pool.h"

namespace attnc {
namespace {

TEST(ThreadPool, ReturnsResultsAndExceptions) {
  ThreadPool pool(3);
  EXPECT_EQ(pool.size(), 3);
  std::vector<std::future<int>> f;
  for (int i = 0; i < 20; ++i) f.push_back(pool.submit([i] { return i * i; }));
  for (int i = 0; i < 20; ++i) EXPECT_EQ(f[i].get(), i * i);
  auto bad = pool.submit([]() -> int { throw std::runtime_error("boom"); });
  EXPECT_THROW(bad.get(), std::runtime_error);
}

TEST(ThreadPool, DestructorRunsEverythingQueued) {
  std::atomic<int> done{0};
  {
    ThreadPool pool(2);
    for (int i = 0; i < 50; ++i) pool.submit([&] { ++done; });
  }
  EXPECT_EQ(done.load(), 50);
}

TEST(ThreadPool, ZeroMeansHardwareThreads) { EXPECT_GE(ThreadPool(0).size(), 1); }

}  // namespace
}  // namespace attnc
