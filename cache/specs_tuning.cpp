// Store calls for specs and tuning records.
#include "cache/rows.h"
#include "cache/store_impl.h"

namespace attnc {

void Store::put_spec(const std::string& spec_id, const std::string& name, const std::string& canonical_yaml) {
  if (spec_id.empty()) throw StoreError(StoreErrc::Invalid, impl_->path, "spec record has an empty spec_id");
  auto c = impl_->borrow();
  // Look first: a spec already present must not cost a wait for another writer's lock.
  if (rows::read_spec(*c, spec_id)) return;
  rows::insert_spec(*c, SpecRecord{spec_id, name, canonical_yaml, 0});
}

std::optional<SpecRecord> Store::find_spec(const std::string& spec_id) {
  auto c = impl_->borrow();
  return rows::read_spec(*c, spec_id);
}

std::vector<SpecRecord> Store::list_specs() {
  auto c = impl_->borrow();
  std::vector<SpecRecord> out;
  rows::for_each_spec(*c, [&](SpecRecord&& r) { out.push_back(std::move(r)); });
  return out;
}

bool Store::put_tuning(const TuningRecord& record, TuningConflict on_conflict) {
  rows::validate(impl_->path, record);
  auto c = impl_->borrow();
  sql::Txn txn(*c, sql::Txn::Immediate);  // the existence check and the upsert must see one state
  rows::Upserted u = rows::upsert_tuning(*c, record, on_conflict);
  txn.commit();
  return u != rows::Upserted::Kept;
}

std::optional<TuningRecord> Store::find_tuning(const TuningKey& key) {
  auto c = impl_->borrow();
  return rows::read_tuning(*c, key);
}

std::vector<TuningRecord> Store::list_tuning(const TuningFilter& filter) {
  auto c = impl_->borrow();
  std::vector<TuningRecord> out;
  rows::for_each_tuning(*c, filter, [&](TuningRecord&& r) { out.push_back(std::move(r)); });
  return out;
}

}  // namespace attnc
