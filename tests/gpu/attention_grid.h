// The attention correctness grid: which kernels (spec x kind) and which calls (lengths, cache
// layout, page-table form, page size, splits, ...) gpu_attention_grid_test runs. Decode cases run
// on the arch's default family (decode_bw on sm_90) and again on decode_split (`_decode_split`);
// prefill cases (contiguous, and paged over a 16-bit cache) on prefill_sm80 and again on
// prefill_sm90 (`sm90_`, skipped off sm_90a), contiguous prefill a third time on prefill_sm90 with
// persistent blocks (`sm90p_`, where the output tile fits beside the others), paged 16-bit prefill a
// third time on prefill_sm90 with the cp.async gather (`sm90g_`, Config paged_gather; its `sm90_`
// twin then reads by TMA boxes).
// Not the full cartesian product: every value of every axis appears, and the pairs that interact
// (layout x form, layout x page size, form x column offset, decode variant x splits, features x
// kinds) are covered by rotating the runtime axes over the cases; attention_grid_coverage_test
// checks that.
// The float64 reference dominates the grid's time, so lengths are ragged but bounded.
#pragma once

#include <string>
#include <vector>

#include "generator/plan/plan.h"
#include "generator/plan/plan_attention.h"
#include "generator/plan/plan_prefill_sm90.h"
#include "check/attention_check.h"

