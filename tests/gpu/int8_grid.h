// The int8 cases of the attention grid (attention-semantics.md §5.2): both int8 modes as
// contiguous and paged prefill (each on prefill_sm80 and, as `sm90_` twins, prefill_sm90: both
// cases name their family, so both stay tested whichever is the default; int8_qkv prefill, contiguous
// and paged, a third time as `sm90w_`, V widened once per call by v_prewiden), and paged decode (one
// and several query tokens), with the
// features the int8 fork allows (causal, window, softcap, ALiBi, sqrt-ALiBi, GQA), q scales in
// both layouts, and the fork's HND cache beside the other layouts. Decode runs on the arch's default
// (decode_bw on sm_90 where the head dims allow) and on decode_split (`_decode_split` twins). Checked against the float64
// reference on the dequantised inputs (check/int8_inputs.h).
#pragma once

#include <string>
#include <vector>

#include "tests/gpu/attention_grid.h"

namespace attnc::grid {

inline Spec int8_spec(QuantMode quant, DType t, int d, int hq, int hkv, MaskSpec mask) {
  Spec s = grid_spec(t, d, d, hq, hkv, mask, {LseLayout::none, LseBase::e});
  s.quant = quant;
  s.kv_cache.dtype = KvDType::int8;
  return s;
}

inline std::vector<GridKernel> int8_kernels() {
  using Q = QuantMode;
  std::vector<GridKernel> out;
  auto add = [&](std::string tag, Spec s, auto&& tweak) {
    tweak(s);
    out.push_back({std::move(tag), std::move(s), {KernelKind::prefill, KernelKind::prefill_paged, KernelKind::decode}});
  };
  add("i8qkv_d128g4", int8_spec(Q::int8_qkv, DType::fp16, 128, 8, 2, kCausal), [](Spec&) {});
  add("i8qk_d128g4_bf16", int8_spec(Q::int8_qk, DType::bf16, 128, 8, 2, kCausal), [](Spec&) {});
  add("i8qkv_d64g8_win_softcap_bf16", int8_spec(Q::int8_qkv, DType::bf16, 64, 16, 2, kWindow256),
      [](Spec& s) { s.softcap = 30.f; });
  add("i8qk_d96g1_alibi", int8_spec(Q::int8_qk, DType::fp16, 96, 4, 4, kCausal), [](Spec& s) { s.alibi = Alibi::linear; });
  add("i8qkv_d80g4_sqrtalibi_lse", int8_spec(Q::int8_qkv, DType::fp16, 80, 8, 2, kCausal), [](Spec& s) {
    s.alibi = Alibi::sqrt;
    s.lse = {LseLayout::head_major, LseBase::e};
  });
  add("i8qk_d256g4_win_softcap", int8_spec(Q::int8_qk, DType::bf16, 256, 8, 2, kWindow256),
      [](Spec& s) { s.softcap = 30.f; });
  // prefill_sm90's int8_qkv widening loop for Dv whose 16-byte pieces per row do not divide 8
  // (d64 and d128 above take the lane-constant one), with 64-key tiles: contiguous prefill only
  // (on both prefill families).
  out.push_back(
      {"i8qkv_d256g4_bf16", int8_spec(Q::int8_qkv, DType::bf16, 256, 8, 2, kCausal), {KernelKind::prefill}});
  return out;
}

inline std::vector<GridCase> int8_grid() {
  static const std::vector<KvCacheLayout> layouts = {KvCacheLayout::fork_hnd, KvCacheLayout::vllm,
                                                     KvCacheLayout::fork_hnd, KvCacheLayout::flashinfer_nhd};
  std::vector<GridCase> out;
  int i = 0;
  for (const GridKernel& k : int8_kernels()) {
    for (KernelKind kind : k.kinds) {
      const int variants = kind == KernelKind::decode ? 2 : 1;
      for (int j = 0; j < variants; ++j, ++i) {
        GridCase g;
        g.spec = k.spec;
        g.kind = kind;
        AttentionCase& c = g.call;
        // Contiguous and paged prefill fall on i = 0 and 1 mod 4 (four cases a kernel): their layout
        // and q-scale layout rotate with the kernel instead, so both meet both q-scale layouts (and
        // paged the fork's HND cache); contiguous prefill was always [T, H] before.
        const int r = kind == KernelKind::decode ? i : i / 4;
        c.q_scale_head_major = r % 2 == 1;
        c.layout = layouts[r % layouts.size()];
        c.page_table = all_page_table_forms()[i % 3];
        c.page_size = kPageSizes[i % 3];  // 16, 32, 64
        c.num_blocks = 2048;
        c.column_offset = block_table_form(c.page_table) && i % 2 ? 5 : 0;
        std::string name;
        if (kind == KernelKind::prefill) {
          c.seqlens_q = {1, 17, 300, 90};
          c.seqlens_k = {1, 40, 300, 700};
          name = "int8_prefill_" + k.tag;
        } else if (kind == KernelKind::prefill_paged) {
          c.seqlens_q = {7, 1, 200};
          c.seqlens_k = {300, 1500, 200};
          name = "int8_paged_" + k.tag + paging_name(c);
        } else {
          g.decode_multi = j == 1;
          if (g.decode_multi) c.seqlens_q = {1, 2, 4};
          c.seqlens_k = g.decode_multi ? std::vector<int>{5, 700, 2047} : std::vector<int>{1, 17, 300, 2999, 64};
          c.num_splits = std::vector<int>{1, 3, 0}[i % 3];
          name = std::string(g.decode_multi ? "int8_decodeN_" : "int8_decode1_") + k.tag + paging_name(c) + "_s" +
                 std::to_string(c.num_splits);
        }
        g.name = name + (c.q_scale_head_major ? "_qsHT" : "_qsTH");
        if (kind != KernelKind::decode) {  // on both prefill families
          GridCase sm90 = g;
          sm90.family = "prefill_sm90";
          sm90.name = "sm90_" + g.name;
          if (k.spec.quant == QuantMode::int8_qkv) {  // V widened once per call (paged: its pages gathered)
            GridCase once = sm90;
            once.v_prewiden = true;
            once.name = "sm90w_" + g.name;
            out.push_back(std::move(once));
          }
          out.push_back(std::move(sm90));
          g.family = "prefill_sm80";
        }
        // decode_bw takes int8 where D is a multiple of 64 up to 192: a decode_split twin keeps that
        // family tested on the same case.
        if (kind == KernelKind::decode && k.spec.head_dim % 64 == 0 && k.spec.head_dim <= 192) {
          GridCase twin = g;
          twin.family = "decode_split";
          twin.name += "_decode_split";
          out.push_back(twin);
        }
        out.push_back(g);
      }
    }
  }
  return out;
}

}  // namespace attnc::grid
