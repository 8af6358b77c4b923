// Writing specs back out: the canonical form (what the id hashes) and the full YAML.
// Written by hand, not through yaml-cpp's emitter, so the bytes (and so every id) can never
// change with a yaml-cpp upgrade.
#include <charconv>

#include "generator/hash.h"
#include "generator/spec/spec_detail.h"

namespace attnc {
namespace {
using spec_detail::cat;

// Shortest text that reads back to the same float.
std::string number(float v) {
  if (v == 0) return "0";
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, end);
}

std::string list(const std::vector<int>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += cat(i ? ", " : "", v[i]);
  return out + "]";
}

std::string list(const std::vector<std::string>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i];
  return out + "]";
}

// A double-quoted YAML string: safe for any name.
std::string quote(const std::string& s) {
  std::string out = "\"";
  for (const unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string mask(const MaskSpec& m) {
  if (m.kind != MaskKind::sliding_window) return to_string(m.kind);
  return cat("{kind: sliding_window, left: ", m.window_left, ", right: ", m.window_right, "}");
}

std::string mla(const MlaSpec& m) {
  if (!m.enabled) return "none";
  return cat("{kv_lora_rank: ", m.kv_lora_rank, ", qk_rope_head_dim: ", m.qk_rope_head_dim,
             ", qk_nope_head_dim: ", m.qk_nope_head_dim, ", v_head_dim: ", m.v_head_dim, "}");
}

std::string sparse(const BlockSparseSpec& b) {
  if (!b.enabled) return "none";
  return cat("{block_size: ", b.block_size, ", local_blocks: ", b.local_blocks,
             ", vert_stride: ", b.vert_stride, ", homo_head: ", b.homo_head ? "true" : "false",
             ", head_sliding_step: ", b.head_sliding_step, ", active_heads: [", b.active_head_begin,
             ", ", b.active_head_end, "], q_block_size: ", b.q_block_size, "}");
}

// Every field after `version`, in schema order; `name` is the caller's business.
std::string body(const Spec& s) {
  const auto& t = s.tuning;
  return cat("head_dim: ", s.head_dim, "\nhead_dim_v: ", s.head_dim_v,
             "\nnum_q_heads: ", s.num_q_heads, "\nnum_kv_heads: ", s.num_kv_heads,
             "\ndtype: ", to_string(s.dtype), "\nkv_cache: {dtype: ", to_string(s.kv_cache.dtype),
             ", layout: ", to_string(s.kv_cache.layout), ", page_size: ", s.kv_cache.page_size, "}",
             "\nmask: ", mask(s.mask), "\nsoftcap: ", number(s.softcap),
             "\nalibi: ", to_string(s.alibi), "\nsinks: ", s.sinks ? "true" : "false",
             "\nlse: {layout: ", to_string(s.lse.layout), ", base: ", to_string(s.lse.base), "}",
             "\nquant: ", to_string(s.quant), "\nmla: ", mla(s.mla),
             "\nblock_sparse: ", sparse(s.sparse), "\nkernels: ", list(kernel_list(s.kernels)),
             "\ntuning: {block_m: ", list(t.block_m), ", block_n: ", list(t.block_n),
             ", warps: ", list(t.warps), ", stages: ", list(t.stages), ", splits: ", list(t.splits),
             ", families: ", list(t.families), "}\n");
}

}  // namespace

std::string canonical_form(const Spec& spec) {
  const Spec s = spec_detail::normalised(spec);
  return cat("version: ", s.version, "\n", body(s));
}

std::string spec_id(const Spec& s) { return hash_hex(canonical_form(s)).substr(0, 16); }

std::string to_yaml(const Spec& s) {
  return cat("version: ", s.version, "\nname: ", quote(s.name), "\n", body(s));
}

}  // namespace attnc
