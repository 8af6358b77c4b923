#include "generator/decode_model.h"

#include <algorithm>
#include <cmath>

#include "attnc/params/split_combine_shape.h"

namespace attnc {
namespace {

// Per SM, from the CUDA programming guide's per-arch tables; each block also reserves 1 KB.
int smem_per_sm(const ArchInfo& a) { return a.major == 9 ? 228 * 1024 : a.minor == 0 ? 164 * 1024 : 100 * 1024; }
int threads_per_sm(const ArchInfo& a) { return a.major == 8 && a.minor != 0 ? 1536 : 2048; }

long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }

}  // namespace

int decode_bw_registers(const KernelPlan& plan) {
  return std::min(255, 72 + plan.head_dim_v * 9 / 8 + (plan.config.block_n - 16) * 5 / 4);
}

int resident_blocks_per_sm(const KernelPlan& plan) {
  const ArchInfo a = arch_info(plan.arch);
  const int by_smem = smem_per_sm(a) / (plan.smem_bytes + 1024);
  const int by_threads = threads_per_sm(a) / std::max(1, plan.threads);
  const int regs = (decode_bw_registers(plan) + 7) / 8 * 8;  // allocated in steps of 8 a thread
  const int by_registers = 65536 / (regs * std::max(1, plan.threads));
  return std::max(1, std::min({by_smem, by_threads, by_registers, 32}));
}

namespace {

// The model with the SM's resident blocks already counted (the split search asks for up to 128
// counts per call, on the dispatcher's path: the waves are summed in closed form, not looped).
double predict_with_slots(const KernelPlan& plan, const SplitShape& call, int num_splits, long long slots,
                          const DecodeModel& m) {
  const Config& c = plan.config;
  // One key's K and V row, one kv head (fp8 and int8 caches: a byte per element; int8_qk's V 16-bit).
  const double key_bytes = double(kv_cache_elem_bytes(plan.spec)) * plan.head_dim +
                           double(kv_cache_v_elem_bytes(plan.spec)) * plan.head_dim_v;
  // A ragged batch (seqlen_k_sum known) counts as the full-length requests its keys would fill:
  // decode_bw sizes every request's parts from the longest (block_range_even_parts), so a short
  // request's keys take few parts and its other blocks exit at once.
  const double requests = call.seqlen_k_sum > 0 && call.max_seqlen_k > 0
                              ? std::min<double>(call.batch, double(call.seqlen_k_sum) / call.max_seqlen_k)
                              : call.batch;
  const long long blocks = std::max(1LL, (long long)std::ceil(requests * plan.kv_heads() * row_blocks(plan, call.max_seqlen_q)));
  const long long tiles = ceil_div(call.max_seqlen_k, c.block_n);
  const long long tiles_per_block = ceil_div(tiles, num_splits);
  const double block_bytes = double(tiles_per_block) * c.block_n * key_bytes;
  // A block keeps (stages - 1) tiles of each busy warp in flight.
  const double in_flight = double(std::min<long long>(c.warps, tiles_per_block)) * (c.stages - 1) * c.block_n * key_bytes;
  const double block_rate = in_flight / m.latency;
  // Waves of `slots` blocks, the last one partly full: each wave takes a block's bytes at the
  // per-block rate, bounded by the device bandwidth shared among the wave's blocks.
  // And the SM holding the most of the wave's blocks reads them at most at its share's headroom.
  const double sm_rate = m.sm_share_headroom * m.bandwidth / std::max(1, call.num_sms);
  auto wave_seconds = [&](long long active) {
    const long long per_sm = (active + call.num_sms - 1) / std::max(1, call.num_sms);
    return std::max(block_bytes / std::min(m.bandwidth / double(active), block_rate), per_sm * block_bytes / sm_rate);
  };
  const long long total = blocks * num_splits;
  double seconds = double(total / slots) * wave_seconds(slots);
  if (total % slots) seconds += wave_seconds(total % slots);
  if (num_splits > 1) {  // partials written and read back, the output written
    const double rows = double(call.batch) * std::max(1, call.max_seqlen_q) * plan.spec.num_q_heads;
    seconds += m.combine_launch + rows * plan.head_dim_v * (8.0 * num_splits + 2.0) / m.bandwidth;
  }
  return seconds;
}

long long slots_of(const KernelPlan& plan, const SplitShape& call) {
  return std::max(1LL, (long long)call.num_sms * resident_blocks_per_sm(plan));
}

}  // namespace

double predict_decode_seconds(const KernelPlan& plan, const SplitShape& call, int num_splits, const DecodeModel& m) {
  return predict_with_slots(plan, call, num_splits, slots_of(plan, call), m);
}

int best_decode_splits(const KernelPlan& plan, const SplitShape& call, const DecodeModel& m) {
  if (call.max_seqlen_k <= 0 || call.num_sms <= 0 || call.batch <= 0) return 1;
  const long long tiles = ceil_div(call.max_seqlen_k, plan.config.block_n);
  const int most = int(std::min<long long>({kMaxSplits, tiles}));
  const long long slots = slots_of(plan, call);
  double t[kMaxSplits + 1];
  double best = 1e30;
  for (int s = 1; s <= most; ++s) best = std::min(best, t[s] = predict_with_slots(plan, call, s, slots, m));
  for (int s = 1; s <= most; ++s)
    if (t[s] <= 1.01 * best) return s;
  return 1;
}

}  // namespace attnc
