#include "generator/split_kv.h"

#include <algorithm>
#include <cmath>

#include "attnc/params/split_combine_shape.h"
#include "generator/decode_model.h"

namespace attnc {
namespace {

// Rows of one split's partials: every (token, q head) of the call.
size_t rows_per_split(const KernelPlan& plan, int total_q) { return size_t(total_q) * plan.spec.num_q_heads; }

// The most parts `workspace_bytes` holds for this call, at least 1.
int fit_num_splits(const KernelPlan& plan, int total_q, int num_splits, size_t workspace_bytes) {
  if (num_splits <= 1) return 1;
  const size_t per_split = attention_workspace_bytes(plan, total_q, 2) / 2;
  if (per_split == 0) return num_splits;
  return static_cast<int>(std::clamp<size_t>(workspace_bytes / per_split, 1, size_t(num_splits)));
}

}  // namespace

long long row_blocks(const KernelPlan& plan, int max_seqlen_q) {
  const long long rows = plan.pack_gqa ? (long long)max_seqlen_q * plan.group : max_seqlen_q;
  return std::max(1LL, (rows + plan.config.block_m - 1) / plan.config.block_m);
}

int choose_num_splits(const KernelPlan& plan, int batch, int max_seqlen_q, int max_seqlen_k, int num_sms) {
  return choose_num_splits(plan, SplitShape{batch, max_seqlen_q, max_seqlen_k, batch, num_sms});
}

int choose_num_splits(const KernelPlan& plan, const SplitShape& call) {
  const int batch = call.batch, max_seqlen_q = call.max_seqlen_q, max_seqlen_k = call.max_seqlen_k;
  const int num_sms = call.num_sms;
  if (!plan.split_kv || max_seqlen_k <= 0 || num_sms <= 0) return 1;
  if (plan.family == "decode_bw") return best_decode_splits(plan, call);
  const int heads = plan.pack_gqa ? plan.kv_heads() : plan.spec.num_q_heads;
  const double tiles = double(batch) * heads * row_blocks(plan, max_seqlen_q);
  const int n_blocks = (max_seqlen_k + plan.config.block_n - 1) / plan.config.block_n;
  // The SMs counted twice, as FlashAttention-2 does (attention-semantics.md §8; it was missing here):
  // one block of a decode kernel per SM cannot keep enough loads in flight (d256 Hkv 8 B16 L8192 on decode_split: 128
  // blocks, 1060 us unsplit, 649 us with 2 splits; the tuner, 2026-11-23).
  const int slots = 2 * num_sms;
  if (tiles >= 0.8 * slots || n_blocks <= 1) return 1;
  const int max_splits = std::min({kMaxSplits, slots, n_blocks});
  auto efficiency = [&](int s) {
    const double waves = tiles * s / slots;
    return waves / std::ceil(waves);
  };
  auto eligible = [&](int s) {  // a split count that leaves the per-split tile count unchanged is useless
    return s == 1 || (n_blocks + s - 1) / s != (n_blocks + s - 2) / (s - 1);
  };
  double best = 0;
  for (int s = 1; s <= max_splits; ++s)
    if (eligible(s)) best = std::max(best, efficiency(s));
  for (int s = 1; s <= max_splits; ++s)
    if (eligible(s) && efficiency(s) >= 0.85 * best) return s;
  return 1;
}

int max_useful_splits(const KernelPlan& plan, int max_seqlen_k) {
  if (!plan.split_kv || max_seqlen_k <= 0) return 1;
  const int n_blocks = (max_seqlen_k + plan.config.block_n - 1) / plan.config.block_n;
  return std::clamp(n_blocks, 1, kMaxSplits);
}

size_t attention_workspace_bytes(const KernelPlan& plan, int total_q, int num_splits) {
  if (num_splits <= 1) return 0;
  const size_t rows = size_t(num_splits) * rows_per_split(plan, total_q);
  return rows * plan.head_dim_v * sizeof(float) + rows * sizeof(float);
}

int decide_num_splits(const KernelPlan& plan, const SplitShape& call, int forced, int preferred,
                      size_t workspace_bytes) {
  if (forced != 0) {  // prepare_attention checks it
    const bool fits = attention_workspace_bytes(plan, call.total_q, forced) <= workspace_bytes;
    if (fits || forced <= 1 || !plan.split_kv || call.max_seqlen_k <= 0) return forced;
    return std::min(forced, max_useful_splits(plan, call.max_seqlen_k));
  }
  if (!plan.split_kv) return 1;
  const int n = preferred > 0 ? preferred : choose_num_splits(plan, call);
  return fit_num_splits(plan, call.total_q, n, workspace_bytes);
}

SplitPartials split_partials(const KernelPlan& plan, void* workspace, int total_q, int num_splits) {
  SplitPartials s;
  s.o = static_cast<float*>(workspace);
  s.lse = s.o + size_t(num_splits) * rows_per_split(plan, total_q) * plan.head_dim_v;
  return s;
}

}  // namespace attnc
