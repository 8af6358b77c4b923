// Attention's ops (dispatcher.h): merge_attn_states, reshape_and_cache_flash and cascade, one
// default-config kernel each (cascade: its two prefill_paged passes and the merge), made and
// loaded on the first call; the warm path is one atomic load per kernel, the checks and the launch.
#include "runtime/launch/cascade.h"
#include "runtime/dispatch/dispatcher_impl.h"

namespace attnc {
namespace {

// The spec and kind each op kernel is planned from (cascade's as plan_cascade plans them).
Spec op_spec(const Spec& s, Attention::Impl::Op op) {
  switch (op) {
    case Attention::Impl::op_cascade_prefix:
      return cascade_pass_spec(s, CascadePass::prefix);
    case Attention::Impl::op_cascade_suffix:
      return cascade_pass_spec(s, CascadePass::suffix);
    default:
      return s;
  }
}

KernelKind op_kind(Attention::Impl::Op op) {
  switch (op) {
    case Attention::Impl::op_merge:
      return KernelKind::merge;
    case Attention::Impl::op_cache_write:
      return KernelKind::cache_write;
    default:
      return KernelKind::prefill_paged;
  }
}

const char* op_name(Attention::Impl::Op op) {
  static const char* names[] = {"merge_attn_states", "reshape_and_cache_flash", "cascade prefix pass",
                                "cascade suffix pass"};
  return names[op];
}

KernelSlot& made_slot(Attention::Impl& m, Attention::Impl::Op op) {
  std::lock_guard lock(m.resolve_mutex);
  auto& slot = m.op_slots[op];
  if (!slot) {
    const Spec s = op_spec(m.spec, op);
    const std::string& arch = m.info().arch;
    slot = std::make_unique<KernelSlot>(s, op_kind(op), default_config(s, op_kind(op), arch), arch);
  }
  return *slot;
}

}  // namespace

KernelSlot& Attention::Impl::op(Op op, CUstream stream) {
  if (KernelSlot* s = op_loaded[op].load(std::memory_order_acquire)) return *s;
  KernelSlot& s = made_slot(*this, op);
  check_not_capturing(stream, std::string(op_name(op)) + " of spec '" + spec.name + "'");
  s.load(settings, device());
  op_loaded[op].store(&s, std::memory_order_release);
  return s;
}

const CascadePlans& Attention::Impl::cascade_plans() {
  if (const CascadePlans* p = cascade_plans_ptr.load(std::memory_order_acquire)) return *p;
  KernelSlot &prefix = made_slot(*this, op_cascade_prefix), &suffix = made_slot(*this, op_cascade_suffix),
             &merge = made_slot(*this, op_merge);
  std::lock_guard lock(resolve_mutex);
  if (!cascade_plans_) cascade_plans_ = CascadePlans{prefix.plan(), suffix.plan(), merge.plan()};
  cascade_plans_ptr.store(&*cascade_plans_, std::memory_order_release);
  return *cascade_plans_;
}

void Attention::merge(const MergeArgs& args, CUstream stream) {
  Impl& m = *impl_;
  KernelSlot& s = m.op(Impl::op_merge, stream);
  const MergeLaunch launch = prepare_merge(s.plan(), args);
  m.make_current();
  launch_merge(s.kernel(), launch, stream);
}

void Attention::cache_write(const CacheWriteArgs& args, CUstream stream) {
  Impl& m = *impl_;
  KernelSlot& s = m.op(Impl::op_cache_write, stream);
  const CacheWriteLaunch launch = prepare_cache_write(s.plan(), args);
  m.make_current();
  launch_cache_write(s.kernel(), launch, stream);
}

size_t Attention::cascade_workspace_needed(int num_tokens) {
  return cascade_workspace_bytes(impl_->cascade_plans(), num_tokens);
}

void Attention::cascade(const CascadeArgs& a, CUstream stream) {
  Impl& m = *impl_;
  const CascadePlans& plans = m.cascade_plans();  // refuses ALiBi and windows before anything loads
  const CascadeKernels kernels{&m.op(Impl::op_cascade_prefix, stream).kernel(),
                               &m.op(Impl::op_cascade_suffix, stream).kernel(), &m.op(Impl::op_merge, stream).kernel()};
  CascadeArgs args = a;
  if (!a.workspace) {
    args.workspace = m.workspace_ptr;
    args.workspace_bytes = m.workspace_size;
  }
  const CascadeLaunch launch = prepare_cascade(plans, args);
  m.make_current();
  launch_cascade(kernels, launch, stream);
}

}  // namespace attnc
