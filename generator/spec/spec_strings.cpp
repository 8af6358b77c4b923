// Enum spellings: one table per enum, indexed by the enum's value, so to_string, from_string and
// the "allowed:" lists in diagnostics can never disagree.
#include <array>

#include "generator/spec/spec_parse.h"

namespace attnc {
namespace {

constexpr std::array<const char*, 2> kDType = {"bf16", "fp16"};
constexpr std::array<const char*, 4> kKvDType = {"same", "fp8_e4m3", "fp8_e5m2", "int8"};
constexpr std::array<const char*, 2> kKvLayout = {"NHD", "HND"};
constexpr std::array<const char*, 3> kMaskKind = {"none", "causal", "sliding_window"};
constexpr std::array<const char*, 3> kAlibi = {"none", "linear", "sqrt"};
constexpr std::array<const char*, 3> kLseLayout = {"none", "head_major", "token_major"};
constexpr std::array<const char*, 2> kLseBase = {"e", "2"};
constexpr std::array<const char*, 4> kQuant = {"none", "int8_qkv", "int8_qk", "fp8"};
constexpr std::array<const char*, 4> kKernels = {"prefill", "decode", "merge", "cache_write"};
constexpr std::array<const char*, 4> kFamilies = {"prefill_sm80", "prefill_sm90", "decode_split", "decode_bw"};

template <class E, std::size_t N>
const char* name_of(const std::array<const char*, N>& names, E e) {
  const auto i = static_cast<std::size_t>(e);
  return i < N ? names[i] : "?";
}

template <class E, std::size_t N>
std::optional<E> lookup(const std::array<const char*, N>& names, std::string_view s) {
  for (std::size_t i = 0; i < N; ++i)
    if (s == names[i]) return static_cast<E>(i);
  return std::nullopt;
}

}  // namespace

const char* to_string(DType e) { return name_of(kDType, e); }
const char* to_string(KvDType e) { return name_of(kKvDType, e); }
const char* to_string(KvLayout e) { return name_of(kKvLayout, e); }
const char* to_string(MaskKind e) { return name_of(kMaskKind, e); }
const char* to_string(Alibi e) { return name_of(kAlibi, e); }
const char* to_string(LseLayout e) { return name_of(kLseLayout, e); }
const char* to_string(LseBase e) { return name_of(kLseBase, e); }
const char* to_string(QuantMode e) { return name_of(kQuant, e); }

std::optional<DType> dtype_from_string(std::string_view s) { return lookup<DType>(kDType, s); }
std::optional<KvDType> kv_dtype_from_string(std::string_view s) {
  return lookup<KvDType>(kKvDType, s);
}
std::optional<KvLayout> kv_layout_from_string(std::string_view s) {
  return lookup<KvLayout>(kKvLayout, s);
}
std::optional<MaskKind> mask_kind_from_string(std::string_view s) {
  return lookup<MaskKind>(kMaskKind, s);
}
std::optional<Alibi> alibi_from_string(std::string_view s) { return lookup<Alibi>(kAlibi, s); }
std::optional<LseLayout> lse_layout_from_string(std::string_view s) {
  return lookup<LseLayout>(kLseLayout, s);
}
std::optional<LseBase> lse_base_from_string(std::string_view s) {
  return lookup<LseBase>(kLseBase, s);
}
std::optional<QuantMode> quant_from_string(std::string_view s) {
  return lookup<QuantMode>(kQuant, s);
}

std::span<const char* const> enum_names(DType) { return kDType; }
std::span<const char* const> enum_names(KvDType) { return kKvDType; }
std::span<const char* const> enum_names(KvLayout) { return kKvLayout; }
std::span<const char* const> enum_names(MaskKind) { return kMaskKind; }
std::span<const char* const> enum_names(Alibi) { return kAlibi; }
std::span<const char* const> enum_names(LseLayout) { return kLseLayout; }
std::span<const char* const> enum_names(LseBase) { return kLseBase; }
std::span<const char* const> enum_names(QuantMode) { return kQuant; }

std::span<const char* const> kernel_names() { return kKernels; }
std::span<const char* const> tuning_family_names() { return kFamilies; }

std::vector<std::string> kernel_list(const KernelSet& k) {
  const bool on[] = {k.prefill, k.decode, k.merge, k.cache_write};
  std::vector<std::string> out;
  for (std::size_t i = 0; i < kKernels.size(); ++i)
    if (on[i]) out.emplace_back(kKernels[i]);
  return out;
}

}  // namespace attnc
