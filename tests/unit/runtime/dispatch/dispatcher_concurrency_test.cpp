// N processes, each with its own Attention on one fresh database, warm the same kernel at once:
// exactly one compiles it (NVRTC), the others wait on its lease and load it from the cache. Also
// N threads of one process: one build, every thread sees the same choice. No GPU needed.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>
#include <vector>

#include "runtime/dispatch/dispatcher.h"
#include "tests/unit/cache/cache_test_util.h"
#include "tests/unit/runtime/dispatch/dispatch_test_util.h"

namespace attnc {
namespace {

AttentionOptions options(const std::string& db) {
  AttentionOptions o;
  o.db = db;
  o.device_info = test::test_device();
  o.no_jit = false;
  return o;
}

TEST(DispatcherConcurrency, ProcessesCompileOnce) {
  test::TempDir dir;
  const std::string db = dir.file("attnc.db");
  const Spec spec = parse_spec(test::kSmallSpecYaml, "small.yaml");
  const Problem problem{KernelKind::decode, 8, 1, 2048};
  constexpr int kProcesses = 4;
  std::vector<pid_t> children;
  for (int i = 0; i < kProcesses; ++i) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {  // exit code: 10 + KernelOrigin, 1 on error
      int code = 1;
      try {
        Attention att(spec, options(db));
        code = 10 + static_cast<int>(att.prepare(problem));
      } catch (const std::exception& e) {
        std::fprintf(stderr, "child %d: %s\n", i, e.what());
      }
      _exit(code);
    }
    children.push_back(pid);
  }
  int compiled = 0, cached = 0;
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    const int code = WEXITSTATUS(status);
    ASSERT_TRUE(code == 10 + int(KernelOrigin::compiled) || code == 10 + int(KernelOrigin::cache)) << code;
    (code == 10 + int(KernelOrigin::compiled) ? compiled : cached)++;
  }
  EXPECT_EQ(compiled, 1);
  EXPECT_EQ(cached, kProcesses - 1);

  // A later process finds it in the cache, and a second prepare in that process in memory.
  Attention att(spec, options(db));
  EXPECT_EQ(att.prepare(problem), KernelOrigin::cache);
  EXPECT_EQ(att.prepare(problem), KernelOrigin::memory);
}

TEST(DispatcherConcurrency, ThreadsShareOneBuild) {
  test::TempDir dir;
  Attention att(parse_spec(test::kSmallSpecYaml, "small.yaml"), options(dir.file("attnc.db")));
  const Problem problem{KernelKind::decode, 2, 1, 300};
  constexpr int kThreads = 4;
  std::vector<KernelOrigin> origins(kThreads);
  std::vector<std::string> entries(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      entries[i] = *att.select(problem).entry;
      origins[i] = att.prepare(problem);
    });
  for (auto& t : threads) t.join();
  int compiled = 0;
  for (int i = 0; i < kThreads; ++i) {
    EXPECT_EQ(entries[i], entries[0]);
    compiled += origins[i] == KernelOrigin::compiled;
  }
  EXPECT_EQ(compiled, 1);
}

}  // namespace
}  // namespace attnc
