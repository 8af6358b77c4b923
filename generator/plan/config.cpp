#include "generator/plan/config.h"

#include <nlohmann/json.hpp>

#include <stdexcept>

namespace attnc {

std::string Config::short_name() const {
  std::string s = "m" + std::to_string(block_m) + "n" + std::to_string(block_n) + "w" +
                  std::to_string(warps) + "s" + std::to_string(stages);
  if (family == "prefill_sm90" && !pingpong) s += "np";
  if (family == "prefill_sm90" && persistent) s += "ps";
  if (family == "prefill_sm90" && mixed_tiles) s += "mx";
  if (family == "prefill_sm90" && paired_tiles) s += "pt";
  if (family == "prefill_sm90" && paged_gather) s += "pg";
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
  if (family == "prefill_sm90" && persistent) j["persistent"] = true;
  if (family == "prefill_sm90" && mixed_tiles) j["mixed_tiles"] = true;
  if (family == "prefill_sm90" && paired_tiles) j["paired_tiles"] = true;
  if (family == "prefill_sm90" && paged_gather) j["paged_gather"] = true;
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
    if (key == "pingpong" || key == "persistent" || key == "mixed_tiles" || key == "paired_tiles" ||
        key == "paged_gather") {
      if (!it->is_boolean()) throw std::invalid_argument("config." + key + ": expected true or false");
      (key == "pingpong"     ? c.pingpong
       : key == "persistent" ? c.persistent
       : key == "mixed_tiles" ? c.mixed_tiles
       : key == "paired_tiles" ? c.paired_tiles
                               : c.paged_gather) = it->get<bool>();
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
                                  "persistent, mixed_tiles, paired_tiles, paged_gather");
    if (!it->is_number_integer()) throw std::invalid_argument("config." + key + ": expected an integer");
    *field = it->get<int>();
  }
  return c;
}

}  // namespace attnc
