#include "generator/emit/embedded_templates.h"

#include "generator/hash.h"

namespace attnc {

const std::string& templates_hash() {
  static const std::string h = [] {
    Hasher hasher;
    for (const auto& f : embedded_templates()) hasher.add(f.path).add(f.text);
    return hasher.hex();
  }();
  return h;
}

}  // namespace attnc
