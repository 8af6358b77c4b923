// The YAML spec language (version 1): parsing, validation, canonical form and the spec id.
// docs/spec.md documents every field; attention-semantics.md pins what each one means.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "generator/spec/spec.h"

namespace attnc {

// One problem in a spec file. line/column are 1-based; 0 when there is no location (unreadable
// file). path is the field, dotted: "kv_cache.page_size", "tuning.block_m[1]"; empty for
// file-level problems (syntax, empty file).
struct Diagnostic {
  std::string file;
  int line = 0, column = 0;
  std::string path;
  std::string message;
  // "FILE:LINE:COL: error: PATH: message"; the location and the path are left out when absent.
  std::string str() const;
};

// Thrown with every problem found in a file (not just the first), in file order.
class SpecError : public std::runtime_error {
 public:
  explicit SpecError(std::vector<Diagnostic> d);
  const std::vector<Diagnostic>& diagnostics() const { return diags_; }

 private:
  std::vector<Diagnostic> diags_;
};

// Limits that bound a parse in time and memory whatever the bytes (docs/spec.md "Limits"); input
// past one is an error that names it.
inline constexpr std::size_t kMaxSpecBytes = 256 << 10;  // a spec text or file (256 KiB)
inline constexpr int kMaxSpecNesting = 64;             // lists and mappings inside each other
inline constexpr int kMaxSpecNodes = 10000;            // YAML values (scalars, lists, mappings)

// Parses and validates. Defaults are filled in and derived values resolved, so the returned Spec
// is complete: num_kv_heads, head_dim_v, MLA head dims, sparse.active_head_end and
// sparse.head_sliding_step hold concrete values. `filename` is only used in diagnostics, and its
// stem becomes the name when the spec has no `name`. A text longer than kMaxSpecBytes is an error.
Spec parse_spec(std::string_view yaml_text, const std::string& filename);
// Reads a file and parses it. A file that cannot be read, is not a regular file (a directory, a
// FIFO, a device) or is larger than kMaxSpecBytes is a SpecError naming it, raised before reading.
Spec load_spec(const std::string& path);

// Canonical YAML: every field written, resolved, in a fixed order and style; `name` left out.
// Two specs that compute the same thing with the same code have the same canonical form
// whatever order, style, comments or defaults the files used.
std::string canonical_form(const Spec&);
// First 16 hex digits of hash_hex(canonical_form(spec)).
std::string spec_id(const Spec&);
// The whole spec, name included, as YAML that parse_spec reads back to an equal Spec.
std::string to_yaml(const Spec&);

// Spellings of enum values, as written in YAML. from_string returns nullopt for an unknown name;
// enum_names(E{}) lists every spelling in declaration order (the argument only selects the enum).
std::optional<DType> dtype_from_string(std::string_view);
std::optional<KvDType> kv_dtype_from_string(std::string_view);
std::optional<KvLayout> kv_layout_from_string(std::string_view);
std::optional<MaskKind> mask_kind_from_string(std::string_view);
std::optional<Alibi> alibi_from_string(std::string_view);
std::optional<LseLayout> lse_layout_from_string(std::string_view);
std::optional<LseBase> lse_base_from_string(std::string_view);
std::optional<QuantMode> quant_from_string(std::string_view);

std::span<const char* const> enum_names(DType);
std::span<const char* const> enum_names(KvDType);
std::span<const char* const> enum_names(KvLayout);
std::span<const char* const> enum_names(MaskKind);
std::span<const char* const> enum_names(Alibi);
std::span<const char* const> enum_names(LseLayout);
std::span<const char* const> enum_names(LseBase);
std::span<const char* const> enum_names(QuantMode);

// `kernels:` entries (prefill, decode, merge, cache_write) and `tuning.families` entries.
std::span<const char* const> kernel_names();
std::span<const char* const> tuning_family_names();
// Kernel names in KernelSet field order, for the ones that are set.
std::vector<std::string> kernel_list(const KernelSet&);

}  // namespace attnc
