// Every kernel a spec asks for (its `kernels:` list), planned and emitted for one arch, or the
// reason it cannot be generated yet. What `attnc compile` and the dispatcher iterate over.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "generator/emit/emit.h"

namespace attnc {

struct SpecKernel {
  KernelKind kind = KernelKind::prefill;
  std::optional<KernelPlan> plan;      // set when the kernel can be generated
  std::optional<KernelSource> source;
  std::string skipped;                 // "not supported yet: ..." otherwise
};

// One kernel of the spec. `config_json` overrides fields of the kind's default config (empty: the
// defaults; a JSON naming another family starts from that family's defaults: config_for). A
// config that cannot work throws BadConfig; malformed JSON throws std::invalid_argument. A kind
// the spec does not list is generated all the same.
SpecKernel generate_kernel(const Spec&, KernelKind, const std::string& arch, const std::string& config_json = "");

// Every kernel the spec lists, with the defaults; `config_json` as above for each of them (so it
// must suit every listed kind's family: name one kind with generate_kernel otherwise).
std::vector<SpecKernel> spec_kernels(const Spec&, const std::string& arch, const std::string& config_json = "");

}  // namespace attnc
