// The time model of a decode_bw call: its blocks spread evenly over the SMs (some take one more),
// each SM running its blocks in rounds of at most two; every busy SM asks for its blocks' rate (the
// copies in flight over the latency), and the memory serves the sum up to the device's bandwidth;
// plus a start per block, and the combine pass when the call is split. Whole rounds on every SM are
// what the split count must hit: a last round of one block on some SMs runs at one block's rate
// while the rest of the GPU idles. The split heuristic (split_kv.cpp) takes its split count from
// here; the tuner may order candidates by it. The constants are the H200's
// (docs/kernels-decode.md): only their ratios steer the choice.
#pragma once

#include "generator/split_kv.h"

namespace attnc {

struct DecodeModel {
  // bytes/s the reads approach as more blocks ask: asks summing to A bytes/s are served at
  // A / (1 + (A / bandwidth)^4)^(1/4) (a queue's smooth knee; a hard min(A, bandwidth) fits worse)
  double bandwidth = 4.32e12;
  double latency = 0.85e-6;       // s, a copy's round trip under load beyond its own transfer
  double combine_launch = 1.3e-6; // s, the combine kernel's launch beyond the main kernel's end
  // Fitted with the constants above on the H200 sweep of decode_bw's default config over B x L x
  // split counts (docs/kernels-decode.md, "Split counts measured over B x L"): the choice is within
  // 1 % of the measured best on all 22 shapes; times at the best counts are 0.84-1.17x measured.
  double block_peak = 113e9;      // bytes/s one block reads at most, whatever it keeps in flight
  double extra_block_gain = 0.17; // a second block on an SM adds this much of one block's rate
  double block_start = 2.3e-6;    // s per block of the busiest SM: Q, the first tiles' latency, the merge
  double call_overhead = 8.4e-6;  // s, every call: launch, ramp, the L2's dirty lines of the kernel before
  // Blocks an SM is counted to run at once: a third resident block adds no bandwidth (d64, 3 fit:
  // 384 blocks 91 us against 264 blocks 87 us at B1 L131072) and the model runs it in a later round.
  int blocks_per_sm_counted = 2;
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
