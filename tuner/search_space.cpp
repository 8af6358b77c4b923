#include "tuner/search_space.h"

#include <algorithm>

#include "attnc/params/split_combine_shape.h"
#include "generator/decode_model.h"
#include "generator/plan/plan_attention.h"
#include "generator/plan/plan_mla_decode.h"
#include "generator/plan/plan_prefill_sm90.h"

namespace attnc {
namespace {

// The spec's `tuning:` list when it has one (it may name values outside the default space; the
// planner and pruning judge them), else the family's default values.
std::vector<int> narrow(const std::vector<int>& all, const std::vector<int>& wanted) {
  if (wanted.empty()) return all;
  return wanted;
}

bool allowed_family(const Spec& s, const std::string& family) {
  return s.tuning.families.empty() ||
         std::find(s.tuning.families.begin(), s.tuning.families.end(), family) != s.tuning.families.end();
}

int round_up(int v, int m) { return (v + m - 1) / m * m; }

// The axes of one family; a spec's `tuning:` lists narrow them. block_m is 16 * warps in the sm80
// families (so a block_m list narrows warps) and 16 in decode_bw (a list without 16 drops it).
std::vector<Config> family_space(const Spec& s, KernelKind kind, const Config& base, const std::string& family) {
  const bool decode = kind == KernelKind::decode, bw = family == "decode_bw";
  std::vector<int> warps = narrow(decode && !bw ? std::vector<int>{1, 2, 4} : std::vector<int>{2, 4, 8}, s.tuning.warps);
  if (!s.tuning.block_m.empty()) {
    std::vector<int> w;
    if (bw) {
      if (std::count(s.tuning.block_m.begin(), s.tuning.block_m.end(), 16)) w = warps;
    } else {
      for (int m : s.tuning.block_m)
        if (m % 16 == 0 && (s.tuning.warps.empty() || std::count(warps.begin(), warps.end(), m / 16)))
          w.push_back(m / 16);
    }
    warps = w;
  }
  const std::vector<int> block_n = narrow(bw ? std::vector<int>{16, 32, 64} : std::vector<int>{32, 64, 128}, s.tuning.block_n);
  const std::vector<int> stages = narrow(decode ? std::vector<int>{2, 3, 4} : std::vector<int>{2, 3}, s.tuning.stages);
  std::vector<Config> out;
  for (int w : warps)
    for (int n : block_n)
      for (int st : stages) {
        Config c = base;
        c.family = family;
        // prefill_sm90's own fields, which a prefill_sm90 baseline carries: other families refuse them
        c.persistent = c.mixed_tiles = c.paired_tiles = c.paged_gather = c.v_prewiden = false;
        c.warps = w;
        c.block_m = bw ? 16 : 16 * w;
        c.block_n = n;
        c.stages = st;
        out.push_back(c);
      }
  return out;
}

// prefill_sm90's axes where its planner takes the spec: 2 or 3 consumer warpgroups, block_n, and
// the default tile again with 3 stages, without ping-pong, with persistence or the paged gather flipped,
// int8_qkv's V widened by the producer (the planner and pruning drop what cannot fit).
std::vector<Config> sm90_space(const Spec& s, KernelKind kind, const std::string& arch) {
  std::vector<Config> out;
  if (!prefill_sm90_refusal(s, kind, arch).empty()) return out;
  const Config d = default_prefill_sm90_config(s, kind);
  for (int m : narrow({128, 192}, s.tuning.block_m))
    for (int n : narrow({64, 96, 128, 176}, s.tuning.block_n))
      for (int st : narrow({2}, s.tuning.stages)) {
        Config c = d;
        c.block_m = m;
        c.warps = m / 16 + 4;
        c.block_n = n;
        c.stages = st;
        c.paired_tiles = d.paired_tiles && n == d.block_n;  // other widths: tiles of one sparse block
        out.push_back(c);
      }
  if (s.tuning.block_m.empty() && s.tuning.block_n.empty() && s.tuning.stages.empty()) {
    Config c = d;
    c.pingpong = false;
    out.push_back(c);
    c = d;
    c.stages = 3;
    out.push_back(c);
    // persistent blocks: contiguous K/V only, and not int8's (the planner refuses it unverified)
    if (kind == KernelKind::prefill && s.quant == QuantMode::none) {
      c = d;
      c.persistent = !d.persistent;
      out.push_back(c);
    }
    // paged 16-bit K/V: the cp.async gather flipped (the default gathers where page boxes would hold
    // 16 rows; the call's page size may differ from the spec's)
    if (kind == KernelKind::prefill_paged && s.quant == QuantMode::none && !s.sparse.enabled) {
      c = d;
      c.paged_gather = !d.paged_gather;
      out.push_back(c);
    }
    // int8_qkv: V widened by the producer (its default tiles) against once per call (the tiles
    // above; the measurement gives it the workspace, as the dispatcher's reserve() does), whichever
    // the default is (paged: kPagedVPrewidenIsDefault).
    if (d.v_prewiden) out.push_back(default_prefill_sm90_config(s, kind, VWiden::producer));
    else if (s.quant == QuantMode::int8_qkv)
      out.push_back(default_prefill_sm90_config(s, kind, VWiden::once_per_call));
    // Block-sparse: paired tiles (two sparse blocks of the visible list per tile) at the default's
    // other settings, where the default does not pair already (mixed tiles, measured slower, are
    // left to an explicit config: docs/kernels-block-sparse.md).
    if (kind == KernelKind::prefill && s.quant == QuantMode::none && s.sparse.enabled && !d.paired_tiles &&
        s.sparse.block_size % 16 == 0 && 2 * s.sparse.block_size <= 128) {
      c = d;
      c.block_n = 2 * s.sparse.block_size;
      c.paired_tiles = true;
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace

std::vector<Config> config_space(const Spec& s, KernelKind kind, const std::string& arch) {
  const Config base = default_config(s, kind, arch);
  std::vector<Config> out{base};
  std::vector<std::string> families = attention_families(kind);  // the baseline's family first
  std::stable_partition(families.begin(), families.end(), [&](const std::string& f) { return f == base.family; });
  for (const std::string& family : families) {
    if (!allowed_family(s, family)) continue;
    const std::vector<Config> space =
        family == kPrefillSm90 ? sm90_space(s, kind, arch) : family_space(s, kind, base, family);
    for (const Config& c : space)
      if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  return out;
}

int estimate_registers(const Spec& s, KernelKind, const Config& c) {
  // mla_decode: each consumer holds half of the 512-wide O (128), a 32-key S (16) and addresses.
  if (c.family == kMlaDecode) return 128 + 16 + 48;
  const int dv = round_up(s.head_dim_v, 16);
  // prefill_sm90's operands come from shared memory through descriptors, not per-thread addresses.
  const int rest = c.family == kPrefillSm90 ? 24 : 48;
  return dv / 2 + c.block_n / 2 + c.block_n / 4 + rest;
}

int register_limit(const Config& c) {
  if (c.family == kPrefillSm90) return c.block_m == 128 ? 240 : 160;  // what setmaxnreg gives a consumer
  if (c.family == kMlaDecode) return 240;
  return kMaxRegistersPerThread;
}

std::string prune_reason(const Spec& s, KernelKind kind, const Config& c, const std::string& arch, int max_smem_optin) {
  KernelPlan plan;
  try {
    plan = plan_kernel(s, kind, c, arch);
  } catch (const std::exception& e) {  // BadConfig, NotSupportedYet
    return e.what();
  }
  if (max_smem_optin > 0 && plan.smem_bytes > max_smem_optin)
    return c.short_name() + " needs " + std::to_string(plan.smem_bytes) +
           " bytes of shared memory; the device allows " + std::to_string(max_smem_optin) + " per block";
  const int regs = estimate_registers(s, kind, c);
  if (regs > register_limit(c))
    return c.short_name() + " needs about " + std::to_string(regs) + " registers per thread (limit " +
           std::to_string(register_limit(c)) + "): it would spill";
  return "";
}

std::vector<int> split_counts(const Spec& s, KernelKind kind, const Config& c, const ShapeBucket& b) {
  if (kind != KernelKind::decode) return {0};
  std::vector<int> wanted = s.tuning.splits.empty() ? std::vector<int>{1, 2, 4, 8, 16, 32} : s.tuning.splits;
  std::sort(wanted.begin(), wanted.end());
  const long long tiles = (static_cast<long long>(b.seqlen_k) + c.block_n - 1) / c.block_n;
  std::vector<int> out{0};
  for (int n : wanted)
    if (n >= 1 && n <= kMaxSplits && n <= tiles && std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  return out;
}

namespace {

// decode_bw: the `keep` split counts of split_counts the time model (decode_model.h) predicts
// fastest, plus 0 (the heuristic's); other families, or the SM count unknown: split_counts.
// best_seconds: the config's best prediction (0: not modelled), which orders the configs.
std::vector<int> modelled_split_counts(const Spec& s, const Config& c, const ShapeBucket& b, const std::string& arch,
                                       int num_sms, int keep, double* best_seconds) {
  std::vector<int> counts = split_counts(s, KernelKind::decode, c, b);
  *best_seconds = 0;
  if (c.family != "decode_bw" || num_sms <= 0) return counts;
  const KernelPlan plan = plan_kernel(s, KernelKind::decode, c, arch);
  const Problem p = b.representative();
  const SplitShape call{p.batch, p.max_seqlen_q, p.max_seqlen_k, p.batch * p.max_seqlen_q, num_sms};
  std::vector<std::pair<double, int>> ranked;
  for (int n : counts)
    if (n > 0) ranked.push_back({predict_decode_seconds(plan, call, n), n});
  std::stable_sort(ranked.begin(), ranked.end());
  std::vector<int> out{0};
  for (int i = 0; i < int(ranked.size()) && i < keep; ++i) out.push_back(ranked[i].second);
  const int heuristic = best_decode_splits(plan, call);
  *best_seconds = predict_decode_seconds(plan, call, heuristic);
  for (const auto& r : ranked) *best_seconds = std::min(*best_seconds, r.first);
  return out;
}

}  // namespace

std::vector<SpacePoint> search_space(const Spec& s, KernelKind kind, const ShapeBucket& b, const std::string& arch,
                                     int max_smem_optin, int num_sms) {
  std::vector<SpacePoint> out;
  std::vector<std::pair<double, std::vector<SpacePoint>>> ranked;  // decode_bw configs by predicted time
  bool first = true;
  for (const Config& c : config_space(s, kind, arch)) {
    const std::string why = prune_reason(s, kind, c, arch, max_smem_optin);
    std::vector<SpacePoint> points;
    double predicted = 0;
    if (!why.empty()) {
      points.push_back({{c, 0}, why, first});
    } else if (kind == KernelKind::decode) {
      for (int n : modelled_split_counts(s, c, b, arch, num_sms, kModelledSplits, &predicted))
        points.push_back({{c, n}, "", first && n == 0});
    } else {
      for (int n : split_counts(s, kind, c, b)) points.push_back({{c, n}, "", first && n == 0});
    }
    if (first || predicted <= 0) {
      out.insert(out.end(), points.begin(), points.end());
    } else {
      ranked.push_back({predicted, std::move(points)});
    }
    first = false;
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  // The baseline, unmodelled configs (decode_split, pruned ones), then decode_bw's best-predicted first.
  for (auto& r : ranked) out.insert(out.end(), r.second.begin(), r.second.end());
  return out;
}

}  // namespace attnc