namespace attnc::grid {

struct GridCase {
  std::string name;   // unique, a valid gtest name
  Spec spec;
  KernelKind kind = KernelKind::prefill;
  AttentionCase call;
  bool decode_multi = false;  // decode with cu_query_lens
  std::string family;         // "": the arch's default config; else that family's default tiles
  bool persistent = false;    // prefill_sm90 with persistent blocks
  bool paged_gather = false;  // prefill_sm90 paged, K/V gathered by cp.async
  bool v_prewiden = false;    // prefill_sm90 int8_qkv (contiguous or paged), V widened once per call
};

// The config a case compiles: the arch's default, or the named family's (decode_split twins of the
// decode cases keep that family tested where decode_bw is the default; prefill names both of its).
inline Config grid_config(const GridCase& c, const std::string& arch) {
  Config config = c.family.empty() ? default_config(c.spec, c.kind, arch)
                                   : default_family_config(c.spec, c.kind, arch, c.family);
  if (c.persistent) config.persistent = true;
  // prefill_sm90's paged 16-bit twins name their K/V path: `sm90_` TMA boxes, `sm90g_` the gather
  // (the default gathers at 16-row page boxes, so `sm90_` would otherwise gather too).
  if (c.family == "prefill_sm90" && c.kind == KernelKind::prefill_paged && c.spec.quant == QuantMode::none)
    config.paged_gather = c.paged_gather;
  // prefill_sm90's int8_qkv twins (contiguous and paged) name their V path: `sm90_` widened by the
  // producer, `sm90w_` once per call into the workspace (v_prewiden), whichever is the default.
  if (c.family == "prefill_sm90" && c.spec.quant == QuantMode::int8_qkv)
    config = default_prefill_sm90_config(c.spec, c.kind, c.v_prewiden ? VWiden::once_per_call : VWiden::producer);
  return config;
}

// One spec and the kinds it is compiled as.
struct GridKernel {
  std::string tag;
  Spec spec;
  std::vector<KernelKind> kinds;
};

inline const MaskSpec kCausal{MaskKind::causal, -1, -1};
inline const MaskSpec kNoMask{MaskKind::none, -1, -1};
inline const MaskSpec kWindow256{MaskKind::sliding_window, 255, 0};   // sliding_window 256
inline const MaskSpec kEncoderWindow{MaskKind::sliding_window, 127, 127};

inline Spec grid_spec(DType t, int d, int dv, int hq, int hkv, MaskSpec mask, LseSpec lse) {
  Spec s;
  s.name = "grid";
  s.dtype = t;
  s.head_dim = d;
  s.head_dim_v = dv;
  s.num_q_heads = hq;
  s.num_kv_heads = hkv;
  s.mask = mask;
  s.lse = lse;
  s.kernels.decode = true;
  return s;
}

inline std::vector<GridKernel> grid_kernels() {
  using K = KernelKind;
  const std::vector<K> all = {K::prefill, K::prefill_paged, K::decode};
  const LseSpec none{LseLayout::none, LseBase::e}, hm_e{LseLayout::head_major, LseBase::e},
      hm_2{LseLayout::head_major, LseBase::two}, tm_e{LseLayout::token_major, LseBase::e},
      tm_2{LseLayout::token_major, LseBase::two};
  std::vector<GridKernel> out;
  auto add = [&](std::string tag, Spec s, std::vector<K> kinds, auto&& tweak) {
    tweak(s);
    out.push_back({std::move(tag), std::move(s), std::move(kinds)});
  };
  auto plain = [](Spec&) {};
  // One spec per head dim, compiled in every kind; the features rotate over them.
  add("d40g7", grid_spec(DType::bf16, 40, 40, 7, 1, kCausal, none), all, plain);
  add("d64g8_win_sinks", grid_spec(DType::bf16, 64, 64, 16, 2, kWindow256, tm_e), all, [](Spec& s) { s.sinks = true; });
  add("d72g1_fp16", grid_spec(DType::fp16, 72, 72, 4, 4, kCausal, hm_2), all, plain);
  add("d80g4_alibi", grid_spec(DType::bf16, 80, 80, 8, 2, kCausal, tm_e), all, [](Spec& s) { s.alibi = Alibi::linear; });
  add("d96g8_sqrtalibi_fp16", grid_spec(DType::fp16, 96, 96, 16, 2, kCausal, hm_e), all,
      [](Spec& s) { s.alibi = Alibi::sqrt; });
  add("d128g4", grid_spec(DType::bf16, 128, 128, 8, 2, kCausal, hm_e), all, plain);
  add("d192v128g1", grid_spec(DType::bf16, 192, 128, 4, 4, kCausal, tm_2), all, plain);
  add("d256g8_win_softcap", grid_spec(DType::bf16, 256, 256, 16, 2, kWindow256, tm_e), all,
      [](Spec& s) { s.softcap = 50.f; });
  // Feature combinations the rotation above does not reach.
  add("d128g7_nomask_softcap_sinks_fp16", grid_spec(DType::fp16, 128, 128, 7, 1, kNoMask, hm_2), all, [](Spec& s) {
    s.softcap = 50.f;
    s.sinks = true;
  });
  add("d64g1_encoder", grid_spec(DType::bf16, 64, 64, 4, 4, kEncoderWindow, none), {K::prefill}, plain);
  add("d256g4_sinks_fp16", grid_spec(DType::fp16, 256, 256, 8, 2, kCausal, hm_e), {K::decode},
      [](Spec& s) { s.sinks = true; });
  add("d80g7_win_sqrtalibi_sinks", grid_spec(DType::bf16, 80, 80, 7, 1, kWindow256, tm_2),
      {K::prefill_paged, K::decode}, [](Spec& s) {
        s.alibi = Alibi::sqrt;
        s.sinks = true;
      });
  return out;
}

inline GridKernel grid_kernel(const std::string& tag) {
  for (GridKernel& k : grid_kernels())
    if (k.tag == tag) return k;
  return {};
}

// Runtime axes, rotated over the cases of each kind.
inline const std::vector<int> kPageSizes = {16, 32, 64, 48};
inline const std::vector<int> kSplits = {1, 3, 16, 0};  // 0: the heuristic

struct LengthSet {
  std::vector<int> q, k;
};
// Contiguous prefill: q = 1, kv longer and shorter than q (whole rows masked), a long request.
inline const std::vector<LengthSet> kPrefillLengths = {
    {{1, 17, 130, 333}, {1, 40, 500, 333}},
    {{300, 64, 1}, {100, 64, 2000}},
    {{513, 7, 90}, {1200, 7, 90}},
};
// Paged prefill (chunked prefill: kv = cached context + the new tokens).
inline const std::vector<LengthSet> kPagedLengths = {
    {{1, 17, 130, 200}, {700, 17, 1500, 200}},
    {{64, 333}, {2100, 333}},
    {{7, 1, 250}, {7, 3000, 900}},
};
// Decode, one token per request: page-boundary lengths, long contexts, an empty one.
inline const std::vector<std::vector<int>> kDecodeLengths = {
    {1, 15, 16, 17, 300, 1023, 2999, 64},
    {3000, 2048, 777, 5},
    {2500, 0, 33, 128, 47},
};
// Decode with cu_query_lens (speculative decode): q = 2 on k = 1 leaves its first row empty.
inline const std::vector<LengthSet> kDecodeMultiLengths = {
    {{1, 2, 4, 3}, {5, 700, 2047, 3000}},
    {{2, 2, 2}, {1, 1500, 2}},
};

inline bool block_table_form(PageTableForm f) { return f != PageTableForm::flashinfer; }

inline std::string paging_name(const AttentionCase& c) {
  std::string n = std::string("_") + to_string(c.layout) + "_" + to_string(c.page_table) + "_bs" +
                  std::to_string(c.page_size);
  if (c.column_offset) n += "_col" + std::to_string(c.column_offset);
  return n;
}

// The i-th paged call's layout, form, page size and offsets: consecutive runs of 12 cover every
// layout x form pair, and the page size shifts by one every 12 so it meets every layout too.
inline void rotate_paging(AttentionCase& c, int i) {
  c.layout = all_kv_cache_layouts()[i % 4];
  c.page_table = all_page_table_forms()[(i / 4) % 3];
  c.page_size = kPageSizes[(i + i / 12) % 4];
  c.column_offset = block_table_form(c.page_table) && (i / 3) % 2 ? 5 : 0;
  c.indptr_offset = 1 + i % 5;
}

// Every other multiple of 8 up to 256 (the kernels above take 40, 64, 72, 80, 96, 128, 192/128 and
// 256): a small contiguous prefill and a split paged decode per head dim, so "any multiple of 8" is
// a tested claim. Layouts, page-table forms and dtypes rotate with the head dim.
inline std::vector<GridCase> head_dim_sweep() {
  static const std::vector<KvCacheLayout> layouts = {KvCacheLayout::vllm, KvCacheLayout::fork_hnd,
                                                     KvCacheLayout::flashinfer_nhd, KvCacheLayout::flashinfer_hnd};
  std::vector<GridCase> out;
  int i = 0;
  for (int d = 8; d <= 256; d += 8) {
    if (d == 40 || d == 64 || d == 72 || d == 80 || d == 96 || d == 128 || d == 256) continue;
    const DType t = i % 2 ? DType::fp16 : DType::bf16;
    GridCase p;
    p.spec = grid_spec(t, d, d, 4, 2, kCausal, {LseLayout::head_major, LseBase::e});
    p.kind = KernelKind::prefill;
    p.call.seqlens_q = {1, 37, 130};
    p.call.seqlens_k = {1, 37, 200};
    p.name = "sweep_prefill_d" + std::to_string(d);
    out.push_back(p);
    GridCase g;
    g.spec = grid_spec(t, d, d, 8, 2, kCausal, {LseLayout::token_major, LseBase::two});
    g.kind = KernelKind::decode;
    g.call.layout = layouts[i % layouts.size()];
    g.call.page_table = layouts[i % layouts.size()] == KvCacheLayout::vllm ? PageTableForm::seqused_k
                                                                           : PageTableForm::flashinfer;
    g.call.page_size = 32;
    g.call.num_blocks = 4096;
    g.call.seqlens_k = {1, 300, 777};
    g.call.num_splits = 3;
    g.name = "sweep_decode_d" + std::to_string(d);
    out.push_back(g);
    ++i;
  }
  return out;
}

// The i-th decode call: one token per request (plain decode) or several (cu_query_lens), its lengths
// and split count rotated by i.
inline void set_decode_call(GridCase& c, bool multi, int i) {
  c.decode_multi = multi;
  if (multi) {
    const LengthSet& l = kDecodeMultiLengths[i % kDecodeMultiLengths.size()];
    c.call.seqlens_q = l.q;
    c.call.seqlens_k = l.k;
  } else {
    c.call.seqlens_k = kDecodeLengths[i % kDecodeLengths.size()];
  }
  c.call.num_splits = kSplits[i % kSplits.size()];
}

inline std::string splits_name(const AttentionCase& c) {
  return c.num_splits ? "_s" + std::to_string(c.num_splits) : "_sauto";
}

// fp8 KV caches (e4m3 and e5m2) read by paged prefill and both decode families: per-tensor scales,
// FlashAttention-3 descales [batch, Hkv] and both, rotated over the cases with the paging axes; bf16
// and fp16 queries; the features ride along (window, sinks, softcap, ALiBi, LSE, D != Dv, Dv 256 on
// decode_split). The reference reads the dequantised cache.
inline std::vector<GridCase> fp8_grid() {
  using K = KernelKind;
  const LseSpec none{LseLayout::none, LseBase::e}, hm_e{LseLayout::head_major, LseBase::e},
      hm_2{LseLayout::head_major, LseBase::two}, tm_e{LseLayout::token_major, LseBase::e};
  struct Fp8Kernel {
    std::string tag;
    Spec spec;
  };
  auto fp8 = [](Spec s, KvDType d) {
    s.kv_cache.dtype = d;
    return s;
  };
  std::vector<Fp8Kernel> kernels = {
      {"d128g4_e4m3", fp8(grid_spec(DType::bf16, 128, 128, 8, 2, kCausal, hm_e), KvDType::fp8_e4m3)},
      {"d128g4_e5m2_fp16", fp8(grid_spec(DType::fp16, 128, 128, 8, 2, kCausal, none), KvDType::fp8_e5m2)},
      {"d64g8_win_sinks_e5m2", fp8(grid_spec(DType::bf16, 64, 64, 16, 2, kWindow256, tm_e), KvDType::fp8_e5m2)},
      {"d96g7_nomask_softcap_e4m3_fp16", fp8(grid_spec(DType::fp16, 96, 96, 7, 1, kNoMask, hm_2), KvDType::fp8_e4m3)},
      {"d192v128g4_alibi_e4m3", fp8(grid_spec(DType::bf16, 192, 128, 8, 2, kCausal, tm_e), KvDType::fp8_e4m3)},
      {"d256g4_e4m3", fp8(grid_spec(DType::bf16, 256, 256, 8, 2, kCausal, none), KvDType::fp8_e4m3)},
  };
  kernels[2].spec.sinks = true;
  kernels[3].spec.softcap = 50.f;
  kernels[4].spec.alibi = Alibi::linear;
  static const Fp8Scales scales[] = {Fp8Scales::per_tensor, Fp8Scales::descale, Fp8Scales::both};
  std::vector<GridCase> out;
  int n = 0, kernel = 0;
  auto finish = [&](GridCase& c, const std::string& name) {
    c.call.fp8_scales = scales[(n + kernel) % 3];  // each kind meets every scale kind over the kernels
    rotate_paging(c.call, n + 1);
    c.name = name + paging_name(c.call) + "_" + to_string(c.call.fp8_scales);
    ++n;
  };
  for (const Fp8Kernel& k : kernels) {
    GridCase g;
    g.spec = k.spec;
    if (k.spec.head_dim_v <= 128) {  // paged prefill (d256's decode is the long one)
      GridCase p = g;
      p.kind = K::prefill_paged;
      const LengthSet& l = kPagedLengths[n % kPagedLengths.size()];
      p.call.seqlens_q = l.q;
      p.call.seqlens_k = l.k;
      finish(p, "fp8_paged_" + k.tag);
      out.push_back(p);
    }
    for (int multi = 0; multi < 2; ++multi) {
      GridCase c = g;
      c.kind = K::decode;
      set_decode_call(c, multi, n);
      finish(c, std::string(multi ? "fp8_decodeN_" : "fp8_decode1_") + k.tag + splits_name(c.call));
      GridCase twin = c;
      twin.family = "decode_split";
      twin.name += "_decode_split";
      out.push_back(c);
      if (k.spec.head_dim_v <= 192) out.push_back(twin);  // (past 192 the default is decode_split already)
    }
    ++kernel;
  }
  return out;
}

inline std::vector<GridCase> attention_grid() {
  std::vector<GridCase> out;
  int n_prefill = 0, n_paged = 0, n_decode = 0;
  for (const GridKernel& k : grid_kernels()) {
    for (KernelKind kind : k.kinds) {
      GridCase g;
      g.spec = k.spec;
      g.kind = kind;
      if (kind == KernelKind::prefill) {
        const LengthSet& l = kPrefillLengths[n_prefill % kPrefillLengths.size()];
        g.call.seqlens_q = l.q;
        g.call.seqlens_k = l.k;
        g.call.qo_row_pad = n_prefill % 2 ? 16 : 0;
        g.call.softmax_scale = n_prefill % 3 == 2 ? 0.07f : 0.f;
        g.name = "prefill_" + k.tag + "_L" + std::to_string(n_prefill % kPrefillLengths.size()) +
                 (g.call.qo_row_pad ? "_strided" : "");
        ++n_prefill;
        out.push_back(g);
        continue;
      }
      const int cases = kind == KernelKind::prefill_paged ? 2 : 3;
      for (int j = 0; j < cases; ++j) {
        GridCase c = g;
        rotate_paging(c.call, n_paged);
        c.call.qo_row_pad = n_paged % 3 == 1 ? 8 : 0;
        c.call.softmax_scale = n_paged % 7 == 3 ? 0.2f : 0.f;
        if (kind == KernelKind::prefill_paged) {
          const LengthSet& l = kPagedLengths[n_paged % kPagedLengths.size()];
          c.call.seqlens_q = l.q;
          c.call.seqlens_k = l.k;
          c.name = "paged_" + k.tag + paging_name(c.call);
        } else {
          set_decode_call(c, j == 1, n_decode);
          c.name = std::string(c.decode_multi ? "decodeN_" : "decode1_") + k.tag + paging_name(c.call) +
                   splits_name(c.call);
          ++n_decode;
          GridCase twin = c;
          twin.family = "decode_split";
          twin.name += "_decode_split";
          out.push_back(twin);
        }
        ++n_paged;
        out.push_back(c);
      }
    }
  }
  // Page ids past 2^31 elements: a FlashInfer-layout cache of 40000 pages of 64 x 2 heads x 256
  // puts the top page's V at element 2.6e9 (5.2 GB).
  GridCase big;
  big.spec = grid_kernel("d256g8_win_softcap").spec;
  big.kind = KernelKind::decode;
  big.call.layout = KvCacheLayout::flashinfer_nhd;
  big.call.page_table = PageTableForm::seqused_k;
  big.call.page_size = 64;
  big.call.num_blocks = 40000;
  big.call.seqlens_k = {3000, 1, 2000};
  big.call.num_splits = 0;
  big.name = "decode1_d256g8_win_softcap_flashinfer_nhd_seqused_k_bs64_top_page_past_2e31";
  out.push_back(big);
  GridCase big_prefill = big;
  big_prefill.kind = KernelKind::prefill_paged;
  big_prefill.call.layout = KvCacheLayout::fork_hnd;
  big_prefill.call.page_table = PageTableForm::flashinfer;
  big_prefill.call.num_blocks = 70000;  // fork_hnd: the V plane starts at 2.3e9 elements
  big_prefill.call.seqlens_q = {200, 1};
  big_prefill.call.seqlens_k = {900, 2000};
  big_prefill.name = "paged_d256g8_win_softcap_fork_hnd_flashinfer_bs64_v_plane_past_2e31";
  out.push_back(big_prefill);
  // A ragged batch (issue 11): one long request beside many short ones, plain and speculative. decode_bw
  // sizes its split parts from the longest request, so the short ones' later parts find no keys.
  for (int i = 0; i < 3; ++i) {
    GridCase r;
    r.spec = grid_kernel(i == 2 ? "d64g8_win_sinks" : "d128g4").spec;
    r.kind = KernelKind::decode;
    r.call.seqlens_k = std::vector<int>(15, 37);
    r.call.seqlens_k.insert(r.call.seqlens_k.begin() + 3, 20000);
    if (i == 1) r.call.seqlens_q = std::vector<int>(16, 3);
    r.decode_multi = i == 1;
    r.call.num_splits = i == 0 ? 16 : 0;
    r.name = std::string(i == 1 ? "decodeN_" : "decode1_") + grid_kernel(i == 2 ? "d64g8_win_sinks" : "d128g4").tag +
             "_ragged_one_long" + splits_name(r.call);
    out.push_back(r);
  }
  for (GridCase& c : head_dim_sweep()) out.push_back(std::move(c));
  for (GridCase& c : fp8_grid()) out.push_back(std::move(c));
  // Every prefill case on both prefill families (prefill_sm90 skipped off sm_90a), but fp8 caches,
  // which prefill_sm90 refuses.
  const size_t n = out.size();
  for (size_t i = 0; i < n; ++i)
    if (out[i].kind == KernelKind::prefill ||
        (out[i].kind == KernelKind::prefill_paged && out[i].spec.kv_cache.dtype == KvDType::same)) {
      out[i].family = "prefill_sm80";
      GridCase c = out[i];
      c.family = "prefill_sm90";
      c.name = "sm90_" + c.name;
      Config persistent = default_family_config(c.spec, c.kind, "sm_90a", "prefill_sm90");
      persistent.persistent = true;
      // Where O fits too; not int8 (the planner refuses persistent int8, unverified on a GPU).
      if (c.kind == KernelKind::prefill && c.spec.quant == QuantMode::none &&
          prefill_sm90_smem_bytes(c.spec, persistent, c.kind) <= arch_info("sm_90a").max_smem_per_block) {
        GridCase p = c;
        p.persistent = true;
        p.name = "sm90p_" + out[i].name;
        out.push_back(std::move(p));
      }
      // Paged 16-bit caches again with the cp.async gather (every layout, page-table form and page
      // size the TMA cases take, unwritten slots NaN).
      if (c.kind == KernelKind::prefill_paged && c.spec.quant == QuantMode::none) {
        GridCase g = c;
        g.paged_gather = true;
        g.name = "sm90g_" + out[i].name;
        out.push_back(std::move(g));
      }
      out.push_back(std::move(c));
    }
  return out;
}

}  // namespace attnc::grid
