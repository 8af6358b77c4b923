#include "generator/plan/plan_prefill_sm90.h"

#include <algorithm>
#include <numeric>

namespace attnc {
namespace {

int blocks64(int d) { return (d + 63) / 64; }

bool is_int8(const Spec& s) { return s.quant == QuantMode::int8_qkv || s.quant == QuantMode::int8_qk; }

// int8 (attention-semantics.md §5.2) on prefill_sm90: Q·Kᵀ on s8 wgmma over contiguous or paged
// Q/K, and int8_qkv's V widened to fp16 by the producer (prefill_sm90_int8.cuh); what it does not
// take stays on prefill_sm80's widening path.
std::string prefill_sm90_int8_refusal(const Spec& s) {
  const bool qkv = s.quant == QuantMode::int8_qkv;
  if (!is_int8(s)) return "";
  if (s.head_dim % 16 != 0 || (qkv && s.head_dim_v % 16 != 0))
    return "prefill_sm90 reads int8 rows in 16-byte units: head_dim " + std::to_string(s.head_dim) +
           (qkv ? " and head_dim_v " + std::to_string(s.head_dim_v) + " must be multiples" : " is not a multiple") +
           " of 16; it runs on prefill_sm80";
  return "";
}

// Key tiles of two sparse blocks, each block its own TMA box: mixed_tiles (wide tiles over the
// local band, narrow ones of one block over the vertical blocks, Sparse::MixedTiles) and
// paired_tiles (every tile two blocks of the visible list, adjacent or not, Sparse::PairedTiles).
void check_two_block_tiles(const Spec& s, KernelKind kind, const Config& c, const std::string& field) {
  const std::string off = " (" + field + ": false)";
  if (!s.sparse.enabled)
    throw BadConfig(field + " splits the key tiles of a block_sparse pattern; the spec has none" + off);
  if (kind != KernelKind::prefill)
    throw BadConfig(field + " reads contiguous K/V; a " + to_string(kind) + " kernel reads its key tiles by pages" +
                    off);
  if (s.quant != QuantMode::none)
    throw BadConfig(field + " is built for 16-bit Q/K, not quant " + to_string(s.quant) + off);
  if (c.block_n != 2 * s.sparse.block_size || s.sparse.block_size % 16 != 0)
    throw BadConfig(field + ": block_n " + std::to_string(c.block_n) + " must be two sparse blocks of whole k16 " +
                    "steps (block_size " + std::to_string(s.sparse.block_size) + ": block_n " +
                    std::to_string(2 * s.sparse.block_size) + ")" + off);
}

// paged_gather: the producer warpgroup gathers 16-bit paged K/V tiles by cp.async
// (prefill_sm90_paged_gather.cuh); int8 keeps its TMA boxes (and their key-scale copies). fp8
// caches do not reach prefill_sm90 (prefill_sm90_refusal).
void check_paged_gather(const Spec& s, KernelKind kind) {
  const std::string off = " (paged_gather: false)";
  if (kind != KernelKind::prefill_paged)
    throw BadConfig(std::string("paged_gather gathers K/V tiles from a paged cache; a ") + to_string(kind) +
                    " kernel reads contiguous K/V by TMA" + off);
  if (s.quant != QuantMode::none)
    throw BadConfig(std::string("paged_gather copies 16-bit caches; quant ") + to_string(s.quant) +
                    " keeps TMA boxes" + off);
}

// v_prewiden: int8 V (contiguous, or gathered from a paged cache: prefill_sm90 makes no other
// kinds) widened into a dense fp16 workspace by the module's second entry.
void check_v_prewiden(const Spec& s) {
  if (s.quant != QuantMode::int8_qkv)
    throw BadConfig(std::string("v_prewiden widens int8 V; quant ") + to_string(s.quant) +
                    " has no int8 V (v_prewiden: false)");
}

void check_config(const Spec& s, KernelKind kind, const Config& c, const ArchInfo& arch) {
  if (c.block_m != 128 && c.block_m != 192)
    throw BadConfig("block_m " + std::to_string(c.block_m) + "; prefill_sm90 gives each consumer warpgroup 64 rows " +
                    "and runs 2 or 3 of them: allowed 128, 192");
  if (c.warps != c.block_m / 16 + 4)
    throw BadConfig("warps " + std::to_string(c.warps) + " with block_m " + std::to_string(c.block_m) +
                    "; prefill_sm90 runs block_m / 16 consumer warps and a producer warpgroup, so warps must be " +
                    std::to_string(c.block_m / 16 + 4));
  if (c.persistent && kind != KernelKind::prefill)
    throw BadConfig(std::string("persistent prefill_sm90 blocks read contiguous K/V; a ") + to_string(kind) +
                    " kernel runs one block per item (persistent: false)");
  if (c.persistent && s.quant != QuantMode::none)
    throw BadConfig(std::string("persistent prefill_sm90 blocks are not verified with int8 Q/K (quant ") +
                    to_string(s.quant) + "): int8 runs one block per item (persistent: false)");
  if (c.mixed_tiles && c.paired_tiles)
    throw BadConfig("mixed_tiles and paired_tiles are two ways to fill a tile of two sparse blocks; set one");
  if (c.mixed_tiles) check_two_block_tiles(s, kind, c, "mixed_tiles");
  if (c.paired_tiles) check_two_block_tiles(s, kind, c, "paired_tiles");
  if (c.paged_gather) check_paged_gather(s, kind);
  if (c.v_prewiden) check_v_prewiden(s);
  check_key_tiles(c, prefill_sm90_smem_bytes(s, c, kind), arch, 4);
}

}  // namespace

std::string prefill_sm90_refusal(const Spec& s, KernelKind kind, const std::string& arch) {
  if (arch != "sm_90a") return "prefill_sm90 needs sm_90a (wgmma, TMA, setmaxnreg); the target is " + arch;
  if (kind == KernelKind::decode) return "prefill_sm90 makes prefill kernels; decode stays on decode_split";
  if (kind != KernelKind::prefill && kind != KernelKind::prefill_paged)
    return std::string("prefill_sm90 makes prefill kernels, not ") + to_string(kind);
  if (const std::string why = prefill_sm90_int8_refusal(s); !why.empty()) return why;
  if (kind == KernelKind::prefill_paged && s.kv_cache.dtype != KvDType::same && !is_int8(s))
    return std::string("prefill_sm90 reads 16-bit paged caches; a ") + to_string(s.kv_cache.dtype) +
           " cache stays on prefill_sm80";
  if (s.quant == QuantMode::none && blocks64(s.head_dim_v) > blocks64(s.head_dim))
    return "prefill_sm90 stages the output in the Q tile: head_dim_v " + std::to_string(s.head_dim_v) +
           " needs more 64-column blocks than head_dim " + std::to_string(s.head_dim) + " has";
  return "";
}

Config default_prefill_sm90_config(const Spec& s, KernelKind kind, VWiden v_widen) {
  Config c;
  c.family = kPrefillSm90;
  const int d = std::max(s.head_dim, s.head_dim_v);  // 3 x 64 rows only where O and S stay small
  // Block-sparse: key tiles of one sparse block (64..128 keys), so a vertical block costs one tile
  // (at block size 64 and d128: paired tiles of two blocks, below);
  // its blocks see few tiles, so 3 x 64 rows per block where S stays small (m192n64: 5 % faster
  // than m128n64 on Phi-3-small, docs/kernels-block-sparse.md), but contiguous prefill at d <= 128
  // runs persistent blocks of 2 x 64 rows, which keep Q in registers (Q K^T of 64-key tiles then
  // reads only K from shared memory): m128n64 persistent 0.421 ms, m192n64 persistent 0.427.
  c.block_n = s.sparse.enabled ? std::clamp(s.sparse.block_size, 64, 128) : 128;
  c.block_m = d <= 64 || (s.sparse.enabled && d <= 128 && c.block_n <= 64) ? 192 : 128;
  // int8: the s32 scores' conversion and scaling add registers that spill at 3 x 64 rows (d64
  // with sqrt-ALiBi and LSE: 212 bytes), so 2 x 64.
  if (s.quant == QuantMode::int8_qk || s.quant == QuantMode::int8_qkv) c.block_m = 128;
  // Contiguous int8_qkv at d128: 3 x 64 rows over 64-key tiles, so each V tile the producer widens
  // serves 192 rows instead of 128: 1.208 -> 1.131 ms at B4 S4096 causal on the H200, no spills with
  // every feature (docs/kernels-int8.md, "The consumer chain, measured"); int8_qk and bf16 lose with it.
  // With V widened once per call (v_prewiden) the kernel is int8_qk's, and so are its tiles.
  // Paged int8_qkv the same, its pages gathered by the widening pass (kPagedVPrewidenIsDefault).
  const bool prewiden_default = kind == KernelKind::prefill ? kVPrewidenIsDefault : kPagedVPrewidenIsDefault;
  c.v_prewiden = s.quant == QuantMode::int8_qkv &&
                 (kind == KernelKind::prefill || kind == KernelKind::prefill_paged) &&
                 (v_widen == VWiden::once_per_call || (v_widen == VWiden::heuristic && prewiden_default));
  if (s.quant == QuantMode::int8_qkv && kind == KernelKind::prefill && d == 128 && !c.v_prewiden) {
    c.block_m = 192;
    c.block_n = 64;
  }
  if (s.sparse.enabled && kind == KernelKind::prefill && d <= 128 && c.block_n <= 64) c.block_m = 128;
  c.warps = c.block_m / 16 + 4;
  c.stages = 2;
  c.pingpong = true;
  // Narrower key tiles until two stages fit (d192: 112, d256: 80), for the paged kernel too.
  const int limit = arch_info("sm_90a").max_smem_per_block;
  while (c.block_n > 16 && prefill_sm90_smem_bytes(s, c, KernelKind::prefill_paged) > limit) c.block_n -= 16;
  // int8 above d128 (its smaller K tiles would fit wider key tiles than bf16's): 112 keys at d192
  // (n128 spills 60 bytes with window, softcap, sqrt-ALiBi and LSE), 64 at d256 (n96 and n80 spill
  // 36 and 8 bytes with sqrt-ALiBi and LSE).
  if (s.quant != QuantMode::none && d > 128) c.block_n = std::min(c.block_n, d > 192 ? 64 : 112);
  // int8_qkv with V widened once per call at d192: 96 keys, as with the producer's raw V ring (n112
  // spills 4 bytes, 8 with window, sqrt-ALiBi and LSE; n96 none).
  if (c.v_prewiden && d > 128 && d <= 192) c.block_n = std::min(c.block_n, 96);
  // Paged int8 above d128: 80 keys at d192, 48 at d256 (its consumers keep 232 registers beside
  // the paged producer's 32; with sqrt-ALiBi and LSE n96 spilled 40 bytes at d192 and n64 4 bytes
  // at d256, measured when the consumers also made per-key biases, since reverted).
  if (s.quant != QuantMode::none && kind == KernelKind::prefill_paged && d > 128)
    c.block_n = std::min(c.block_n, d > 192 ? 48 : 80);
  // Paged 16-bit K/V whose page boxes would hold at most 32 rows (gcd(page, block_n): pages 16, 32
  // and 48 at 128-key tiles, all but multiples of 80 at 80-key ones): the producer gathers by
  // cp.async, as the TMA unit's box rate holds small boxes back (d128 B4 S4096 causal, folded
  // scale: page 16 1.183 ms on TMA, 0.947 gathered; page 32 1.004 -> 0.975; gemma-2 d256 page 16
  // 0.702 -> 0.574; gpt-oss d64 0.915 -> 0.899). From 64-row boxes TMA is 2.5 % faster (0.954 /
  // 0.949 against 0.978 / 0.972 at pages 64 / 128; nvidia-h200, docs/kernels-prefill-sm90.md). The
  // page size is the spec's, that of its default kernel.
  c.paged_gather = kind == KernelKind::prefill_paged && s.quant == QuantMode::none && !s.sparse.enabled &&
                   std::gcd(s.kv_cache.page_size, c.block_n) <= 32;
  // Block-sparse contiguous prefill: persistent blocks, where the output tile fits beside the
  // others (they hide each item's Q load and pipeline fill: -2 % at m128n64; and hold Q in
  // registers at 2 x 64 rows and d <= 128: -6 % more). Not int8's (check_config says why).
  Config p = c;
  p.persistent = true;
  c.persistent = s.sparse.enabled && kind == KernelKind::prefill && s.quant == QuantMode::none &&
                 prefill_sm90_smem_bytes(s, p, kind) <= limit;
  // Block size 64 at d128 (contiguous, 16-bit): paired tiles, every 128-key tile two sparse blocks
  // of the visible list, so a vertical block still costs half a tile and every tile is the dense
  // kernel's width: 0.354 ms (with the per-row block test) against one-block tiles' 0.431 on
  // Phi-3-small (nvidia-h200, docs/kernels-block-sparse.md). Other block sizes and head dims are not
  // measured.
  p = c;
  p.block_n = 2 * s.sparse.block_size;
  p.paired_tiles = true;
  if (c.persistent && s.sparse.block_size == 64 && d == 128 && c.block_m == 128 &&
      prefill_sm90_smem_bytes(s, p, kind) <= limit)
    c = p;
  return c;
}

int prefill_sm90_smem_bytes(const Spec& s, const Config& c, KernelKind kind) {
  // Columns in 2-byte units: an int8 Q/K row of D bytes is D / 2 of them. The output is staged
  // over the Q tile's space, which is the larger of the two; a persistent block keeps it in a tile
  // of its own (the next item's Q lands while it is stored).
  const int int8_pairs = s.quant == QuantMode::none ? 1 : 2;
  const int dq = 64 * blocks64(s.head_dim / int8_pairs), dv = 64 * blocks64(s.head_dim_v);
  const int barriers = 8 * (1 + 4 * c.stages + (kind == KernelKind::prefill_paged ? 1 : 0) + (c.persistent ? 1 : 0));
  const int o_tile = c.persistent ? c.block_m * dv : 0;
  const int key_scales = int8_pairs == 2 ? 4 * c.stages * c.block_n : 0;  // int8: a ring of fp32 key scales
  // int8_qkv: the raw int8 V ring (TMA lands it, the producer widens it into the V ring) and its
  // raw_full / raw_empty barriers.
  const bool qkv = s.quant == QuantMode::int8_qkv && !c.v_prewiden;
  const int raw_v = qkv ? 2 * c.stages * c.block_n * 64 * blocks64(s.head_dim_v / 2) + 16 * c.stages : 0;
  const int tiles = c.block_m * std::max(dq, dv) + c.stages * c.block_n * (dq + dv) + o_tile;  // 2-byte units
  return 1024 + 2 * tiles + key_scales + raw_v + barriers;
}

long long v_prewiden_rows(const KernelPlan& p, int batch, int max_seqlen_k, long long total_k) {
  if (!p.paged) return total_k;
  if (max_seqlen_k <= 0) return -1;
  return (long long)std::max(0, batch) * v_prewiden_request_rows(p, max_seqlen_k);
}

long long v_prewiden_request_rows(const KernelPlan& p, int max_seqlen_k) {
  const long long bn = p.config.block_n;
  return (std::max(0, max_seqlen_k) + bn - 1) / bn * bn;
}

size_t v_prewiden_workspace_bytes(const KernelPlan& p, long long rows) {
  if (!p.config.v_prewiden) return 0;
  return size_t(std::max(0LL, rows)) * size_t(p.kv_heads()) * size_t(p.head_dim_v) * 2;
}

void plan_prefill_sm90(const Spec& s, KernelKind kind, const Config& c, const ArchInfo& arch, KernelPlan& p) {
  if (const std::string why = prefill_sm90_refusal(s, kind, arch.name); !why.empty()) throw NotSupportedYet(why);
  check_config(s, kind, c, arch);
  p.threads = 32 * c.warps;
  p.smem_bytes = prefill_sm90_smem_bytes(s, c, kind);
}

}  // namespace attnc
