#include "runtime/dispatch/shape_bucket.h"

#include <bit>
#include <stdexcept>

namespace attnc {
namespace {

// Sizes above 2^30 do not occur (lengths and batch are ints); clamping keeps bit_ceil defined.
unsigned ceil_pow2(int v) { return std::bit_ceil(static_cast<unsigned>(v < 1 ? 1 : v > (1 << 30) ? (1 << 30) : v)); }

int parse_pow2(const std::string& label, std::size_t& pos, char tag) {
  auto fail = [&](const std::string& why) -> int {
    throw std::invalid_argument("shape bucket '" + label + "': " + why +
                                "; expected b<batch>.q<query len>.k<kv len>, each a power of two, e.g. b64.q1.k8192");
  };
  if (pos >= label.size() || label[pos] != tag) fail(std::string("expected '") + tag + "' at position " + std::to_string(pos));
  ++pos;
  std::size_t start = pos;
  long long v = 0;
  while (pos < label.size() && label[pos] >= '0' && label[pos] <= '9' && v <= (1 << 30)) v = v * 10 + (label[pos++] - '0');
  if (pos == start) fail(std::string("no number after '") + tag + "'");
  if (v < 1 || v > (1 << 30) || std::popcount(static_cast<unsigned long long>(v)) != 1)
    fail(std::string("'") + tag + std::to_string(v) + "' is not a power of two in 1..2^30");
  return static_cast<int>(v);
}

}  // namespace

ShapeBucket ShapeBucket::of(const Problem& p) {
  return {p.kind, static_cast<int>(ceil_pow2(p.batch)), static_cast<int>(ceil_pow2(p.max_seqlen_q)),
          static_cast<int>(ceil_pow2(p.max_seqlen_k))};
}

std::uint64_t ShapeBucket::key() const {
  auto lg = [](int v) { return static_cast<std::uint64_t>(std::countr_zero(static_cast<unsigned>(v))); };
  return static_cast<std::uint64_t>(kind) << 15 | lg(batch) << 10 | lg(seqlen_q) << 5 | lg(seqlen_k);
}

std::string ShapeBucket::label() const {
  return "b" + std::to_string(batch) + ".q" + std::to_string(seqlen_q) + ".k" + std::to_string(seqlen_k);
}

ShapeBucket ShapeBucket::parse(KernelKind kind, const std::string& label) {
  std::size_t pos = 0;
  ShapeBucket b;
  b.kind = kind;
  b.batch = parse_pow2(label, pos, 'b');
  auto dot = [&] {
    if (pos >= label.size() || label[pos] != '.')
      throw std::invalid_argument("shape bucket '" + label + "': expected '.' at position " + std::to_string(pos) +
                                  "; expected b<batch>.q<query len>.k<kv len>, e.g. b64.q1.k8192");
    ++pos;
  };
  dot();
  b.seqlen_q = parse_pow2(label, pos, 'q');
  dot();
  b.seqlen_k = parse_pow2(label, pos, 'k');
  if (pos != label.size())
    throw std::invalid_argument("shape bucket '" + label + "': unexpected '" + label.substr(pos) +
                                "' at the end; expected b<batch>.q<query len>.k<kv len>, e.g. b64.q1.k8192");
  return b;
}

Problem ShapeBucket::representative() const { return {kind, batch, seqlen_q, seqlen_k}; }

}  // namespace attnc
