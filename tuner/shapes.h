// Which shape buckets to tune: a preset (`anchors`, `serving`, `smoke`) or a YAML file listing
// shapes, and the sweep's task list (sorted, de-duplicated, optionally one shard of it).
#pragma once

#include <string>
#include <vector>

#include "generator/spec/spec.h"
#include "runtime/dispatch/shape_bucket.h"

namespace attnc {

const std::vector<std::string>& shape_preset_names();

// A preset's buckets. Prefill shapes are listed for both prefill and prefill_paged. `anchors`
// takes batch 2 instead of 4 for prefill when a head dim is above 128 (the same work per call).
// Throws std::invalid_argument for an unknown name, listing the presets.
std::vector<ShapeBucket> preset_shapes(const std::string& name, const Spec&);

// A YAML list of {kind: prefill|prefill_paged|decode, batch: N, seqlen_q: N, seqlen_k: N}, each
// rounded up to its bucket. Throws std::invalid_argument naming the file, the entry (index and
// line) and the field. `filename` is only for messages.
std::vector<ShapeBucket> parse_shapes_yaml(const std::string& text, const std::string& filename);
std::vector<ShapeBucket> load_shapes_file(const std::string& path);

// `--shapes`: a preset name, else a file path.
std::vector<ShapeBucket> resolve_shapes(const std::string& preset_or_file, const Spec&);

// The sweep: buckets whose kind is in `kinds`, duplicates dropped, in a stable order (kind, then
// batch, query and KV length), so every process of a sharded sweep sees the same list.
std::vector<ShapeBucket> sweep_tasks(const std::vector<ShapeBucket>&, const std::vector<KernelKind>& kinds);

// `--shard i/N`: this process takes the tasks whose index % N == i.
struct Shard {
  int index = 0, count = 1;
};
// Throws std::invalid_argument naming --shard, what it got and the expected form.
Shard parse_shard(const std::string& text);
std::vector<ShapeBucket> shard_tasks(const std::vector<ShapeBucket>& tasks, Shard);

}  // namespace attnc
