// D8: on a full disk, `gc` (the remedy the Full error names) still deletes and gives the room back.
// A real full file system: a 2 MB tmpfs mounted in a child's own mount namespace (as root, or in a
// user namespace of its own otherwise), filled to the last byte. Where no namespace can be made the
// test is skipped; FullDisk.GcAtTheSizeCap still runs the same gc against SQLITE_FULL from a size cap.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/statvfs.h>

#include <fstream>

#include "cache_test_util.h"

namespace attnc {
namespace {

using test::make_kernel;
using test::spawn;
using test::TempDir;
using test::wait_exit;

constexpr int kNoMount = 77;

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  return bool(f);
}

// In a child: a private tmpfs of `size` at `dir`, gone when the child exits.
bool mount_tmpfs(const std::string& dir, const std::string& size) {
  if (unshare(CLONE_NEWNS) != 0) {
    const uid_t uid = getuid();
    const gid_t gid = getgid();
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return false;
    if (!write_file("/proc/self/setgroups", "deny") ||
        !write_file("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1") ||
        !write_file("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1"))
      return false;
  }
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return false;
  return mount("tmpfs", dir.c_str(), "tmpfs", 0, ("size=" + size).c_str()) == 0;
}

std::int64_t free_bytes(const std::string& dir) {
  struct statvfs fs {};
  return statvfs(dir.c_str(), &fs) == 0 ? static_cast<std::int64_t>(fs.f_bavail * fs.f_frsize) : -1;
}

// Kernels while they fit with room to spare, then a filler file until the file system has no byte
// left. (Stopping the kernels short of a failed write keeps the WAL without the slack that a
// rolled-back transaction leaves, which a small gc could otherwise use: the worst case.)
int fill(Store& s, const std::string& dir) {
  int stored = 0;
  for (; free_bytes(dir) > 256 * 1024; ++stored) s.put_kernel(make_kernel("k" + std::to_string(stored), 48 * 1024));
  std::ofstream filler(dir + "/filler", std::ios::binary);
  const std::string block(512, 'x');
  while (filler.write(block.data(), block.size()) && filler.flush()) {
  }
  return stored;
}

// Runs `body` in a child on a fresh 2 MB tmpfs; returns its exit code (kNoMount: no tmpfs here).
int on_full_disk(const std::function<int(const std::string&)>& body) {
  TempDir d;
  const std::string dir = d.file("full");
  std::filesystem::create_directory(dir);
  return wait_exit(spawn([&] { return mount_tmpfs(dir, "2m") ? body(dir) : kNoMount; }));
}

#define CHECK_OR_EXIT(cond, code)                              \
  do {                                                         \
    if (!(cond)) {                                             \
      std::fprintf(stderr, "failed: %s\n", #cond);             \
      return code;                                             \
    }                                                          \
  } while (0)

TEST(FullDisk, GcDeletesAndGivesRoomBackWithNoByteFree) {
  const int rc = on_full_disk([](const std::string& dir) {
    const std::string db = dir + "/attnc.db";
    Store s = Store::open(db, OpenOptions{.reserve_bytes = 512 * 1024});
    CHECK_OR_EXIT(std::filesystem::file_size(db + "-reserve") == 512 * 1024, 1);
    const int stored = fill(s, dir);
    CHECK_OR_EXIT(stored > 5, 2);
    CHECK_OR_EXIT(free_bytes(dir) == 0, 3);
    std::printf("full: %d kernels stored, 0 bytes free\n", stored);

    const GcReport r = s.gc(GcPolicy{.max_cubin_bytes = 0});
    CHECK_OR_EXIT(r.used_reserve, 4);
    CHECK_OR_EXIT(r.kernels_removed == stored, 5);
    CHECK_OR_EXIT(s.stats().kernels == 0, 6);
    CHECK_OR_EXIT(s.verify().ok(), 7);
    const std::int64_t room = free_bytes(dir);
    std::printf("after gc: %lld bytes free, file %lld -> %lld bytes\n", (long long)room, (long long)r.db_bytes_before,
                (long long)r.db_bytes_after);
    CHECK_OR_EXIT(room > 512 * 1024, 8);
    CHECK_OR_EXIT(s.put_kernel(make_kernel("after", 48 * 1024)), 9);
    return 0;
  });
  if (rc == kNoMount) GTEST_SKIP() << "cannot mount a tmpfs here (no mount or user namespace)";
  EXPECT_EQ(rc, 0);
}

// Without the reserve the same gc cannot run, and changes nothing: what the reserve is for.
TEST(FullDisk, WithoutTheReserveGcFailsAndChangesNothing) {
  const int rc = on_full_disk([](const std::string& dir) {
    Store s = Store::open(dir + "/attnc.db", OpenOptions{.reserve_bytes = 0});
    const int stored = fill(s, dir);
    CHECK_OR_EXIT(free_bytes(dir) == 0, 1);
    try {
      s.gc(GcPolicy{.max_cubin_bytes = 0});
      return 2;
    } catch (const StoreError& e) {
      CHECK_OR_EXIT(e.code() == StoreErrc::Full, 3);
    }
    CHECK_OR_EXIT(s.stats().kernels == stored, 4);
    CHECK_OR_EXIT(s.verify().ok(), 5);
    return 0;
  });
  if (rc == kNoMount) GTEST_SKIP() << "cannot mount a tmpfs here (no mount or user namespace)";
  EXPECT_EQ(rc, 0);
}

// SQLITE_FULL from a size cap (max_page_count) rather than the file system: gc deletes, and the
// room it frees takes new kernels.
TEST(FullDisk, GcAtTheSizeCap) {
  TempDir d;
  const std::string db = d.file("attnc.db");
  { Store::open(db); }
  Store s = Store::open(db, OpenOptions{.max_db_bytes = 1 << 20});
  int stored = 0;
  try {
    for (;; ++stored) s.put_kernel(make_kernel("k" + std::to_string(stored), 48 * 1024));
  } catch (const StoreError& e) {
    ASSERT_EQ(e.code(), StoreErrc::Full) << e.what();
    EXPECT_NE(std::string(e.what()).find("attnc cache gc"), std::string::npos) << e.what();
  }
  const GcReport r = s.gc(GcPolicy{.max_cubin_bytes = 0});
  EXPECT_EQ(r.kernels_removed, stored);
  EXPECT_LT(r.db_bytes_after, r.db_bytes_before / 4) << "freed pages went back (incremental vacuum)";
  EXPECT_TRUE(s.put_kernel(make_kernel("after", 48 * 1024)));
  EXPECT_TRUE(s.verify().ok());
}

}  // namespace
}  // namespace attnc
