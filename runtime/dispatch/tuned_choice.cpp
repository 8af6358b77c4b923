#include "runtime/dispatch/tuned_choice.h"

#include <nlohmann/json.hpp>

#include <stdexcept>

#include "attnc/params/split_combine_shape.h"

namespace attnc {

std::string TunedChoice::to_json() const {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(config.to_json());
  j["num_splits"] = num_splits;
  return j.dump();
}

TunedChoice TunedChoice::from_json(const std::string& text, const Config& base) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw std::invalid_argument(std::string("tuned config: not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw std::invalid_argument("tuned config: expected a JSON object");
  TunedChoice c;
  if (auto it = j.find("num_splits"); it != j.end()) {
    if (!it->is_number_integer() || it->get<int>() < 0 || it->get<int>() > kMaxSplits)
      throw std::invalid_argument("tuned config.num_splits: expected an integer in 0.." + std::to_string(kMaxSplits));
    c.num_splits = it->get<int>();
    j.erase(it);
  }
  // Records written before schema 2 carried a compiled split count that was always 1 (the
  // migration strips it; an export from then may still have it).
  if (auto it = j.find("splits"); it != j.end()) {
    if (*it != 1)
      throw std::invalid_argument("tuned config.splits: " + it->dump() +
                                  "; compiled kernels take no split count, the per-call one is num_splits");
    j.erase(it);
  }
  c.config = Config::from_json(j.dump(), base);
  return c;
}

}  // namespace attnc
