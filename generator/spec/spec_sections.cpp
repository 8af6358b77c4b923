// The version-1 schema: which fields exist, their types and the checks that need only the field
// itself. Rules that relate two fields live in spec_validate.cpp.
#include "generator/spec/spec_sections.h"

#include <algorithm>
#include <climits>

namespace attnc::spec_detail {
namespace {

constexpr const char* kTopKeys[] = {
    "version", "name",     "head_dim", "head_dim_v",   "num_q_heads", "num_kv_heads",
    "dtype",   "kv_cache", "mask",     "softcap",      "alibi",       "sinks",
    "lse",     "quant",    "mla",      "block_sparse", "kernels",     "tuning"};
constexpr const char* kKvKeys[] = {"dtype", "layout", "page_size"};
constexpr const char* kMaskKeys[] = {"kind", "left", "right"};
constexpr const char* kLseKeys[] = {"layout", "base"};
constexpr const char* kMlaKeys[] = {"kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim",
                                    "v_head_dim"};
constexpr const char* kSparseKeys[] = {"block_size", "local_blocks",      "vert_stride",  "homo_head",
                                       "head_sliding_step", "active_heads", "q_block_size"};
constexpr const char* kTuningKeys[] = {"block_m", "block_n", "warps",
                                       "stages",  "splits",  "families"};

using Fields = std::map<std::string, Field>;

const Field* find(const Fields& f, const char* key) {
  const auto it = f.find(key);
  return it == f.end() ? nullptr : &it->second;
}

// A positive multiple of `m` in [lo, hi].
bool multiple_in(Reader& r, const Field& f, int m, int lo, int hi, int& out) {
  const std::string rule = cat("a multiple of ", m, " in ", lo, "..", hi);
  int v = 0;
  if (!r.int_in(f, lo, hi, v, rule)) return false;
  if (v % m != 0) {
    r.fail(f, cat(v, " is not a multiple of ", m, "; allowed: ", rule));
    return false;
  }
  out = v;
  return true;
}

void missing(Reader& r, const Field& parent, const std::string& key, const std::string& what) {
  r.missing(parent.at, parent.path + "." + key, what);
}

void read_kv_cache(Reader& r, const Field& f, KvCacheSpec& kv) {
  if (!r.is_map(f, "{dtype: same, layout: NHD, page_size: 16}")) return;
  const Fields m = r.mapping(f.value, f.path, kKvKeys);
  if (auto* x = find(m, "dtype")) r.enumeration(*x, kv_dtype_from_string, kv.dtype);
  if (auto* x = find(m, "layout")) r.enumeration(*x, kv_layout_from_string, kv.layout);
  if (auto* x = find(m, "page_size")) {
    const char* rule = "1..1024, a power of two or a multiple of 16";
    int v = 0;
    if (r.int_in(*x, 1, 1024, v, rule)) {
      if ((v & (v - 1)) != 0 && v % 16 != 0)
        r.fail(*x, cat(v, " is neither a power of two nor a multiple of 16; allowed: ", rule));
      else
        kv.page_size = v;
    }
  }
}

void read_mask(Reader& r, const Field& f, MaskSpec& mask) {
  constexpr const char* kExample = "{kind: sliding_window, left: 4095, right: 0}";
  if (f.value.IsScalar()) {
    if (!r.enumeration(f, mask_kind_from_string, mask.kind)) return;
    if (mask.kind == MaskKind::sliding_window)
      r.fail(f,
             cat("sliding_window needs its window sides; allowed: a mapping such as ", kExample));
    return;
  }
  if (!r.is_map(f, kExample)) return;
  const Fields m = r.mapping(f.value, f.path, kMaskKeys);
  const Field* kind = find(m, "kind");
  if (!kind) return missing(r, f, "kind", "allowed: " + join(enum_names(MaskKind{})));
  if (!r.enumeration(*kind, mask_kind_from_string, mask.kind)) return;
  if (mask.kind != MaskKind::sliding_window) {
    for (const char* side : {"left", "right"})
      if (auto* x = find(m, side))
        r.fail(*x,
               cat("only allowed with kind: sliding_window (kind is ", to_string(mask.kind), ")"));
    return;
  }
  const char* rule = "-1 (unbounded) or a number of tokens >= 0";
  bool sides_ok = true;
  for (const char* side : {"left", "right"}) {
    int& out = side[0] == 'l' ? mask.window_left : mask.window_right;
    if (auto* x = find(m, side))
      sides_ok = r.int_in(*x, -1, INT_MAX, out, rule) && sides_ok;
    else {
      missing(r, f, side,
              cat("a sliding window needs both sides: ", rule, " (right: 0 for a causal window)"));
      sides_ok = false;
    }
  }
  if (sides_ok && mask.window_left < 0 && mask.window_right < 0)
    r.fail(
        f,
        "a window unbounded on both sides masks nothing; allowed: at least one of left, right >= 0 "
        "(mask: none for no mask)");
}

void read_lse(Reader& r, const Field& f, LseSpec& lse) {
  if (!r.is_map(f, "{layout: head_major, base: e}")) return;
  const Fields m = r.mapping(f.value, f.path, kLseKeys);
  if (auto* x = find(m, "layout")) r.enumeration(*x, lse_layout_from_string, lse.layout);
  if (auto* x = find(m, "base")) r.enumeration(*x, lse_base_from_string, lse.base);
}

// `none` disables an optional section explicitly (the canonical form writes it that way).
bool section_off(const Field& f) { return f.value.IsScalar() && f.value.Scalar() == "none"; }

void read_mla(Reader& r, const Field& f, MlaSpec& mla) {
  if (section_off(f)) return;
  if (!r.is_map(
          f, "{kv_lora_rank: 512, qk_rope_head_dim: 64, qk_nope_head_dim: 128, v_head_dim: 128}"))
    return;
  mla.enabled = true;
  const Fields m = r.mapping(f.value, f.path, kMlaKeys);
  int* out[] = {&mla.kv_lora_rank, &mla.qk_rope_head_dim, &mla.qk_nope_head_dim, &mla.v_head_dim};
  for (std::size_t i = 0; i < 4; ++i) {
    const int hi = i == 0 ? 1024 : 256;
    if (auto* x = find(m, kMlaKeys[i]))
      multiple_in(r, *x, 8, 8, hi, *out[i]);
    else
      missing(r, f, kMlaKeys[i],
              cat("MLA needs all four dims; allowed: a multiple of 8 in 8..", hi));
  }
}

void read_active_heads(Reader& r, const Field& f, BlockSparseSpec& sp) {
  if (!r.is_seq(f, "[0, 32]")) return;
  if (f.value.size() != 2) {
    r.fail(f, cat("expected [begin, end], got a list of ", f.value.size(), " items"));
    return;
  }
  int b = 0, e = 0;
  const bool b_ok = r.int_in(r.item(f, 0), 0, 65535, b, "0..65535");
  const bool e_ok = r.int_in(r.item(f, 1), 1, 65536, e, "1..65536");
  if (!b_ok || !e_ok) return r.fields.failed(f.path);
  if (e <= b) return r.fail(f, cat("[", b, ", ", e, ") is empty; allowed: begin < end"));
  sp.active_head_begin = b;
  sp.active_head_end = e;
}

void read_sparse(Reader& r, const Field& f, BlockSparseSpec& sp) {
  if (section_off(f)) return;
  if (!r.is_map(f, "{block_size: 64, local_blocks: 16, vert_stride: 8}")) return;
  sp.enabled = true;
  const Fields m = r.mapping(f.value, f.path, kSparseKeys);
  if (auto* x = find(m, "block_size")) multiple_in(r, *x, 16, 16, 65536, sp.block_size);
  if (auto* x = find(m, "local_blocks")) r.int_in(*x, 0, 1 << 20, sp.local_blocks, "0..1048576");
  if (auto* x = find(m, "vert_stride"))
    r.int_in(*x, 1, 1 << 20, sp.vert_stride, "1..1048576 (1 = every block, i.e. dense)");
  if (auto* x = find(m, "homo_head")) r.boolean(*x, sp.homo_head);
  if (auto* x = find(m, "head_sliding_step"))
    r.int_in(*x, -65535, 65535, sp.head_sliding_step,
             "-65535..65535 (0 = derived; negative slides along KV heads)");
  if (auto* x = find(m, "active_heads")) read_active_heads(r, *x, sp);
  if (auto* x = find(m, "q_block_size")) multiple_in(r, *x, 16, 16, 65536, sp.q_block_size);
}

void read_kernels(Reader& r, const Field& f, KernelSet& k) {
  if (!r.is_seq(f, "[prefill, decode]")) return;
  if (f.value.size() == 0)
    return r.fail(f, "empty; allowed: one or more of " + join(kernel_names()));
  k = KernelSet{false, false, false, false};
  bool* flag[] = {&k.prefill, &k.decode, &k.merge, &k.cache_write};
  for (std::size_t i = 0; i < f.value.size(); ++i) {
    const Field item = r.item(f, i);
    std::string s;
    if (!r.word(item, kernel_names(), s)) continue;
    const auto names = kernel_names();
    const auto at = std::find_if(names.begin(), names.end(), [&](const char* n) { return s == n; });
    bool& on = *flag[at - names.begin()];
    if (on) r.fail(item, cat("'", s, "' is listed twice"));
    on = true;
  }
}

void read_int_list(Reader& r, const Field& f, int hi, const std::string& rule, const char* example,
                   std::vector<int>& out) {
  if (!r.is_seq(f, example)) return;
  for (std::size_t i = 0; i < f.value.size(); ++i) {
    const Field item = r.item(f, i);
    int v = 0;
    if (!r.int_in(item, 1, hi, v, rule)) continue;
    if (std::find(out.begin(), out.end(), v) != out.end())
      r.fail(item, cat(v, " is listed twice"));
    else
      out.push_back(v);
  }
}

void read_tuning(Reader& r, const Field& f, TuningSpaceSpec& t) {
  if (!r.is_map(f, "{block_m: [64, 128], warps: [4, 8]}")) return;
  const Fields m = r.mapping(f.value, f.path, kTuningKeys);
  if (auto* x = find(m, "block_m")) read_int_list(r, *x, 1024, "1..1024", "[64, 128]", t.block_m);
  if (auto* x = find(m, "block_n")) read_int_list(r, *x, 1024, "1..1024", "[32, 64]", t.block_n);
  if (auto* x = find(m, "warps"))
    read_int_list(r, *x, 32, "1..32 (a block holds at most 1024 threads)", "[4, 8]", t.warps);
  if (auto* x = find(m, "stages")) read_int_list(r, *x, 16, "1..16", "[2, 3]", t.stages);
  if (auto* x = find(m, "splits")) read_int_list(r, *x, 1024, "1..1024", "[1, 2, 4]", t.splits);
  if (auto* x = find(m, "families")) {
    if (!r.is_seq(*x, "[prefill_sm80, prefill_sm90, decode_split]")) return;
    for (std::size_t i = 0; i < x->value.size(); ++i) {
      const Field item = r.item(*x, i);
      std::string s;
      if (!r.word(item, tuning_family_names(), s)) continue;
      if (std::find(t.families.begin(), t.families.end(), s) != t.families.end())
        r.fail(item, cat("'", s, "' is listed twice"));
      else
        t.families.push_back(s);
    }
  }
}

}  // namespace

void read_spec(Reader& r, const YAML::Node& root, Spec& s) {
  const Fields m = r.mapping(root, "", kTopKeys);
  const Loc top = r.fields.top;

  if (auto* x = find(m, "version")) {
    long long v = 0;
    if (r.integer(*x, v) && v != 1)
      r.fail(*x, cat(v, " is not supported (this attnc reads spec version 1); allowed: 1"));
  } else {
    r.missing(top, "version", "a spec starts with `version: 1`");
  }
  if (auto* x = find(m, "name")) r.text(*x, s.name);

  const int kMaxInt = INT_MAX;
  // Head dims: only "fits an int" here; the allowed range depends on mla (spec_validate.cpp).
  if (auto* x = find(m, "head_dim")) r.int_in(*x, INT_MIN, kMaxInt, s.head_dim, kDimRange);
  if (auto* x = find(m, "head_dim_v")) r.int_in(*x, INT_MIN, kMaxInt, s.head_dim_v, kDimRange);
  if (auto* x = find(m, "num_q_heads"))
    r.int_in(*x, 1, 65535, s.num_q_heads, "1..65535");
  else
    r.missing(top, "num_q_heads", "every spec gives its number of query heads (1..65535)");
  if (auto* x = find(m, "num_kv_heads"))
    r.int_in(*x, 1, 65535, s.num_kv_heads, "1..65535, a divisor of num_q_heads");

  if (auto* x = find(m, "dtype")) r.enumeration(*x, dtype_from_string, s.dtype);
  if (auto* x = find(m, "kv_cache")) read_kv_cache(r, *x, s.kv_cache);
  if (auto* x = find(m, "mask")) read_mask(r, *x, s.mask);
  if (auto* x = find(m, "softcap")) {
    double v = 0;
    if (r.number(*x, v)) {
      const float f = static_cast<float>(v);
      if (v < 0)
        r.fail(*x, cat(v, " is negative; allowed: 0 (off) or a finite number > 0"));
      else if (v > 0 && (f == 0 || f > 3.0e38f))
        r.fail(*x, cat(v, " does not fit a float; allowed: 0 (off) or a finite number > 0"));
      else
        s.softcap = v == 0 ? 0.0f : f;  // also turns -0 into 0
    }
  }
  if (auto* x = find(m, "alibi")) r.enumeration(*x, alibi_from_string, s.alibi);
  if (auto* x = find(m, "sinks")) r.boolean(*x, s.sinks);
  if (auto* x = find(m, "lse")) read_lse(r, *x, s.lse);
  if (auto* x = find(m, "quant")) r.enumeration(*x, quant_from_string, s.quant);
  if (auto* x = find(m, "mla")) read_mla(r, *x, s.mla);
  if (auto* x = find(m, "block_sparse")) read_sparse(r, *x, s.sparse);
  if (auto* x = find(m, "kernels")) read_kernels(r, *x, s.kernels);
  if (auto* x = find(m, "tuning")) read_tuning(r, *x, s.tuning);
}

}  // namespace attnc::spec_detail
