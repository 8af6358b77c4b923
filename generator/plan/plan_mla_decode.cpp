#include "generator/plan/plan_mla_decode.h"

namespace attnc {
namespace {

constexpr int kRows = 64, kKeys = 64, kRowDim = kMlaLatentDim + kMlaRopeDim;

void check_config(const Config& c, const ArchInfo& arch, bool fp8) {
  const bool narrow = c.block_m == kMlaNarrowRows;
  if ((c.block_m != kRows && !narrow) || c.block_n != kKeys || (c.warps != 12 && !(narrow && c.warps == 8)))
    throw BadConfig("mla_decode runs 64 (or, over an fp8 cache, 16) packed rows by 64-key tiles on two consumer "
                    "warpgroups and a producer: block_m 64 or 16, block_n 64, warps 12 (block_m 16 also warps 8: "
                    "one consumer) (got " + c.short_name() + ")");
  if (c.block_m == kMlaNarrowRows && !fp8)
    throw BadConfig("mla_decode with block_m 16 converts fp8 keys in registers: it reads fp8 caches only (got " +
                    c.short_name() + " over a 16-bit cache; use block_m 64)");
  check_key_tiles(c, mla_decode_smem_bytes(c, fp8), arch, 4);
}

}  // namespace

std::string mla_decode_refusal(const Spec& s, KernelKind kind, const std::string& arch) {
  if (kind != KernelKind::decode) return "mla_decode makes decode kernels only";
  if (!s.mla.enabled) return "mla_decode reads an MLA latent cache; the spec has no mla section";
  if (arch != "sm_90a") return "mla_decode needs sm_90a (wgmma, TMA, setmaxnreg); the target is " + arch;
  if (s.mla.kv_lora_rank != kMlaLatentDim || s.mla.qk_rope_head_dim != kMlaRopeDim)
    return "mla_decode with kv_lora_rank " + std::to_string(s.mla.kv_lora_rank) + " and qk_rope_head_dim " +
           std::to_string(s.mla.qk_rope_head_dim) + " (built for 512 and 64, DeepSeek-V2/V3)";
  if (s.kv_cache.dtype != KvDType::same && s.kv_cache.dtype != KvDType::fp8_e4m3 &&
      s.kv_cache.dtype != KvDType::fp8_e5m2)
    return std::string("mla_decode reading a ") + to_string(s.kv_cache.dtype) +
           " latent cache (16-bit, fp8_e4m3 and fp8_e5m2 caches only)";
  if (s.softcap > 0) return "mla_decode with softcap";
  if (s.sinks) return "mla_decode with sinks";
  if (s.kv_cache.page_size % kKeys != 0)
    return "mla_decode with page_size " + std::to_string(s.kv_cache.page_size) +
           " (its 64-key tiles are TMA boxes inside one page: page sizes must be multiples of 64)";
  return "";
}

Config default_mla_decode_config() {
  Config c;
  c.family = kMlaDecode;
  c.block_m = kRows;
  c.block_n = kKeys;
  c.warps = 12;
  c.stages = 2;  // Q and two 72 KiB tiles fill the 227 KiB
  return c;
}

Config default_mla_decode_config(const Spec& s) {
  Config c = default_mla_decode_config();
  // One token of H <= 16 heads fills 16 rows: the narrow layout skips the padded rows and converts the
  // fp8 keys in registers (docs/kernels-mla-decode.md, v3-fp8).
  if (s.kv_cache.dtype != KvDType::same && s.num_q_heads <= kMlaNarrowRows) c.block_m = kMlaNarrowRows;
  return c;
}

int mla_decode_smem_bytes(const Config& c, bool fp8) {
  if (c.block_m == kMlaNarrowRows) {
    // Permuted Q, each consumer's fp16 V tile and P^T tile, the byte ring; per consumer its warps'
    // maxima and final state, barriers, the warps' |q| maxima (mla_decode_narrow.cuh's Shared).
    const int consumers = c.warps / 4 - 1;  // warpgroups beside the producer
    const int q = 2 * kMlaNarrowRows * kRowDim, v = consumers * 2 * kKeys * kMlaLatentDim;
    const int p = consumers * 2 * kMlaNarrowRows * kKeys, ring = c.stages * kKeys * kRowDim;
    const int shared = 4 * consumers * (4 * kMlaNarrowRows + 2 * kMlaNarrowRows) + 8 * 2 * c.stages + 4 * 4 * consumers;
    return 1024 + q + v + p + ring + shared;
  }
  const int q = 2 * kRows * kRowDim, tile = 2 * kKeys * kRowDim, p = 2 * kRows * kKeys;
  // An fp8 cache: the ring holds the tiles' bytes, converted into one 16-bit tile the products read.
  const int tiles = fp8 ? tile + c.stages * kKeys * kRowDim : c.stages * tile;
  // Row maxima and sums of both consumers; per stage a full barrier per 64-column block and an empty
  // one; the four Q slabs' fp16 exponents (fp8).
  const int shared = 4 * 4 * kRows + 8 * (kRowDim / 64 + 1) * c.stages + 4 * 4;
  return 1024 + q + tiles + p + shared;
}

void plan_mla_decode(const Spec& s, KernelKind kind, const Config& c, const ArchInfo& arch, KernelPlan& p) {
  if (const std::string why = mla_decode_refusal(s, kind, arch.name); !why.empty()) throw NotSupportedYet(why);
  const bool fp8 = s.kv_cache.dtype != KvDType::same;
  check_config(c, arch, fp8);
  p.head_dim = kRowDim;
  p.head_dim_v = kMlaLatentDim;
  p.group = s.num_q_heads;  // one latent head shared by every q head
  p.threads = 32 * c.warps;
  p.smem_bytes = mla_decode_smem_bytes(c, fp8);
}

}  // namespace attnc
