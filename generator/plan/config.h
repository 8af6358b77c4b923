// A Config is what the tuner may change without changing the result and what is compiled in:
// template family, tiles, warps, pipeline stages, and for prefill_sm90 the ping-pong of its
// consumer warpgroups and whether its blocks are persistent. The split-KV count is per call
// (generator/split_kv.h; a tuning record keeps it beside the Config as TunedChoice::num_splits).
#pragma once

#include <string>

namespace attnc {

struct Config {
  std::string family = "prefill_sm80";
  int block_m = 128;
  int block_n = 64;
  int warps = 8;
  int stages = 2;
  bool pingpong = true;  // prefill_sm90: consumer warpgroups take turns issuing their GEMMs
  // prefill_sm90: one block per SM walks several (q tile, head, request) items, loading the next
  // item's Q and K/V while it stores the last one's output (docs/kernels-block-sparse.md).
  bool persistent = false;
  // prefill_sm90, block-sparse: the local band in key tiles of block_n, the vertical blocks in tiles
  // of one sparse block (block_n / 2) filling half a stage (docs/kernels-block-sparse.md).
  bool mixed_tiles = false;
  // prefill_sm90, block-sparse: every key tile of block_n is two sparse blocks (block_n / 2 each)
  // of the visible list, adjacent or not, in two TMA boxes (docs/kernels-block-sparse.md).
  bool paired_tiles = false;
  // prefill_sm90, paged 16-bit caches: K/V tiles gathered by the producer warpgroup's cp.async
  // instead of TMA boxes (small pages make many small boxes; docs/kernels-prefill-sm90.md).
  bool paged_gather = false;
  // prefill_sm90, int8_qkv (contiguous, or paged: its pages gathered): V widened to fp16 once per
  // call by the module's `<entry>_widen_v` into the dispatcher's workspace, read by TMA as int8_qk
  // reads its 16-bit V, instead of per (query block, head) by the producer (docs/kernels-int8.md).
  bool v_prewiden = false;

  // "m128n64w8s2" (+ "np" for prefill_sm90 without ping-pong, + "ps" persistent, + "mx" mixed
  // tiles, + "pt" paired tiles, + "pg" paged gather, + "vw" V prewidened): short, stable, used in
  // kernel names. JSON names pingpong, persistent, mixed_tiles, paired_tiles, paged_gather and
  // v_prewiden only for prefill_sm90
  // (all but pingpong only when set), so other families' configs (and their records) read as before.
  std::string short_name() const;
  std::string to_json() const;
  // Fields present in `json` override `base`; throws std::invalid_argument naming the field.
  static Config from_json(const std::string& json, const Config& base);
  static Config from_json(const std::string& json);
  bool operator==(const Config&) const = default;
};

}  // namespace attnc
