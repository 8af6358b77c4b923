// The time model of a decode_bw call: the bytes each block reads, how many blocks the SMs hold at
// once, and a per-block rate bounded by its copies in flight over the memory latency, against the
// device's copy bandwidth; plus the combine pass when the call is split. The split heuristic
// (split_kv.cpp) takes its split count from here; the tuner may order candidates by it. The
// constants are the H200's (docs/kernels-decode.md): only their ratios steer the choice.
#pragma once

#include "generator/split_kv.h"

namespace attnc {

struct DecodeModel {
  double bandwidth = 4.3e12;      // bytes/s, device-to-device copy (read + written)
  double latency = 2e-6;          // s, one round trip of a copy under load, issue included
  double combine_launch = 3e-6;   // s, the combine kernel's launch and first wave
  // One SM reads at most this many times its even share of the bandwidth: a wave that puts two
  // blocks on some SMs and one on others ends when the doubled SMs do (B=8 L=131072 with 3
  // splits, 192 blocks: 1109 us measured, 1002 predicted without it; 2026-11-23).
  double sm_share_headroom = 1.25;
};

// Registers a thread of a decode_bw kernel takes, estimated from its ptxas reports (2026-11-23,
// sm_90a: 120 at Dv 40, 136 at 64, 168 at 96, 212 at 128, 232 at 128 with 32-key tiles): about
// 72 + 1.1 Dv, more for wider tiles, at most 255.
int decode_bw_registers(const KernelPlan&);

// Blocks of this kernel one SM holds at once: shared memory, threads and (estimated) registers of
// its 64K. At least 1.
int resident_blocks_per_sm(const KernelPlan&);

// Predicted seconds of one call with `num_splits` parts (decode_bw plans; >= 1).
double predict_decode_seconds(const KernelPlan&, const SplitShape&, int num_splits, const DecodeModel& = {});

// The fewest splits whose predicted time is within 1 % of the best, in 1..min(kMaxSplits, tiles).
int best_decode_splits(const KernelPlan&, const SplitShape&, const DecodeModel& = {});

}  // namespace attnc
