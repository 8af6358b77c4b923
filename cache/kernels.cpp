// Store calls for kernels: find (with a cheap last-use refresh), put, list.
#include "cache/clock.h"
#include "cache/rows.h"
#include "cache/store_impl.h"

namespace attnc {
namespace {

// Refreshing last_used_at on every hit would turn every read into a write; once a minute is
// precise enough for garbage collection measured in days.
constexpr std::int64_t kTouchEverySeconds = 60;

// Best effort: a hit must not wait for (or fail on) another writer's lock.
void touch(sql::Conn& c, KernelRecord& r) {
  std::int64_t now = now_seconds();
  if (now - r.last_used_at < kTouchEverySeconds) return;
  int saved = c.busy_timeout();
  c.set_busy_timeout(0);
  try {
    rows::touch_kernel(c, r.key, now);
    r.last_used_at = now;
  } catch (const StoreError&) {
  }
  c.set_busy_timeout(saved);
}

}  // namespace

std::optional<KernelRecord> Store::find_kernel(const std::string& key) {
  auto c = impl_->borrow();
  std::optional<KernelRecord> r;
  try {
    r = rows::read_kernel(*c, key);
  } catch (const StoreError& e) {
    // A checksum mismatch (not an SQLite error): drop the damaged row, so the caller's rebuild can
    // store a good one, then report.
    if (e.code() == StoreErrc::Corrupt && e.sqlite_code() == 0 && impl_->writable()) {
      try {
        c->query("DELETE FROM kernels WHERE key = ?1", "drop damaged kernel").bind(1, key).run();
      } catch (const StoreError&) {
      }
    }
    throw;
  }
  if (r && impl_->writable()) touch(*c, *r);
  return r;
}

bool Store::put_kernel(const KernelRecord& record) {
  rows::validate(impl_->path, record);
  auto c = impl_->borrow();
  return rows::insert_kernel(*c, record);  // one statement: its own transaction
}

std::size_t Store::put_kernels(std::span<const KernelRecord> records) {
  for (const KernelRecord& r : records) rows::validate(impl_->path, r);
  auto c = impl_->borrow();
  sql::Txn txn(*c, sql::Txn::Immediate);
  std::size_t inserted = 0;
  for (const KernelRecord& r : records) inserted += rows::insert_kernel(*c, r) ? 1 : 0;
  txn.commit();
  return inserted;
}

std::vector<KernelRecord> Store::list_kernels(bool with_cubin) {
  auto c = impl_->borrow();
  std::vector<KernelRecord> out;
  rows::for_each_kernel(*c, with_cubin, [&](KernelRecord&& r) { out.push_back(std::move(r)); });
  return out;
}

}  // namespace attnc
