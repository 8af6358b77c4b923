// attnc cache ls|show|stats|verify|gc|export|import|merge: look after the SQLite cache.
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <vector>

#include "cache/cache_path.h"
#include "cache/store.h"
#include "tools/cli/cli_common.h"

namespace attnc::cli {
namespace {

struct CacheOptions {
  std::string db, target, out, in;
  std::vector<std::string> inputs;
  bool json = false, with_kernels = false, vacuum = false;
  double max_unused_days = -1;
  long long max_bytes = -1;
};

std::string when(std::int64_t unix_s) {
  if (!unix_s) return "-";
  char buf[32];
  const std::time_t t = unix_s;
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", std::localtime(&t));
  return buf;
}

nlohmann::ordered_json kernel_json(const KernelRecord& k) {
  return {{"key", k.key}, {"entry", k.entry}, {"family", k.family}, {"arch", k.arch}, {"spec_id", k.spec_id},
          {"config", nlohmann::json::parse(k.config_json.empty() ? "{}" : k.config_json, nullptr, false)},
          {"registers", k.registers}, {"smem_bytes", k.smem_bytes}, {"spill_stores", k.spill_stores},
          {"spill_loads", k.spill_loads}, {"cubin_bytes", k.cubin_bytes}, {"compile_ms", k.compile_ms},
          {"nvrtc_version", k.nvrtc_version}, {"created_at", k.created_at}, {"last_used_at", k.last_used_at}};
}

Store open_store(const CacheOptions& o, OpenMode mode = OpenMode::ReadWrite) {
  OpenOptions oo;
  oo.mode = mode;
  return Store::open(resolve_db(o.db), oo);
}

void cache_ls(const CacheOptions& o) {
  Store st = open_store(o, OpenMode::ReadOnly);
  const auto kernels = st.list_kernels(false);
  if (o.json) {
    nlohmann::ordered_json a = nlohmann::ordered_json::array();
    for (const auto& k : kernels) a.push_back(kernel_json(k));
    return print_json(a);
  }
  Table t({"key", "entry", "arch", "regs", "spills", "cubin_kb", "compile_ms", "last_used"});
  for (const auto& k : kernels)
    t.add({k.key.substr(0, 12), k.entry, k.arch, std::to_string(k.registers),
           std::to_string(k.spill_stores + k.spill_loads), fmt(k.cubin_bytes / 1024.0, 1), fmt(k.compile_ms, 0),
           when(k.last_used_at)});
  t.print();
  std::printf("%zu kernels in %s\n", kernels.size(), st.path().c_str());
}

void cache_show(const CacheOptions& o) {
  Store st = open_store(o, OpenMode::ReadOnly);
  std::vector<KernelRecord> hits;
  for (auto& k : st.list_kernels(false))
    if (k.key.rfind(o.target, 0) == 0 || k.entry == o.target) hits.push_back(std::move(k));
  if (hits.empty()) throw Failed("no kernel with key prefix or entry '" + o.target + "' in " + st.path());
  if (hits.size() > 1 && !o.json) {
    std::fprintf(stderr, "'%s' matches %zu kernels; give more of the key:\n", o.target.c_str(), hits.size());
    for (const auto& k : hits) std::fprintf(stderr, "  %s  %s\n", k.key.c_str(), k.entry.c_str());
    throw Failed("");
  }
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (const auto& k : hits) {
    auto j = kernel_json(k);
    if (auto full = st.find_kernel(k.key)) j["log"] = full->log;
    a.push_back(j);
  }
  print_json(hits.size() == 1 ? a[0] : a);
}

void cache_stats(const CacheOptions& o) {
  Store st = open_store(o, OpenMode::ReadOnly);
  const Stats s = st.stats();
  nlohmann::ordered_json j{{"db", st.path()}, {"schema_version", s.schema_version},
                           {"journal_mode", s.journal_mode}, {"kernels", s.kernels},
                           {"cubin_bytes", s.cubin_bytes}, {"specs", s.specs},
                           {"tuning_records", s.tuning_records}, {"leases", s.leases},
                           {"db_bytes", s.db_bytes}, {"wal_bytes", s.wal_bytes}};
  for (const auto& [arch, g] : s.by_arch) j["by_arch"][arch] = {{"kernels", g.kernels}, {"cubin_bytes", g.cubin_bytes}};
  for (const auto& [fam, g] : s.by_family) j["by_family"][fam] = {{"kernels", g.kernels}, {"cubin_bytes", g.cubin_bytes}};
  if (o.json) return print_json(j);
  std::printf("db              %s\nschema version  %d (%s)\nkernels         %lld (%.1f MB of cubins)\n"
              "specs           %lld\ntuning records  %lld\nleases          %lld\nfile size       %.1f MB (+%.1f MB WAL)\n",
              st.path().c_str(), s.schema_version, s.journal_mode.c_str(), (long long)s.kernels,
              s.cubin_bytes / 1e6, (long long)s.specs, (long long)s.tuning_records, (long long)s.leases,
              s.db_bytes / 1e6, s.wal_bytes / 1e6);
  for (const auto& [arch, g] : s.by_arch) std::printf("  %-12s  %lld kernels\n", arch.c_str(), (long long)g.kernels);
}

void cache_verify(const CacheOptions& o) {
  const VerifyReport r = Store::verify_file(resolve_db(o.db));
  if (o.json) {
    print_json({{"ok", r.ok()}, {"schema_version", r.schema_version}, {"kernels_checked", r.kernels_checked},
                {"problems", r.problems}, {"notes", r.notes}});
  } else {
    for (const auto& p : r.problems) std::printf("problem: %s\n", p.c_str());
    for (const auto& n : r.notes) std::printf("note: %s\n", n.c_str());
    std::printf("%s: %s (%lld kernels checked)\n", resolve_db(o.db).c_str(), r.ok() ? "ok" : "NOT OK",
                (long long)r.kernels_checked);
  }
  if (!r.ok()) throw Failed("");
}

void cache_gc(const CacheOptions& o) {
  Store st = open_store(o);
  GcPolicy p;
  if (o.max_unused_days >= 0) p.max_unused = std::chrono::seconds(static_cast<long long>(o.max_unused_days * 86400));
  if (o.max_bytes >= 0) p.max_cubin_bytes = o.max_bytes;
  p.vacuum = o.vacuum;
  const GcReport r = st.gc(p);
  if (r.used_reserve) std::printf("the disk was full: used the cache's reserve (%s) to make room\n", (st.path() + "-reserve").c_str());
  if (p.vacuum && !r.vacuumed) std::printf("skipped --vacuum: it needs room for a second copy of the database\n");
  std::printf("removed %lld kernels (%.1f MB of cubins), %lld stale leases; file %.1f -> %.1f MB\n",
              (long long)r.kernels_removed, r.cubin_bytes_removed / 1e6, (long long)r.leases_removed,
              r.db_bytes_before / 1e6, r.db_bytes_after / 1e6);
}

void cache_export(const CacheOptions& o) {
  Store st = open_store(o, OpenMode::ReadOnly);
  st.export_to(o.out, o.with_kernels);
  std::printf("exported specs, tuning records%s to %s\n", o.with_kernels ? " and kernels" : "", o.out.c_str());
}

ImportReport& operator+=(ImportReport& a, const ImportReport& b) {
  a.kernels_added += b.kernels_added, a.kernels_present += b.kernels_present;
  a.specs_added += b.specs_added, a.specs_present += b.specs_present;
  a.tuning_added += b.tuning_added, a.tuning_replaced += b.tuning_replaced, a.tuning_kept += b.tuning_kept;
  return a;
}

std::string import_summary(const ImportReport& r) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "kernels: %lld added, %lld present; specs: %lld added, %lld present; tuning: %lld added, "
                "%lld replaced, %lld kept",
                (long long)r.kernels_added, (long long)r.kernels_present, (long long)r.specs_added,
                (long long)r.specs_present, (long long)r.tuning_added, (long long)r.tuning_replaced,
                (long long)r.tuning_kept);
  return buf;
}

