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

// The fraction of their asks the memory serves when the busy SMs ask for `asked` bytes/s in all:
// asked / (1 + (asked / bandwidth)^4)^(1/4) served, shared in proportion.
double served_share(double asked, const DecodeModel& m) {
  const double x = asked / m.bandwidth, x2 = x * x;
  return 1.0 / std::sqrt(std::sqrt(1.0 + x2 * x2));
}

// Seconds for `blocks` blocks of `bytes` each on `sms` SMs: they spread evenly (the first
// blocks % sms SMs take one more), each SM runs its blocks in rounds of at most `slots`, and a busy
// SM with r blocks running asks for block_rate * (1 + (r - 1) * extra_block_gain); the memory serves
// all asks in proportion (served_share()). The rounds every SM runs full are alike and summed in one
// step (the split search asks for up to 128 counts on the dispatcher's path); what is left is at
// most a full and a partial round per group of SMs, stepped from one round's end to the next.
double rounds_seconds(long long blocks, double bytes, long long sms, long long slots, double block_rate,
                      const DecodeModel& m) {
  auto ask = [&](long long running) { return block_rate * (1.0 + double(running - 1) * m.extra_block_gain); };
  struct Group {
    long long sms, blocks, done = 0;  // SMs alike, their blocks each, blocks each has finished
    double left;                      // bytes left of each running block
  };
  const long long each = blocks / sms, more = blocks % sms;
  Group groups[2] = {{more, each + 1, 0, bytes}, {sms - more, each, 0, bytes}};
  const long long full = each / slots;  // rounds every SM runs with all its slots busy
  double seconds = 0;
  if (full > 0) {
    const double asked = double(sms) * ask(slots);
    seconds = double(full) * bytes * double(slots) / (served_share(asked, m) * ask(slots));
    for (Group& g : groups) g.done = full * slots;
  }
  for (;;) {
    double asked = 0, rate[2] = {0, 0};
    long long running[2] = {0, 0};
    for (int i = 0; i < 2; ++i) {
      running[i] = groups[i].sms > 0 ? std::min(slots, groups[i].blocks - groups[i].done) : 0;
      if (running[i] > 0) asked += double(groups[i].sms) * ask(running[i]);
    }
    if (asked == 0) return seconds;
    const double share = served_share(asked, m);
    double step = 1e30;
    for (int i = 0; i < 2; ++i)
      if (running[i] > 0) {
        rate[i] = share * ask(running[i]) / double(running[i]);
        step = std::min(step, groups[i].left / rate[i]);
      }
    seconds += step;
    for (int i = 0; i < 2; ++i)
      if (running[i] > 0) {
        groups[i].left -= rate[i] * step;
        if (groups[i].left <= bytes * 1e-9) {
          groups[i].done += running[i];
          groups[i].left = bytes;
        }
      }
  }
}

// The model with the SM's resident blocks already counted (`slots`, as rounds_seconds takes them).
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
  // Each warp reads its own run of the block's tiles (counts differ by one): the block ends with
  // the longest (B1 L8192: 14 splits, 37 tiles over 4 warps, 5 % slower than 12 or 16).
  const long long warps = std::max(1, c.warps);
  const double block_bytes = double(ceil_div(tiles_per_block, warps) * warps) * c.block_n * key_bytes;
  // A block keeps (stages - 1) tiles of each busy warp in flight.
  const double in_flight = double(std::min(warps, tiles_per_block)) * (c.stages - 1) * c.block_n * key_bytes;
  const double block_rate = in_flight / (m.latency + in_flight / m.block_peak);
  const long long sms = std::max(1, call.num_sms), total = blocks * num_splits;
  double seconds = m.call_overhead + rounds_seconds(total, block_bytes, sms, slots, block_rate, m) +
                   double(ceil_div(total, sms)) * m.block_start;  // the busiest SM's blocks each start
  if (num_splits > 1) {  // partials written and read back (a part past its request's keys is skipped), the output written
    const double rows_each = double(std::max(1, call.max_seqlen_q)) * plan.spec.num_q_heads;
    const double parts = requests * num_splits + (call.batch - requests);
    seconds += m.combine_launch + rows_each * plan.head_dim_v * (8.0 * parts + 2.0 * call.batch) / m.bandwidth;
  }
  return seconds;
}

long long slots_of(const KernelPlan& plan, const DecodeModel& m) {
  return std::max(1, std::min(resident_blocks_per_sm(plan), m.blocks_per_sm_counted));
}

}  // namespace

double predict_decode_seconds(const KernelPlan& plan, const SplitShape& call, int num_splits, const DecodeModel& m) {
  return predict_with_slots(plan, call, num_splits, slots_of(plan, m), m);
}

int best_decode_splits(const KernelPlan& plan, const SplitShape& call, const DecodeModel& m) {
  if (call.max_seqlen_k <= 0 || call.num_sms <= 0 || call.batch <= 0) return 1;
  const long long tiles = ceil_div(call.max_seqlen_k, plan.config.block_n);
  const int most = int(std::min<long long>({kMaxSplits, tiles}));
  const long long slots = slots_of(plan, m);
  double t[kMaxSplits + 1];
  double best = 1e30;
  // A count that leaves the tiles per part as they were only adds blocks: never faster, not timed.
  auto useful = [&](int s) { return s == 1 || ceil_div(tiles, s) != ceil_div(tiles, s - 1); };
  for (int s = 1; s <= most; ++s)
    if (useful(s)) best = std::min(best, t[s] = predict_with_slots(plan, call, s, slots, m));
  for (int s = 1; s <= most; ++s)
    if (useful(s) && t[s] <= 1.01 * best) return s;
  return 1;
}

}  // namespace attnc
