#include "generator/plan/config.h"

#include <nlohmann/json.hpp>

#include <stdexcept>

namespace attnc {
namespace {

// prefill_sm90's switches that are off unless set: JSON key, name suffix, field (one list for the
// name, the JSON and the parser).
struct Sm90Flag {
  const char* key;
  const char* suffix;
  bool Config::*field;
};
constexpr Sm90Flag kSm90Flags[] = {{"persistent", "ps", &Config::persistent},
                                   {"mixed_tiles", "mx", &Config::mixed_tiles},
                                   {"paired_tiles", "pt", &Config::paired_tiles},
                                   {"paged_gather", "pg", &Config::paged_gather},
                                   {"v_prewiden", "vw", &Config::v_prewiden}};

}  // namespace

std::string Config::short_name() const {
  std::string s = "m" + std::to_string(block_m) + "n" + std::to_string(block_n) + "w" +
                  std::to_string(warps) + "s" + std::to_string(stages);
  if (family == "prefill_sm90" && !pingpong) s += "np";
  for (const Sm90Flag& f : kSm90Flags)
    if (family == "prefill_sm90" && this->*f.field) s += f.suffix;
  return s;
}

std::string Config::to_json() const {
  nlohmann::ordered_json j;
  j["family"] = family;
  j["block_m"] = block_m;
  j["block_n"] = block_n;
  j["warps"] = warps;
  j["stages"] = stages;
  if (family == "prefill_sm90") j["pingpong"] = pingpong;
  for (const Sm90Flag& f : kSm90Flags)
    if (family == "prefill_sm90" && this->*f.field) j[f.key] = true;
  return j.dump();
}

Config Config::from_json(const std::string& text) { return from_json(text, Config{}); }

Config Config::from_json(const std::string& text, const Config& base) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw std::invalid_argument(std::string("config: not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw std::invalid_argument("config: expected a JSON object");
  Config c = base;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    if (key == "family") {
      if (!it->is_string()) throw std::invalid_argument("config.family: expected a string");
      c.family = it->get<std::string>();
      continue;
    }
    bool* flag = key == "pingpong" ? &c.pingpong : nullptr;
    for (const Sm90Flag& f : kSm90Flags)
      if (key == f.key) flag = &(c.*f.field);
    if (flag) {
      if (!it->is_boolean()) throw std::invalid_argument("config." + key + ": expected true or false");
      *flag = it->get<bool>();
      continue;
    }
    int* field = key == "block_m"  ? &c.block_m
                 : key == "block_n" ? &c.block_n
                 : key == "warps"   ? &c.warps
                 : key == "stages"  ? &c.stages
                                    : nullptr;
    if (!field)
      throw std::invalid_argument("config." + key +
                                  ": unknown field; allowed: family, block_m, block_n, warps, stages, pingpong, "
                                  "persistent, mixed_tiles, paired_tiles, paged_gather, v_prewiden");
    if (!it->is_number_integer()) throw std::invalid_argument("config." + key + ": expected an integer");
    *field = it->get<int>();
  }
  return c;
}

}  // namespace attnc
