#include "tuner/shapes.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace attnc {
namespace {

ShapeBucket bucket(KernelKind kind, int batch, int q, int k) { return ShapeBucket::of(Problem{kind, batch, q, k}); }

void add_prefill(std::vector<ShapeBucket>& out, int batch, int q, int k) {
  out.push_back(bucket(KernelKind::prefill, batch, q, k));
  out.push_back(bucket(KernelKind::prefill_paged, batch, q, k));
}

KernelKind parse_kind(const std::string& text, const std::string& where) {
  for (KernelKind k : {KernelKind::prefill, KernelKind::prefill_paged, KernelKind::decode})
    if (text == to_string(k)) return k;
  throw std::invalid_argument(where + "kind: '" + text + "' is not a tunable kernel kind; allowed: prefill, " +
                              "prefill_paged, decode");
}

}  // namespace

const std::vector<std::string>& shape_preset_names() {
  static const std::vector<std::string> names = {"anchors", "serving", "smoke"};
  return names;
}

std::vector<ShapeBucket> preset_shapes(const std::string& name, const Spec& s) {
  std::vector<ShapeBucket> out;
  if (name == "anchors") {
    add_prefill(out, std::max(s.head_dim, s.head_dim_v) > 128 ? 2 : 4, 4096, 4096);
    out.push_back(bucket(KernelKind::decode, 64, 1, 8192));
    out.push_back(bucket(KernelKind::decode, 16, 1, 32768));
    out.push_back(bucket(KernelKind::decode, 128, 1, 2048));
  } else if (name == "serving") {
    for (int len : {512, 2048, 8192, 16384}) add_prefill(out, 1, len, len);
    for (int batch : {1, 4, 16, 64, 256})
      for (int kv : {1024, 4096, 16384, 32768}) out.push_back(bucket(KernelKind::decode, batch, 1, kv));
  } else if (name == "smoke") {
    add_prefill(out, 2, 256, 256);
    out.push_back(bucket(KernelKind::decode, 4, 1, 1024));
  } else {
    std::string allowed;
    for (const auto& n : shape_preset_names()) allowed += (allowed.empty() ? "" : ", ") + n;
    throw std::invalid_argument("--shapes: '" + name + "' is not a preset (" + allowed + ") nor a file");
  }
  return out;
}

std::vector<ShapeBucket> parse_shapes_yaml(const std::string& text, const std::string& filename) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw std::invalid_argument(filename + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
  }
  const std::string example =
      "expected a list of {kind: prefill|prefill_paged|decode, batch: N, seqlen_q: N, "
      "seqlen_k: N}";
  if (!root.IsSequence()) throw std::invalid_argument(filename + ": " + example);
  if (root.size() == 0) throw std::invalid_argument(filename + ": the list is empty; " + example);
  std::vector<ShapeBucket> out;
  for (std::size_t i = 0; i < root.size(); ++i) {
    const YAML::Node e = root[i];
    const std::string where =
        filename + ":" + std::to_string(e.Mark().line + 1) + ": entry " + std::to_string(i) + ": ";
    if (!e.IsMap()) throw std::invalid_argument(where + example);
    for (auto it = e.begin(); it != e.end(); ++it) {
      const std::string key = it->first.as<std::string>();
      if (key != "kind" && key != "batch" && key != "seqlen_q" && key != "seqlen_k")
        throw std::invalid_argument(where + key + ": unknown field; allowed: kind, batch, seqlen_q, seqlen_k");
    }
    auto field = [&](const char* name) -> YAML::Node {
      const YAML::Node n = e[name];
      if (!n) throw std::invalid_argument(where + name + ": missing; " + example);
      if (!n.IsScalar()) throw std::invalid_argument(where + name + ": expected a scalar");
      return n;
    };
    auto integer = [&](const char* name) {
      const std::string v = field(name).Scalar();
      long long x = 0;
      std::size_t used = 0;
      try {
        x = std::stoll(v, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != v.size() || x < 1 || x > (1 << 30))
        throw std::invalid_argument(where + name + ": '" + v + "' is not a positive integer up to 2^30");
      return static_cast<int>(x);
    };
    const KernelKind kind = parse_kind(field("kind").Scalar(), where);
    const int batch = integer("batch"), q = integer("seqlen_q"), k = integer("seqlen_k");
    out.push_back(bucket(kind, batch, q, k));
  }
  return out;
}

std::vector<ShapeBucket> load_shapes_file(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw std::invalid_argument("--shapes: '" + path + "' is neither a preset (anchors, serving, smoke) " +
                                "nor a readable file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_shapes_yaml(ss.str(), path);
}

std::vector<ShapeBucket> resolve_shapes(const std::string& arg, const Spec& s) {
  const auto& names = shape_preset_names();
  if (std::find(names.begin(), names.end(), arg) != names.end()) return preset_shapes(arg, s);
  return load_shapes_file(arg);
}

std::vector<ShapeBucket> sweep_tasks(const std::vector<ShapeBucket>& buckets, const std::vector<KernelKind>& kinds) {
  std::vector<ShapeBucket> out;
  for (const ShapeBucket& b : buckets)
    if (std::find(kinds.begin(), kinds.end(), b.kind) != kinds.end()) out.push_back(b);
  // key() orders by kind, then batch, query and KV exponents.
  std::sort(out.begin(), out.end(), [](const ShapeBucket& a, const ShapeBucket& b) { return a.key() < b.key(); });
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Shard parse_shard(const std::string& text) {
  auto fail = [&](const std::string& why) -> Shard {
    throw std::invalid_argument("--shard: '" + text + "' " + why + "; expected i/N with 0 <= i < N, e.g. 0/4");
  };
  const auto slash = text.find('/');
  if (slash == std::string::npos) return fail("has no '/'");
  auto number = [&](const std::string& part) {
    std::size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (part.empty() || used != part.size() || !std::isdigit(static_cast<unsigned char>(part[0])) || v > 1000000)
      fail("is not two non-negative integers");
    return static_cast<int>(v);
  };
  Shard s{number(text.substr(0, slash)), number(text.substr(slash + 1))};
  if (s.count < 1) return fail("has N < 1");
  if (s.index >= s.count) return fail("has i >= N");
  return s;
}

std::vector<ShapeBucket> shard_tasks(const std::vector<ShapeBucket>& tasks, Shard s) {
  std::vector<ShapeBucket> out;
  for (std::size_t i = 0; i < tasks.size(); ++i)
    if (static_cast<int>(i % s.count) == s.index) out.push_back(tasks[i]);
  return out;
}

}  // namespace attnc
