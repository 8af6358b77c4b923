// The tuner's search space: which compiled Configs and per-call split counts to try for one kernel
// kind and shape bucket, and which of them to drop before compiling (they cannot work or would
// clearly spill). Pure host code: enumeration and pruning are tested without a GPU.
#pragma once

#include <string>
#include <vector>

#include "generator/plan/plan.h"
#include "runtime/dispatch/shape_bucket.h"
#include "runtime/dispatch/tuned_choice.h"

namespace attnc {

// Compiled configs to try, the default config (the heuristic baseline) first, then its family's
// space, then the kind's other families' (decode: decode_bw and decode_split), no repeats.
// prefill_sm80: warps {2,4,8} (block_m = 16 * warps), block_n {32,64,128}, stages {2,3}.
// decode_split: warps {1,2,4}, block_n {32,64,128}, stages {2,3,4}.
// decode_bw: warps {2,4,8} (block_m 16), block_n {16,32,64}, stages {2,3,4}.
// prefill_sm90 (where its planner takes the spec: sm_90a, prefill and 16-bit paged prefill): block_m {128,192}
// (warps block_m / 16 + 4), block_n {64,96,128,176}, stages {2}; its default tile also with 3
// stages and without ping-pong.
// A spec's `tuning:` lists narrow each axis (block_m narrows warps through block_m = 16 * warps;
// decode_bw needs 16 in it) and `families` the families.
std::vector<Config> config_space(const Spec&, KernelKind, const std::string& arch);

// Registers per thread the attention main loop needs, roughly: the fp32 O accumulator (Dv / 2),
// the fp32 S tile (block_n / 2), P as 16-bit pairs (block_n / 4), plus addresses, softmax state
// and loop counters. Only good for telling "fits" from "clearly does not".
int estimate_registers(const Spec&, KernelKind, const Config&);
inline constexpr int kMaxRegistersPerThread = 255;
// What a thread of the config's main loop may use: 255, or for prefill_sm90 the consumer
// warpgroups' setmaxnreg budget (240 with two, 160 with three).
int register_limit(const Config&);

// Why `config` is dropped before compiling, or "" to keep it: the planner refuses it (BadConfig,
// NotSupportedYet), its shared memory exceeds `max_smem_optin` (the device's opt-in limit per block;
// <= 0: the arch's), or its register estimate is over register_limit.
std::string prune_reason(const Spec&, KernelKind, const Config&, const std::string& arch, int max_smem_optin);

// Per-call split counts to time for one compiled config on a bucket: decode tries 0 (the
// heuristic), 1, 2, 4, ..., 32 (or the spec's `tuning.splits`, plus 0), keeping those <= kMaxSplits
// that give every split at least one block_n tile of the bucket's KV length. Prefill kernels do
// not split: {0}.
std::vector<int> split_counts(const Spec&, KernelKind, const Config&, const ShapeBucket&);

// One point of the space: a compiled config and the split count its calls pass.
struct SpacePoint {
  TunedChoice choice;
  std::string pruned;     // non-empty: dropped before compiling, and why
  bool baseline = false;  // the default config with num_splits 0 (what runs without tuning)
};

// config_space x split_counts for a bucket, pruned configs kept (with their reason, once, at
// num_splits 0) so the record lists them. The baseline is always first. With the device's SM count
// (num_sms > 0) decode_bw's configs keep only the kModelledSplits split counts the decode time model
// predicts fastest (and 0) and come in the order of their best prediction, so a search cut by its
// budget has timed the likely winners.
inline constexpr int kModelledSplits = 3;
std::vector<SpacePoint> search_space(const Spec&, KernelKind, const ShapeBucket&, const std::string& arch,
                                     int max_smem_optin, int num_sms = 0);

}  // namespace attnc
