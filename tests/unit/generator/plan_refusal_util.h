// Shared by the generator's plan tests: a config that the planner must refuse, and with what reason.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "generator/plan/plan_attention.h"

namespace attnc::test {

// `config` (JSON over the sm_90a default of `kind`) must be refused with a BadConfig containing `why`.
inline void expect_refused(const Spec& s, KernelKind kind, const std::string& config, const std::string& why) {
  const Config c = Config::from_json(config, default_config(s, kind, "sm_90a"));
  try {
    plan_kernel(s, kind, c, "sm_90a");
    FAIL() << "planned " << config;
  } catch (const BadConfig& e) {
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
}

}  // namespace attnc::test
