// Rules that relate fields to each other, and the defaults that depend on other fields.
// Each rule only fires when every field it reads arrived intact (FieldMap::ok), so one bad value
// produces one error, not a cascade.
#include <algorithm>
#include <functional>

#include "generator/spec/spec_detail.h"

namespace attnc::spec_detail {
namespace {

using Err = std::function<void(std::initializer_list<std::string_view> at, const std::string& path,
                               const std::string& message)>;

std::string divisors_of(int n) {
  std::vector<int> d;
  for (int i = 1; i <= n; ++i)
    if (n % i == 0) d.push_back(i);
  if (d.size() > 16) return cat("a divisor of ", n);
  std::string out = cat("a divisor of ", n, ": ");
  for (std::size_t i = 0; i < d.size(); ++i) out += cat(i ? ", " : "", d[i]);
  return out;
}

bool is_int8(QuantMode q) { return q == QuantMode::int8_qkv || q == QuantMode::int8_qk; }
bool is_fp8(KvDType d) { return d == KvDType::fp8_e4m3 || d == KvDType::fp8_e5m2; }

void check_dim(const FieldMap& f, const Err& err, const char* path, int d) {
  if (!f.present(path) || !f.ok(path)) return;
  if (d % 8 != 0)
    err({path}, path, cat(d, " is not a multiple of 8; allowed: ", kDimRule));
  else if (d < 8 || d > 256)
    err({path}, path, cat(d, " is out of range; allowed: ", kDimRange));
}

// MLA: the prefill is MHA with QK dim nope + rope and V dim v_head_dim (docs/attention-semantics.md
// §7.3); head_dim and head_dim_v, when written, must agree.
void resolve_mla(Spec& s, const FieldMap& f, const Err& err) {
  const MlaSpec& m = s.mla;
  const int qk = m.qk_nope_head_dim + m.qk_rope_head_dim;
  if (f.present("head_dim") && f.ok("head_dim") && s.head_dim != qk)
    err({"head_dim"}, "head_dim",
        cat(s.head_dim,
            " does not match mla: qk_nope_head_dim + qk_rope_head_dim = ", m.qk_nope_head_dim,
            " + ", m.qk_rope_head_dim, " = ", qk, "; allowed: ", qk, " or leave head_dim out"));
  if (f.present("head_dim_v") && f.ok("head_dim_v") && s.head_dim_v != m.v_head_dim)
    err({"head_dim_v"}, "head_dim_v",
        cat(s.head_dim_v, " does not match mla.v_head_dim (", m.v_head_dim,
            "); allowed: ", m.v_head_dim, " or leave head_dim_v out"));
  s.head_dim = qk;
  s.head_dim_v = m.v_head_dim;
}

void resolve_heads(Spec& s, const FieldMap& f, const Err& err) {
  if (f.present("mla") && !f.ok("mla")) return;  // unreadable mla: the shape is unknown
  if (s.mla.enabled) {
    // Compare against the MLA dims only when all four arrived.
    bool dims_ok = f.ok("mla");
    for (const char* d :
         {"mla.kv_lora_rank", "mla.qk_rope_head_dim", "mla.qk_nope_head_dim", "mla.v_head_dim"})
      dims_ok = dims_ok && f.ok(d);
    if (dims_ok) resolve_mla(s, f, err);
    if (f.present("num_kv_heads") && f.ok("num_kv_heads") && f.ok("num_q_heads") &&
        s.num_kv_heads != s.num_q_heads)
      err({"num_kv_heads"}, "num_kv_heads",
          cat(s.num_kv_heads, " differs from num_q_heads (", s.num_q_heads,
              "); MLA prefill is multi-head attention over up-projected K/V "
              "(docs/attention-semantics.md "
              "§1.10, §7.3); allowed: ",
              s.num_q_heads, " or leave num_kv_heads out"));
    s.num_kv_heads = s.num_q_heads;
    return;
  }
  if (!f.present("head_dim") && f.ok("head_dim"))
    err({}, "head_dim",
        cat("missing; allowed: ", kDimRule, " (or an mla section, which derives it)"));
  check_dim(f, err, "head_dim", s.head_dim);
  check_dim(f, err, "head_dim_v", s.head_dim_v);
  if (!f.present("head_dim_v")) s.head_dim_v = s.head_dim;

  if (!f.present("num_kv_heads")) {
    s.num_kv_heads = s.num_q_heads;
  } else if (f.ok("num_kv_heads") && f.ok("num_q_heads") && s.num_q_heads % s.num_kv_heads != 0) {
    err({"num_kv_heads"}, "num_kv_heads",
        cat(s.num_kv_heads, " does not divide num_q_heads (", s.num_q_heads,
            "): each KV head serves a whole group of query heads (docs/attention-semantics.md §1.10); "
            "allowed: ",
            divisors_of(s.num_q_heads)));
  }
}

void check_quant(const Spec& s, const FieldMap& f, const Err& err) {
  const QuantMode q = s.quant;
  const KvDType kv = s.kv_cache.dtype;
  if (f.ok("quant") && f.ok("kv_cache.dtype")) {
    if (is_int8(q) && kv != KvDType::int8)
      err({"quant", "kv_cache.dtype", "kv_cache"}, "quant",
          cat(to_string(q), " stores K", q == QuantMode::int8_qk ? "" : " and V",
              " in the cache as int8 with scales (docs/attention-semantics.md §5.2), ",
              "but kv_cache.dtype is ", to_string(kv),
              "; allowed: kv_cache.dtype: int8 with quant ", to_string(q)));
    else if (kv == KvDType::int8 && !is_int8(q))
      err({"kv_cache.dtype", "quant"}, "kv_cache.dtype",
          cat("int8 needs the scales of an int8 quant mode (docs/attention-semantics.md §5.2), ",
              "but quant is ", to_string(q),
              "; allowed: quant: int8_qkv or int8_qk with an int8 cache"));
    if (q == QuantMode::fp8 && !is_fp8(kv))
      err({"quant", "kv_cache.dtype", "kv_cache"}, "quant",
          cat("fp8 reads an fp8 KV cache with descales (docs/attention-semantics.md §5.1), ",
              "but kv_cache.dtype is ", to_string(kv),
              "; allowed: kv_cache.dtype fp8_e4m3 or fp8_e5m2"));
  }
  if (is_int8(q) && s.sinks && f.ok("quant") && f.ok("sinks"))
    err({"sinks", "quant"}, "sinks",
        cat("not supported with quant: ", to_string(q),
            "; the int8 attention paths carry no sinks (docs/attention-semantics.md §1.7, §5.2); ",
            "allowed: sinks: false with an int8 quant mode"));
}

void check_mla(const Spec& s, const FieldMap& f, const Err& err) {
  if (!s.mla.enabled || !f.ok("mla")) return;
  if (s.alibi != Alibi::none && f.ok("alibi"))
    err({"alibi"}, "alibi",
        cat(to_string(s.alibi),
            " cannot combine with mla: MLA encodes positions in its decoupled "
            "RoPE part and its absorbed decode has no per-position bias "
            "(docs/attention-semantics.md §7.3); allowed: alibi: none with mla"));
  if (is_int8(s.quant) && f.ok("quant"))
    err({"quant"}, "quant",
        cat(to_string(s.quant),
            " cannot combine with mla: int8 modes scale K and V separately, but "
            "MLA decode reads V from the same latent cache entry as K "
            "(docs/attention-semantics.md §7.3); allowed: none or fp8 with mla"));
}

// Block-sparse (docs/attention-semantics.md §7.4): causal only, no softcap/ALiBi/window; blocks cover
// whole pages; the per-head pattern needs the rank's global head range and sliding step.
void check_sparse(Spec& s, const FieldMap& f, const Err& err) {
  BlockSparseSpec& sp = s.sparse;
  if (!sp.enabled || !f.ok("block_sparse")) return;
  const char* why =
      "block-sparse attention is causal only, without softcap, ALiBi or a window "
      "(docs/attention-semantics.md §7.4)";
  if (f.ok("mask") && s.mask.kind != MaskKind::causal)
    err({"mask", "block_sparse"}, "mask",
        cat(to_string(s.mask.kind), " cannot combine with block_sparse: ", why,
            "; allowed: causal"));
  if (f.ok("softcap") && s.softcap > 0)
    err({"softcap", "block_sparse"}, "softcap",
        cat(s.softcap, " cannot combine with block_sparse: ", why, "; allowed: 0"));
  if (f.ok("alibi") && s.alibi != Alibi::none)
    err({"alibi", "block_sparse"}, "alibi",
        cat(to_string(s.alibi), " cannot combine with block_sparse: ", why, "; allowed: none"));
  if (f.ok("block_sparse.block_size") && f.ok("kv_cache.page_size") &&
      sp.block_size % s.kv_cache.page_size != 0)
    err({"block_sparse.block_size", "block_sparse"}, "block_sparse.block_size",
        cat(sp.block_size, " is not a multiple of kv_cache.page_size (", s.kv_cache.page_size,
            "): a sparse block must cover whole pages; allowed: a multiple of 16 and of ",
            s.kv_cache.page_size));

  const bool ranged = f.present("block_sparse.active_heads");
  if (!ranged) {
    sp.active_head_begin = 0;
    sp.active_head_end = s.num_q_heads;
  } else if (f.ok("block_sparse.active_heads") && f.ok("num_q_heads") &&
             sp.active_head_end - sp.active_head_begin != s.num_q_heads) {
    err({"block_sparse.active_heads"}, "block_sparse.active_heads",
        cat("[", sp.active_head_begin, ", ", sp.active_head_end, ") holds ",
            sp.active_head_end - sp.active_head_begin, " heads but num_q_heads is ", s.num_q_heads,
            "; allowed: [begin, begin + ", s.num_q_heads, ")"));
  }

  const char* step = "block_sparse.head_sliding_step";
  if (sp.homo_head) {
    if (sp.head_sliding_step != 0 && f.ok(step) && f.ok("block_sparse.homo_head"))
      err({step}, step,
          cat(sp.head_sliding_step,
              " contradicts homo_head: true (every head uses the same "
              "offset); allowed: 0 or leave it out"));
    sp.head_sliding_step = 0;
  } else if (sp.head_sliding_step == 0 && f.ok(step)) {
    if (!ranged)
      sp.head_sliding_step = std::max(1, sp.vert_stride / s.num_q_heads);
    else if (f.ok("block_sparse.active_heads"))  // a bad range is reported already
      err({step, "block_sparse.active_heads"}, step,
          "cannot be derived: with active_heads this spec is one tensor-parallel rank, and the "
          "derived step max(1, vert_stride / total_heads) needs the model's total head count "
          "(docs/attention-semantics.md §7.4); allowed: a non-zero step, e.g. 1");
  }

  // The seed's q_block_size: query tiles of several sparse rows that share the union of their
  // patterns (docs/conventions.md); smaller tiles than a block are refused there too.
  const char* qbs = "block_sparse.q_block_size";
  if (sp.q_block_size != 0 && f.ok(qbs) && f.ok("block_sparse.block_size") &&
      sp.q_block_size % sp.block_size != 0)
    err({qbs, "block_sparse.block_size"}, qbs,
        cat(sp.q_block_size, " is not a multiple of block_sparse.block_size (", sp.block_size,
            "): a query block holds whole sparse rows; allowed: ", sp.block_size, ", ",
            2 * sp.block_size, ", ... or leave it out"));
  // Sliding on KV heads numbers this rank's KV heads from active_heads' begin / group.
  if (sp.head_sliding_step < 0 && f.ok(step) && f.ok("block_sparse.active_heads") && f.ok("num_kv_heads") &&
      s.num_kv_heads > 0 && s.num_q_heads % s.num_kv_heads == 0 && sp.active_head_begin % s.group_size() != 0)
    err({step, "block_sparse.active_heads"}, step,
        cat(sp.head_sliding_step, " slides along KV heads, but active_heads begins at q head ",
            sp.active_head_begin, ", inside a group of ", s.group_size(),
            " q heads; allowed: a begin that is a multiple of ", s.group_size(),
            ", or a step >= 0"));
}

}  // namespace

Spec normalised(Spec s) {
  // Sentinels documented in spec.h, for Specs built in code rather than parsed.
  if (s.mla.enabled) {
    s.head_dim = s.mla.qk_nope_head_dim + s.mla.qk_rope_head_dim;
    s.head_dim_v = s.mla.v_head_dim;
    s.num_kv_heads = s.num_q_heads;
  }
  if (BlockSparseSpec& sp = s.sparse; sp.enabled) {
    if (sp.active_head_end < 0) sp.active_head_end = sp.active_head_begin + s.num_q_heads;
    if (sp.q_block_size == 0) sp.q_block_size = sp.block_size;
    if (sp.homo_head)
      sp.head_sliding_step = 0;
    else if (sp.head_sliding_step == 0)
      sp.head_sliding_step = std::max(1, sp.vert_stride / std::max(1, s.num_q_heads));
  }
  // What cannot change the result must not split the id.
  if (s.lse.layout == LseLayout::none) s.lse.base = LseBase::e;  // no LSE output: base unused
  if (s.mask.kind != MaskKind::sliding_window) s.mask.window_left = s.mask.window_right = -1;
  if (s.softcap == 0) s.softcap = 0.0f;  // -0
  auto& t = s.tuning;                    // search spaces are sets
  for (auto* v : {&t.block_m, &t.block_n, &t.warps, &t.stages, &t.splits})
    std::sort(v->begin(), v->end());
  const auto fam = tuning_family_names();
  std::sort(t.families.begin(), t.families.end(), [&](const std::string& a, const std::string& b) {
    return std::find(fam.begin(), fam.end(), a) < std::find(fam.begin(), fam.end(), b);
  });
  return s;
}

void resolve_and_validate(Spec& s, const FieldMap& f, Diags& d) {
  const Err err = [&](std::initializer_list<std::string_view> at, const std::string& path,
                      const std::string& message) { d.error(f.at(at), path, message); };
  resolve_heads(s, f, err);
  check_quant(s, f, err);
  check_mla(s, f, err);
  check_sparse(s, f, err);

  s = normalised(std::move(s));
}

}  // namespace attnc::spec_detail
