// The Spec: everything about one attention layer that is fixed at compile time.
// Parsed and validated from YAML by spec_parse.cpp; docs/spec.md documents every field.
// Values that change per call (lengths, page tables, the softmax scale) live in a Problem, never
// here; values a tuner may change (tiles, warps, stages) live in a Config.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attnc/params/kinds.h"  // MaskKind, Alibi: shared with the templates

namespace attnc {

enum class DType { bf16, fp16 };
enum class KvDType { same, fp8_e4m3, fp8_e5m2, int8 };  // `same`: the KV cache holds `dtype`
enum class KvLayout { NHD, HND };                        // per page: [tokens, heads, dim] / [heads, tokens, dim]
enum class LseLayout { none, head_major, token_major };  // [Hq, total_q] (FlashAttention) / [total_q, Hq] (FlashInfer)
enum class LseBase { e, two };
// none; int8 Q/K/V with per-token K and per-channel V scales (ixformer quant_type 1);
// int8 Q/K with a 16-bit V (quant_type 2); fp8 KV with descales.
enum class QuantMode { none, int8_qkv, int8_qk, fp8 };

struct KvCacheSpec {
  KvDType dtype = KvDType::same;
  KvLayout layout = KvLayout::NHD;
  int page_size = 16;  // tokens per page
  bool operator==(const KvCacheSpec&) const = default;
};

// Bottom-right aligned, inclusive, -1 = unbounded (attention-semantics.md §1.3, §1.6).
// `causal` is canonicalised to sliding_window(left=-1, right=0) only inside the planner; the spec
// keeps what the user wrote so `attnc gen` output reads like the spec.
struct MaskSpec {
  MaskKind kind = MaskKind::causal;
  int window_left = -1;
  int window_right = -1;
  bool operator==(const MaskSpec&) const = default;
};

struct LseSpec {
  LseLayout layout = LseLayout::none;
  LseBase base = LseBase::e;
  bool operator==(const LseSpec&) const = default;
};

// DeepSeek-style latent attention (attention-semantics.md §7.3). When enabled, head_dim and
// head_dim_v describe the MHA prefill (qk_nope + qk_rope, v_head_dim); the absorbed decode works
// on kv_lora_rank + qk_rope_head_dim. parse_spec fills head_dim, head_dim_v and num_kv_heads
// (= num_q_heads) from these dims.
struct MlaSpec {
  bool enabled = false;
  int kv_lora_rank = 0;
  int qk_rope_head_dim = 0;
  int qk_nope_head_dim = 0;
  int v_head_dim = 0;
  bool operator==(const MlaSpec&) const = default;
};

// Local + vertical-stride block sparsity (attention-semantics.md §7.4). parse_spec resolves the
// two sentinels below, so a parsed Spec always holds concrete values.
struct BlockSparseSpec {
  bool enabled = false;
  int block_size = 64;
  int local_blocks = 16;
  int vert_stride = 8;
  bool homo_head = false;
  int head_sliding_step = 0;     // 0 = derived: max(1, vert_stride / num_q_heads), or 0 when homo_head
  int active_head_begin = 0;     // global q-head range of this tensor-parallel rank
  int active_head_end = -1;      // -1 = begin + num_q_heads
  int q_block_size = 0;          // 0 = block_size; larger: a multiple of it, whose rows share one pattern row
  bool operator==(const BlockSparseSpec&) const = default;
};

struct KernelSet {
  bool prefill = true;
  bool decode = false;
  bool merge = false;
  bool cache_write = false;
  bool operator==(const KernelSet&) const = default;
};

// Optional restriction of the tuner's search space; empty = the family's default space.
struct TuningSpaceSpec {
  std::vector<int> block_m, block_n, warps, stages, splits;
  std::vector<std::string> families;
  bool operator==(const TuningSpaceSpec&) const = default;
};

struct Spec {
  int version = 1;
  std::string name;        // free text, not part of the id
  int head_dim = 128;      // QK head dim
  int head_dim_v = 128;    // defaults to head_dim
  int num_q_heads = 32;
  int num_kv_heads = 32;   // defaults to num_q_heads
  DType dtype = DType::bf16;
  KvCacheSpec kv_cache;
  MaskSpec mask;
  float softcap = 0.0f;    // 0 = off; > 0: cap * tanh(s / cap) on the scaled logits
  Alibi alibi = Alibi::none;
  bool sinks = false;
  LseSpec lse;
  QuantMode quant = QuantMode::none;
  MlaSpec mla;
  BlockSparseSpec sparse;
  KernelSet kernels;
  TuningSpaceSpec tuning;

  int group_size() const { return num_q_heads / num_kv_heads; }
  bool operator==(const Spec&) const = default;
};

// Bytes per element of the paged KV cache: 2 (the model's dtype), 1 (fp8, int8).
inline int kv_cache_elem_bytes(const Spec& s) { return s.kv_cache.dtype == KvDType::same ? 2 : 1; }
// Bytes per V element read from the cache: int8_qk keeps V 16-bit beside its int8 K (the fork's
// 3-plane cache), every other cache stores K and V alike.
inline int kv_cache_v_elem_bytes(const Spec& s) { return s.quant == QuantMode::int8_qk ? 2 : kv_cache_elem_bytes(s); }

const char* to_string(DType);
const char* to_string(KvDType);
const char* to_string(KvLayout);
const char* to_string(MaskKind);
const char* to_string(Alibi);
const char* to_string(LseLayout);
const char* to_string(LseBase);
const char* to_string(QuantMode);

}  // namespace attnc
