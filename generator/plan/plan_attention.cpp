#include "generator/plan/plan_attention.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "generator/plan/plan_mla_decode.h"
#include "generator/plan/plan_prefill_sm90.h"
#include "generator/spec/spec_parse.h"

namespace attnc {
namespace {

bool is_attention_family(const std::string& f) {
  return f == "prefill_sm80" || f == "decode_split" || f == "decode_bw" || f == kPrefillSm90 || f == kMlaDecode;
}

std::string family_list(KernelKind kind) {
  std::string out;
  for (const std::string& f : attention_families(kind)) out += (out.empty() ? "" : ", ") + f;
  return out;
}

// The families that make a kind. prefill_sm90 and mla_decode are planned for every kind: their
// planners refuse what they cannot make with the reason (NotSupportedYet), e.g. paged prefill, or
// anything but the decode of an MLA spec.
bool makes(const std::string& family, KernelKind kind) {
  const std::vector<std::string> fs = attention_families(kind);
  return family == kPrefillSm90 || family == kMlaDecode || std::find(fs.begin(), fs.end(), family) != fs.end();
}

// What the attention templates cannot express yet; each line names the feature.
void check_supported(const Spec& s, KernelKind kind) {
  if (s.mla.enabled && kind == KernelKind::decode)
    throw NotSupportedYet("MLA absorbed decode on this family (latent K/V aliasing); mla_decode makes it");
  if (s.quant == QuantMode::fp8)
    throw NotSupportedYet(std::string("quant ") + to_string(s.quant) + " (no quantised family yet)");
  if (kind != KernelKind::prefill && s.kv_cache.dtype == KvDType::int8 && int8_mode(s) == Int8Mode::none)
    throw NotSupportedYet("reading an int8 KV cache without an int8 quant mode (int8_qkv, int8_qk read it)");
  for (int d : {s.head_dim, s.head_dim_v})
    if (d % 8 != 0 || d < 8 || d > 256)
      throw NotSupportedYet("head dim " + std::to_string(d) + " (supported: multiples of 8 up to 256)");
}

// An fp8 cache read by a paged kernel (prefill_paged, decode): 16 fp8 bytes per copy and the fp8
// cvt (sm_89 on); prefill_sm90 has no fp8 path (its planner refuses fp8 caches).
bool reads_fp8(const Spec& s, KernelKind kind) {
  return kind != KernelKind::prefill && (s.kv_cache.dtype == KvDType::fp8_e4m3 || s.kv_cache.dtype == KvDType::fp8_e5m2);
}

void check_fp8(const Spec& s, const Config& c, const ArchInfo& arch) {
  const std::string what = std::string("reading a ") + to_string(s.kv_cache.dtype) + " KV cache";
  if (arch.major * 10 + arch.minor < 89)
    throw NotSupportedYet(what + " on sm_" + std::to_string(arch.major * 10 + arch.minor) +
                          " (the fp8 conversion instruction needs sm_89 or later)");
  if (c.family == kPrefillSm90) throw NotSupportedYet(what + " with prefill_sm90 (prefill_sm80 and decode families read it)");
  for (int d : {s.head_dim, s.head_dim_v})
    if (d % 16 != 0)
      throw NotSupportedYet(what + " with head dim " + std::to_string(d) +
                            " (fp8 rows load in 16-byte chunks: multiples of 16)");
}

// What decode_bw cannot do yet that decode_split does. (Dv 256 plans: its O accumulator is 128
// registers a thread and the loop reloads 12-56 bytes of spilled state per 16-key tile, which
// measured 2.6x faster than decode_split at gemma-2 d256: docs/kernels-decode.md.)
void check_decode_bw(const Spec& s) {
  if (int8_mode(s) != Int8Mode::none && (s.head_dim % 64 != 0 || s.head_dim_v % 64 != 0 || s.head_dim > 192 ||
                                                s.head_dim_v > 192))
    throw NotSupportedYet(std::string("decode_bw with quant ") + to_string(s.quant) + " and head dims " +
                          std::to_string(s.head_dim) + "/" + std::to_string(s.head_dim_v) +
                          " (its int8 path reads rows in 16-byte pieces per lane: multiples of 64 up to 192; "
                          "decode_split serves the others)");
}

// Shared memory as the templates lay it out: attention_sm80.cuh (Q, then STAGES K and V tiles, then
// int8's raw stages), or decode_bw.cuh (Q, then STAGES K and V tiles per warp, which the warps' merge overlays; then
// the warps' row maxima and sums). With an fp8 cache the stages hold fp8 bytes (D + Dv per key)
// and one 16-bit K and V tile follows Q (per warp in decode_bw) for the converted tile, except
// where decode_bw converts in registers (decode_bw.cuh FP8_REGS). decode_bw's int8 stages hold the K
// bytes, the V bytes (or int8_qk's 16-bit V tile) and the keys' fp32 scales, no raw stage. decode_bw's
// merge overlays the pipeline and takes [warps][16][Dv + 8] floats, which may exceed small fp8 stages.
int smem_bytes(const Spec& s, KernelKind kind, const Config& c) {
  const int dq = padded_head_dim(s.head_dim), dv = padded_head_dim(s.head_dim_v);
  // int8 (int8_scales.cuh): K, and V with int8_qkv, also stage raw, one byte per element.
  const Int8Mode i8 = int8_mode(s);
  const int raw_row = i8 == Int8Mode::none ? 0 : s.head_dim + (i8 == Int8Mode::qkv ? s.head_dim_v : 0);
  const bool fp8 = reads_fp8(s, kind), bw = c.family == "decode_bw";
  const int raw = bw ? 0 : c.stages * c.block_n * raw_row;
  const bool fp8_in_registers = fp8 && bw && s.head_dim % 64 == 0 && s.head_dim_v % 64 == 0 && s.head_dim <= 192;
  const int tiles16 = fp8_in_registers ? 0 : fp8 ? 1 : c.stages;
  const int staged = fp8 ? c.stages * c.block_n * (s.head_dim + s.head_dim_v) : 0;
  // decode_bw's int8 stages (decode_bw.cuh kI8Stage): K bytes, V bytes or int8_qk's 16-bit V tile, key scales.
  const int int8_bw = c.stages * c.block_n * (s.head_dim + (i8 == Int8Mode::qkv ? s.head_dim_v : 2 * dv) + 4);
  // One block's K/V stages, or one decode_bw warp's.
  const int kv = bw && i8 != Int8Mode::none ? int8_bw : 2 * tiles16 * c.block_n * (dq + dv) + staged;
  if (!bw) return 2 * c.block_m * std::max(dq, dv) + kv + raw;
  const int pipeline = std::max(2 * 16 * std::max(dq, dv) + c.warps * kv, 4 * c.warps * 16 * (s.head_dim_v + 8));
  return pipeline + 4 * 2 * c.warps * 16;  // then each warp's row max and sum
}

void check_config(const Spec& s, KernelKind kind, const Config& c, const ArchInfo& arch) {
  const bool bw = c.family == "decode_bw";
  const int max_warps = bw ? 8 : 16, max_stages = bw ? 8 : 4;
  if (c.warps < 1 || c.warps > max_warps)
    throw BadConfig("warps " + std::to_string(c.warps) + "; allowed: 1.." + std::to_string(max_warps));
  if (bw && c.block_m != 16)
    throw BadConfig("block_m " + std::to_string(c.block_m) +
                    "; decode_bw blocks hold 16 rows (its warps split the keys), so block_m must be 16");
  if (!bw && c.block_m != 16 * c.warps)
    throw BadConfig("block_m " + std::to_string(c.block_m) + " with " + std::to_string(c.warps) + " warps; " +
                    c.family + " gives each warp 16 rows, so block_m must be " + std::to_string(16 * c.warps));
  check_key_tiles(c, smem_bytes(s, kind, c), arch, max_stages);
}

// Canonical mask code, so specs that compute the same mask share a kernel: a window (-1, 0) is
// causal and a window (-1, -1) is no mask.
// The mask the kernel compiles: a window unbounded on the left and 0 on the right is causal, one
// unbounded on both sides is no mask.
MaskKind compiled_mask(const MaskSpec& m) {
  if (m.kind != MaskKind::sliding_window || m.window_left >= 0) return m.kind;
  if (m.window_right == 0) return MaskKind::causal;
  return m.window_right < 0 ? MaskKind::none : m.kind;
}

}  // namespace

Int8Mode int8_mode(const Spec& s) {
  return s.quant == QuantMode::int8_qkv ? Int8Mode::qkv : s.quant == QuantMode::int8_qk ? Int8Mode::qk : Int8Mode::none;
}

int padded_head_dim(int d) { return (d + 63) / 64 * 64; }

std::vector<std::string> attention_families(KernelKind kind) {
  if (kind == KernelKind::decode) return {"decode_bw", "decode_split"};
  return {kPrefillSm90, "prefill_sm80"};  // prefill_sm90's planner refuses what it cannot make with its reason
}

// decode_bw where it was measured (sm_90): 4 warps on separate keys, 16-key tiles, 3 stages (two
// blocks per SM at d128, 8 KB per warp tile in flight twice; docs/kernels-decode.md). Fewer stages,
// then fewer warps, until it fits the arch.
Config default_decode_bw_config(const Spec& s, const ArchInfo& info) {  // (decode kernels)
  Config c;
  c.family = "decode_bw";
  c.block_m = 16;
  c.block_n = 16;
  c.warps = 4;
  c.stages = 3;
  // int8_qkv: 32-key tiles halve the share of the per-tile key-scale copy and V conversion (the
  // tuner on H200, B=64 L=8192: 262 us against 288 us at 16 keys; docs/kernels-int8.md).
  if (s.quant == QuantMode::int8_qkv) c.block_n = 32;
  while (smem_bytes(s, KernelKind::decode, c) > info.max_smem_per_block && (c.stages > 2 || c.warps > 1)) {
    if (c.stages > 2) --c.stages;
    else c.warps /= 2;
  }
  return c;
}

Config default_attention_config(const Spec& s, KernelKind kind, const std::string& arch) {
  // MLA decode is mla_decode's alone (or refused with its reason when it cannot make the spec).
  if (s.mla.enabled && kind == KernelKind::decode) return default_mla_decode_config(s);
  // On sm_90 decode is decode_bw where it plans (its default shrinks until it fits); where it refuses
  // the spec (check_decode_bw), decode_split serves it, or refuses it with the common reason.
  if (kind == KernelKind::decode && arch_info(arch).major == 9) {
    const Config bw = default_family_config(s, kind, arch, "decode_bw");
    try {
      plan_attention_kernel(s, kind, bw, arch);
      return bw;
    } catch (const NotSupportedYet&) {
    }
  }
  const auto& families = s.tuning.families;
  auto allowed = [&](const std::string& f) {
    return families.empty() || std::find(families.begin(), families.end(), f) != families.end();
  };
  // A window a few tiles wide (gpt-oss: 128) leaves a 128/192-row tile mostly masked: small
  // prefill_sm80 tiles visit 5 key tiles per query tile instead of 3-4 wide ones, and the tuner's
  // winner at W=128 d64 ran 1.76x the sm90 default (docs/performance.md, 2026-11-23).
  if (kind != KernelKind::decode && s.mask.kind == MaskKind::sliding_window && s.mask.window_left >= 0 &&
      s.mask.window_right >= 0 && s.mask.window_left + s.mask.window_right + 1 <= 256 && allowed("prefill_sm80")) {
    Config c = default_family_config(s, kind, arch, "prefill_sm80");
    c.block_m = 32, c.block_n = 32, c.warps = 2;
    return c;
  }
  // On sm_90a prefill is prefill_sm90 wherever its planner takes the spec and the spec's
  // tuning.families allows it.
  if (kind != KernelKind::decode && allowed(kPrefillSm90) && prefill_sm90_refusal(s, kind, arch).empty())
    return default_prefill_sm90_config(s, kind);
  return default_family_config(s, kind, arch, attention_families(kind).back());
}

Config default_family_config(const Spec& s, KernelKind kind, const std::string& arch, const std::string& family) {
  const ArchInfo info = arch_info(arch);
  if (family == "decode_bw") return default_decode_bw_config(s, info);
  if (family == kPrefillSm90) return default_prefill_sm90_config(s, kind);
  if (family == kMlaDecode) return default_mla_decode_config(s);
  Config c;
  c.family = family;
  const int d = std::max(s.head_dim, s.head_dim_v);
  if (kind == KernelKind::decode) { c.block_m = 64; c.warps = 4; c.block_n = d <= 128 ? 64 : 32; }
  else if (d <= 64) { c.block_m = 128; c.warps = 8; c.block_n = 128; }
  else if (d <= 128) { c.block_m = 128; c.warps = 8; c.block_n = 64; }
  else { c.block_m = 64; c.warps = 4; c.block_n = 32; }  // d256: BN 64 spills (O alone is 128 registers)
  c.stages = 2;
  // Shrink the K/V tile until it fits the arch (sm_86/89 have 99 KiB).
  while (c.block_n > 16 && smem_bytes(s, kind, c) > info.max_smem_per_block) c.block_n /= 2;
  return c;
}

KernelPlan plan_attention_kernel(const Spec& s, KernelKind kind, const Config& c, const std::string& arch) {
  const ArchInfo info = arch_info(arch);
  if (!is_attention_family(c.family))
    throw NotSupportedYet("family '" + c.family + "' for " + to_string(kind) + " kernels (available: " +
                          family_list(kind) + ")");
  if (!makes(c.family, kind))
    throw BadConfig("family '" + c.family + "' does not make " + to_string(kind) + " kernels; use " +
                    family_list(kind));
  const bool mla = c.family == kMlaDecode;
  if (!mla) check_supported(s, kind);
  if (c.family == "decode_bw") check_decode_bw(s);
  if (reads_fp8(s, kind)) check_fp8(s, c, info);
  const bool sm90 = c.family == kPrefillSm90;
  if (c.persistent && !sm90)
    throw BadConfig("persistent blocks are prefill_sm90's (sm_90a prefill); family '" + c.family + "' has none");
  if (c.mixed_tiles && !sm90)
    throw BadConfig("mixed_tiles are prefill_sm90's (sm_90a prefill); family '" + c.family + "' has none");
  if (c.paired_tiles && !sm90)
    throw BadConfig("paired_tiles are prefill_sm90's (sm_90a prefill); family '" + c.family + "' has none");
  if (c.paged_gather && !sm90)
    throw BadConfig("paged_gather is prefill_sm90's (sm_90a paged prefill); family '" + c.family + "' has none");
  if (c.v_prewiden && !sm90)
    throw BadConfig("v_prewiden is prefill_sm90's (sm_90a int8_qkv prefill); family '" + c.family + "' has none");
  if (!sm90 && !mla) check_config(s, kind, c, info);

  KernelPlan p = base_plan(s, kind, c, arch);
  p.head_dim = s.head_dim;
  p.head_dim_v = s.head_dim_v;
  p.group = s.group_size();
  p.mask_kind = compiled_mask(s.mask);
  p.softcap = s.softcap > 0;
  p.lse = s.lse.layout == LseLayout::none ? LseOut::none : s.lse.base == LseBase::e ? LseOut::base_e : LseOut::base_2;
  p.alibi = s.alibi;
  p.sinks = s.sinks;
  p.paged = kind != KernelKind::prefill;
  p.pack_gqa = kind == KernelKind::decode;
  p.split_kv = kind == KernelKind::decode;
  p.kv_cache = reads_fp8(s, kind) ? s.kv_cache.dtype : KvDType::same;
  p.int8 = int8_mode(s);
  if (sm90) {
    plan_prefill_sm90(s, kind, c, info, p);
  } else if (mla) {
    plan_mla_decode(s, kind, c, info, p);
  } else {
    p.threads = 32 * c.warps;
    p.smem_bytes = smem_bytes(s, kind, c);
  }
  return p;
}

std::string attention_variant_name(const KernelPlan& p) {
  static const char* masks[] = {"nomask", "causal", "window"};  // by MaskKind
  std::string n = p.family + "_" + to_string(p.spec.dtype) + "_d" + std::to_string(p.head_dim);
  if (p.head_dim_v != p.head_dim) n += "v" + std::to_string(p.head_dim_v);
  n += "_g" + std::to_string(p.group) + "_" + masks[int(p.mask_kind)];
  if (p.softcap) n += "_softcap";
  if (p.alibi != Alibi::none) n += p.alibi == Alibi::linear ? "_alibi" : "_sqrtalibi";
  if (p.sinks) n += "_sinks";
  if (p.lse != LseOut::none) n += p.lse == LseOut::base_e ? "_lse" : "_lse2";
  if (const BlockSparseSpec& b = p.spec.sparse; b.enabled)
    n += "_bs" + std::to_string(b.block_size) + "l" + std::to_string(b.local_blocks) + "v" +
         std::to_string(b.vert_stride) + (b.head_sliding_step < 0 ? "kv" : "s") +  // no '-' in a C name
         std::to_string(std::abs(b.head_sliding_step)) + "h" +
         std::to_string(b.active_head_begin) + "q" + std::to_string(b.q_block_size);
  if (p.paged && (p.family == "prefill_sm80" || p.family == kPrefillSm90)) n += "_paged";
  if (p.kv_cache != KvDType::same) n += p.kv_cache == KvDType::fp8_e4m3 ? "_fp8e4m3" : "_fp8e5m2";
  if (p.int8 != Int8Mode::none) n += p.int8 == Int8Mode::qkv ? "_i8qkv" : "_i8qk";
  return n + "_" + p.config.short_name();
}

}  // namespace attnc