void cache_import(const CacheOptions& o) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(o.in, ec)) throw Failed("cache import: " + o.in + ": no such database file");
  Store st = open_store(o);
  std::printf("%s\n", import_summary(st.import_from(o.in)).c_str());
}

// Combines the databases of a sharded sweep (attnc tune --shard i/N on several GPUs or machines).
// Every input is checked before anything is written, so a bad shard stops the merge with the
// output untouched; each input then lands in one transaction, and the same key from two shards
// keeps the faster record (TuningConflict::KeepBetter), so the order of inputs does not matter and
// merging a shard twice changes nothing.
void cache_merge(const CacheOptions& o) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::string> seen;
  for (const auto& in : o.inputs) {
    if (!fs::is_regular_file(in, ec)) throw Failed("cache merge: " + in + ": no such database file");
    if (fs::exists(o.out, ec) && fs::equivalent(in, o.out, ec))
      throw Failed("cache merge: " + in + " is the output itself; name it once, as the output");
    for (const auto& s : seen)
      if (fs::equivalent(in, s, ec)) throw Failed("cache merge: " + in + " is named twice");
    seen.push_back(in);
    const VerifyReport v = Store::verify_file(in, false);
    if (!v.ok()) throw Failed("cache merge: " + in + " is not a sound attnc cache: " + v.problems.front());
  }
  Store st = Store::open(o.out);
  ImportReport total;
  for (const auto& in : o.inputs) {
    const ImportReport r = st.import_from(in);
    std::printf("%s: %s\n", in.c_str(), import_summary(r).c_str());
    total += r;
  }
  const Stats s = st.stats();
  std::printf("merged %zu databases into %s: %s; it now holds %lld tuning records, %lld kernels, %lld specs\n",
              o.inputs.size(), st.path().c_str(), import_summary(total).c_str(), (long long)s.tuning_records,
              (long long)s.kernels, (long long)s.specs);
}

}  // namespace

