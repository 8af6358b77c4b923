// export_to / import_from: round trips and merges lose and duplicate nothing.
#include <gtest/gtest.h>

#include <fstream>

#include "cache_test_util.h"

namespace attnc {
namespace {

using test::make_kernel;
using test::make_tuning;
using test::RawDb;
using test::TempDir;
using test::tuning_key;

void fill(Store& s, const std::string& tag, int n) {
  for (int i = 0; i < n; ++i) {
    std::string id = tag + std::to_string(i);
    s.put_kernel(make_kernel("k-" + id, 2048));
    s.put_spec("spec-" + id, "name " + id, "yaml: " + id + "\n");
    s.put_tuning(make_tuning(tuning_key("spec-" + id), 10.0 + i, 1000 + i));
  }
}

TEST(ExportImport, RoundTripWithKernels) {
  TempDir d;
  Store a = Store::open(d.file("a.db"));
  fill(a, "a", 5);
  a.get_or_build("k-extra", [] { return make_kernel("k-extra"); });
  a.export_to(d.file("out.db"), true);
  EXPECT_FALSE(std::filesystem::exists(d.file("out.db.partial")));
  EXPECT_FALSE(std::filesystem::exists(d.file("out.db-wal"))) << "an export is one self-contained file";
  EXPECT_TRUE(Store::verify_file(d.file("out.db")).ok());

  Store b = Store::open(d.file("b.db"));
  ImportReport r = b.import_from(d.file("out.db"));
  EXPECT_EQ(r.kernels_added, 6);
  EXPECT_EQ(r.specs_added, 5);
  EXPECT_EQ(r.tuning_added, 5);
  auto ka = a.list_kernels(true), kb = b.list_kernels(true);
  ASSERT_EQ(ka.size(), kb.size());
  for (std::size_t i = 0; i < ka.size(); ++i) {
    EXPECT_EQ(ka[i].key, kb[i].key);
    EXPECT_EQ(ka[i].cubin, kb[i].cubin);
    EXPECT_EQ(ka[i].created_at, kb[i].created_at);
  }
  auto ta = a.list_tuning(), tb = b.list_tuning();
  ASSERT_EQ(ta.size(), tb.size());
  for (std::size_t i = 0; i < ta.size(); ++i) {
    EXPECT_EQ(ta[i].key, tb[i].key);
    EXPECT_EQ(ta[i].config_json, tb[i].config_json);
    EXPECT_EQ(ta[i].candidates_json, tb[i].candidates_json);
    EXPECT_EQ(ta[i].created_at, tb[i].created_at);
  }
  EXPECT_EQ(b.list_specs().size(), 5u);
  EXPECT_EQ(b.stats().leases, 0);
}

TEST(ExportImport, TuningOnlyExport) {
  TempDir d;
  Store a = Store::open(d.file("a.db"));
  fill(a, "a", 3);
  a.export_to(d.file("out.db"), false);
  RawDb raw(d.file("out.db"));
  EXPECT_EQ(raw.scalar("SELECT count(*) FROM kernels"), 0);
  EXPECT_EQ(raw.scalar("SELECT count(*) FROM tuning"), 3);
  EXPECT_EQ(raw.scalar("SELECT count(*) FROM specs"), 3);
}

TEST(ExportImport, MergeLosesAndDuplicatesNothing) {
  TempDir d;
  Store a = Store::open(d.file("a.db"));
  Store b = Store::open(d.file("b.db"));
  fill(a, "a", 4);
  fill(b, "b", 3);
  // Shared records: the same kernel and spec in both, and tuning conflicts both ways.
  a.put_kernel(make_kernel("shared"));
  b.put_kernel(make_kernel("shared"));
  a.put_spec("spec-shared", "shared", "y");
  b.put_spec("spec-shared", "shared", "y");
  TuningKey faster_in_b = tuning_key("c1"), faster_in_a = tuning_key("c2");
  a.put_tuning(make_tuning(faster_in_b, 20, 100, R"({"from":"a"})"));
  b.put_tuning(make_tuning(faster_in_b, 10, 50, R"({"from":"b"})"));
  a.put_tuning(make_tuning(faster_in_a, 5, 50, R"({"from":"a"})"));
  b.put_tuning(make_tuning(faster_in_a, 6, 900, R"({"from":"b"})"));

  ImportReport r = a.import_from(d.file("b.db"));
  EXPECT_EQ(r.kernels_added, 3);
  EXPECT_EQ(r.kernels_present, 1);
  EXPECT_EQ(r.specs_added, 3);
  EXPECT_EQ(r.specs_present, 1);
  EXPECT_EQ(r.tuning_added, 3);
  EXPECT_EQ(r.tuning_replaced, 1);
  EXPECT_EQ(r.tuning_kept, 1);

  Stats st = a.stats();
  EXPECT_EQ(st.kernels, 4 + 3 + 1);
  EXPECT_EQ(st.specs, 4 + 3 + 1);
  EXPECT_EQ(st.tuning_records, 4 + 3 + 2);
  EXPECT_EQ(a.find_tuning(faster_in_b)->config_json, R"({"from":"b"})");
  EXPECT_EQ(a.find_tuning(faster_in_a)->config_json, R"({"from":"a"})");

  // Importing again changes nothing.
  ImportReport again = a.import_from(d.file("b.db"));
  EXPECT_EQ(again.kernels_added + again.specs_added + again.tuning_added + again.tuning_replaced, 0);
  EXPECT_EQ(a.stats().kernels, st.kernels);
  EXPECT_EQ(a.stats().tuning_records, st.tuning_records);

  // And the merge is order-independent: b <- a gives the same tuning table.
  b.import_from(d.file("a.db"));
  auto ta = a.list_tuning(), tb = b.list_tuning();
  ASSERT_EQ(ta.size(), tb.size());
  for (std::size_t i = 0; i < ta.size(); ++i) {
    EXPECT_EQ(ta[i].key, tb[i].key);
    EXPECT_EQ(ta[i].config_json, tb[i].config_json);
  }
  EXPECT_TRUE(a.verify().ok());
  EXPECT_TRUE(b.verify().ok());
}

TEST(ExportImport, ClearErrors) {
  TempDir d;
  Store a = Store::open(d.file("a.db"));
  fill(a, "a", 1);
  a.export_to(d.file("out.db"), true);
  try {
    a.export_to(d.file("out.db"), true);
    FAIL();
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("already exists"), std::string::npos) << e.what();
  }
  EXPECT_THROW(a.import_from(d.file("a.db")), StoreError);
  try {
    a.import_from(d.file("missing.db"));
    FAIL();
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), StoreErrc::Open);
    EXPECT_NE(std::string(e.what()).find("missing.db: does not exist"), std::string::npos) << e.what();
  }
  { RawDb(d.file("foreign.db")).exec("CREATE TABLE t(a)"); }
  try {
    a.import_from(d.file("foreign.db"));
    FAIL();
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), StoreErrc::Schema);
    EXPECT_NE(std::string(e.what()).find("foreign.db: is an SQLite database but not an attnc cache"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("nothing was imported"), std::string::npos) << e.what();
  }
  // D10: a file that is no database at all (a spec, say) is named as the input, and the advice
  // meant for a damaged cache (delete it) is not given about it.
  { std::ofstream(d.file("spec.yaml")) << "version: 1\nname: x\n"; }
  try {
    a.import_from(d.file("spec.yaml"));
    FAIL();
  } catch (const StoreError& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("spec.yaml: is not an attnc cache or export"), std::string::npos) << w;
    EXPECT_EQ(w.find("delete"), std::string::npos) << w;
  }
  try {
    a.export_to(d.file("no/dir/out.db"), true);
    FAIL();
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), StoreErrc::Open);
  }
  EXPECT_EQ(a.stats().kernels, 1);
}

}  // namespace
}  // namespace attnc
