// Spec + Config + arch -> KernelPlan: choose the template family, derive its compile-time
// constants, shared memory and launch shape. A valid spec that no template generates yet is
// refused here with NotSupportedYet ("not supported yet: ..."), never silently mis-generated.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "generator/plan/config.h"
#include "generator/spec/spec.h"

namespace attnc {

// prefill: varlen Q/K/V, contiguous K/V. prefill_paged: K/V read from a paged cache. decode: paged,
// query heads of one kv head packed into the rows of a tile, split-KV with a combine entry.
// merge: merge_attn_states. cache_write: reshape_and_cache_flash. lse_correct: decode context
// parallelism's LSE correction (an op of the layer, never in a spec's `kernels:` list).
enum class KernelKind { prefill, prefill_paged, decode, merge, cache_write, lse_correct };
const char* to_string(KernelKind);
std::vector<KernelKind> kernels_of(const Spec&);

class NotSupportedYet : public std::runtime_error {
 public:
  explicit NotSupportedYet(const std::string& what) : std::runtime_error("not supported yet: " + what) {}
};

// A Config that cannot work for this spec or arch (tile shape, shared memory over the limit).
class BadConfig : public std::invalid_argument {
 public:
  explicit BadConfig(const std::string& what) : std::invalid_argument("bad config: " + what) {}
};

// Architectures the generator targets, with their per-block shared-memory limit.
struct ArchInfo {
  std::string name;     // "sm_90a"
  int major = 9, minor = 0;
  int max_smem_per_block = 227 * 1024;
};
ArchInfo arch_info(const std::string& arch);  // throws std::invalid_argument listing the allowed archs
const std::vector<std::string>& supported_archs();

struct KernelPlan {
  KernelKind kind = KernelKind::prefill;
  std::string family;
  std::string arch;
  Spec spec;
  std::string spec_id;
  Config config;

  // Compile-time constants of the traits struct.
  int head_dim = 0, head_dim_v = 0, group = 1;
  MaskKind mask_kind = MaskKind::none;  // causal also when the spec writes it as a window (left -1, right 0)
  bool softcap = false;
  LseOut lse = LseOut::none;
  Alibi alibi = Alibi::none;
  bool sinks = false;
  bool paged = false;       // K/V from a paged cache
  bool pack_gqa = false;    // rows of a tile are (token, q head of the group) pairs
  bool split_kv = false;    // runtime num_splits > 1 allowed (partials + combine entry)
  KvDType kv_cache = KvDType::same;  // what the paged K/V hold: 16-bit, or fp8 bytes (fp8_e4m3 / fp8_e5m2)
  Int8Mode int8 = Int8Mode::none;  // int8 Q/K (and V): the spec's int8 quant mode

  // Launch shape.
  int threads = 0;
  int smem_bytes = 0;

  // The parts of the kernel name that identify the compiled code (not the spec): specs that need
  // the same code get the same name, source and cubin.
  std::string variant_name() const;
  // KV heads the kernel reads: the spec's, except mla_decode's one latent head.
  int kv_heads() const { return spec.num_q_heads / group; }
};

// The heuristic default for a spec and kind (what runs before any tuning).
Config default_config(const Spec&, KernelKind, const std::string& arch);

// The default config overridden by the fields of `config_json` (Config::from_json); a JSON that
// names another family starts from that family's defaults, so {"family": "prefill_sm90"} alone is
// a whole config. Throws std::invalid_argument for a bad JSON.
Config config_for(const Spec&, KernelKind, const std::string& arch, const std::string& config_json);

KernelPlan plan_kernel(const Spec&, KernelKind, const Config&, const std::string& arch);

// The fields every family's plan starts from: kind, family (the config's), arch, spec and its id,
// config. Families fill in their constants and launch shape.
KernelPlan base_plan(const Spec&, KernelKind, const Config&, const std::string& arch);

// The checks the attention families share (BadConfig): block_n a multiple of 16 in 16..256,
// stages 2..max_stages, and `smem_bytes` within the arch's per-block limit.
void check_key_tiles(const Config&, int smem_bytes, const ArchInfo& arch, int max_stages);

}  // namespace attnc
