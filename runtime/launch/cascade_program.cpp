#include "runtime/launch/cascade_program.h"

#include "generator/emit/emit.h"

namespace attnc {

CascadeProgram::CascadeProgram(const Spec& spec, const std::string& arch, const CompileOptions& options)
    : plans_(plan_cascade(spec, arch)) {
  for (const KernelPlan* plan : {&plans_.prefix, &plans_.suffix, &plans_.merge}) {
    const KernelSource source = emit_kernel(*plan);
    modules_.emplace_back(compile_kernel(source, options).cubin);
    kernels_.push_back(modules_.back().kernel(source.entry, plan->smem_bytes));
  }
}

}  // namespace attnc