void add_cache(CLI::App& app) {
  auto o = std::make_shared<CacheOptions>();
  auto* cache = app.add_subcommand("cache", "Inspect and maintain the kernel cache");
  cache->require_subcommand(1);
  cache->add_option("--db", o->db, std::string("cache database (default: ") + kDefaultCachePathHelp + ")");
  auto sub = [&](const char* name, const char* help, void (*fn)(const CacheOptions&)) {
    auto* c = cache->add_subcommand(name, help);
    c->add_option("--db", o->db, "cache database");
    c->final_callback([o, fn] { fn(*o); });
    return c;
  };
  sub("ls", "List cached kernels", cache_ls)->add_flag("--json", o->json, "machine-readable");
  auto* show = sub("show", "One kernel's record and compile log", cache_show);
  show->add_option("key", o->target, "key prefix or entry name")->required();
  show->add_flag("--json", o->json, "machine-readable (the default output is JSON already)");
  sub("stats", "Counts and sizes", cache_stats)->add_flag("--json", o->json, "machine-readable");
  sub("verify", "Check integrity, schema and every cubin; exit 1 on a problem (leases left behind are notes)",
      cache_verify)
      ->add_flag("--json", o->json, "machine-readable");
  auto* gc = sub("gc",
                 "Drop unused kernels and stale leases (not refreshed for an hour, or stamped more than a minute in "
                 "the future); works on a full disk, using the room the cache keeps in <db>-reserve",
                 cache_gc);
  gc->add_option("--max-unused-days", o->max_unused_days, "drop kernels not used for this many days");
  gc->add_option("--max-bytes", o->max_bytes, "then drop least recently used cubins beyond this many bytes");
  gc->add_flag("--vacuum", o->vacuum, "give freed pages back to the file system");
  auto* ex = sub("export", "Write specs and tuning records (and kernels) to a new database file", cache_export);
  ex->add_option("out", o->out, "the new database file")->required();
  ex->add_flag("--with-kernels", o->with_kernels, "include cubins");
  auto* im = sub("import", "Merge an exported database into this cache", cache_import);
  im->add_option("in", o->in, "the database file to merge")->required();
  auto* merge = cache->add_subcommand(
      "merge", "Combine databases (e.g. the shards of a tuning sweep) into OUT; the faster record wins a conflict");
  merge->add_option("out", o->out, "the database to merge into (created when missing)")->required();
  merge->add_option("inputs", o->inputs, "the databases to merge")->required()->expected(1, -1);
  merge->final_callback([o] { cache_merge(*o); });
}

}  // namespace attnc::cli
