#include "generator/emit_ops.h"

namespace attnc {

bool is_op_family(const std::string& f) { return f == "merge_states" || f == "cache_write"; }

std::string emit_op_source(const KernelPlan& p, const std::string&) {
  throw NotSupportedYet("family " + p.family);
}

}  // namespace attnc
