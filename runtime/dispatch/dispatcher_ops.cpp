// Attention's ops (dispatcher.h): merge_attn_states, reshape_and_cache_flash, cascade and decode
// context parallelism's LSE correction, one default-config kernel each (cascade: its two
// prefill_paged passes and the merge), made and loaded on the first call; the warm path is one
// atomic load per kernel, the checks and the launch.
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
    case Attention::Impl::op_lse_correct:
      return KernelKind::lse_correct;
    default:
      return KernelKind::prefill_paged;
  }
}

const char* op_name(Attention::Impl::Op op) {
  static const char* names[] = {"merge_attn_states", "reshape_and_cache_flash", "cascade prefix pass",
                                "cascade suffix pass", "lse_correct (decode context parallelism)"};
  return names[op];
}

}  // namespace

KernelSlot& Attention::Impl::op_slot(Op op) {
  if (KernelSlot* s = op_loaded[op].load(std::memory_order_acquire)) return *s;
  std::lock_guard lock(resolve_mutex);
  auto& slot = op_slots[op];
  if (!slot) {
    const Spec s = op_spec(spec, op);
    const std::string& arch = info().arch;
    slot = std::make_unique<KernelSlot>(s, op_kind(op), default_config(s, op_kind(op), arch), arch);
  }
  return *slot;
}

KernelSlot& Attention::Impl::op(Op op, CUstream stream) {
  if (KernelSlot* s = op_loaded[op].load(std::memory_order_acquire)) return *s;
  KernelSlot& s = op_slot(op);
  check_not_capturing(stream, std::string(op_name(op)) + " of spec '" + spec.name + "'");
  s.load(settings, device());
  op_loaded[op].store(&s, std::memory_order_release);
  return s;
}

const CascadePlans& Attention::Impl::cascade_plans() {
  if (const CascadePlans* p = cascade_plans_ptr.load(std::memory_order_acquire)) return *p;
  KernelSlot &prefix = op_slot(op_cascade_prefix), &suffix = op_slot(op_cascade_suffix), &merge = op_slot(op_merge);
  std::lock_guard lock(resolve_mutex);
  if (!cascade_plans_) cascade_plans_ = CascadePlans{prefix.plan(), suffix.plan(), merge.plan()};
  cascade_plans_ptr.store(&*cascade_plans_, std::memory_order_release);
  return *cascade_plans_;
}

void Attention::merge(const MergeArgs& args, CUstream stream) {
  Impl& m = *impl_;
  const MergeLaunch launch = prepare_merge(m.op_slot(Impl::op_merge).plan(), args);  // checked before loading
  KernelSlot& s = m.op(Impl::op_merge, stream);
  m.make_current();
  launch_merge(s.kernel(), launch, stream);
}

void Attention::cache_write(const CacheWriteArgs& args, CUstream stream) {
  Impl& m = *impl_;
  const CacheWriteLaunch launch = prepare_cache_write(m.op_slot(Impl::op_cache_write).plan(), args);
  KernelSlot& s = m.op(Impl::op_cache_write, stream);
  m.make_current();
  launch_cache_write(s.kernel(), launch, stream);
}

void Attention::lse_correct(const LseCorrectArgs& args, CUstream stream) {
  Impl& m = *impl_;
  const LseCorrectLaunch launch = prepare_lse_correct(m.op_slot(Impl::op_lse_correct).plan(), args);
  KernelSlot& s = m.op(Impl::op_lse_correct, stream);
  m.make_current();
  launch_lse_correct(s.kernel(), launch, stream);
}

size_t Attention::cascade_workspace_needed(int num_tokens) {
  return cascade_workspace_bytes(impl_->cascade_plans(), num_tokens);
}

void Attention::cascade(const CascadeArgs& a, CUstream stream) {
  Impl& m = *impl_;
  const CascadePlans& plans = m.cascade_plans();  // refuses ALiBi and windows before anything loads
  CascadeArgs args = a;
  if (!a.workspace) {
    args.workspace = m.workspace_ptr;
    args.workspace_bytes = m.workspace_size;
  }
  const CascadeLaunch launch = prepare_cascade(plans, args);  // checked before loading
  const CascadeKernels kernels{&m.op(Impl::op_cascade_prefix, stream).kernel(),
                               &m.op(Impl::op_cascade_suffix, stream).kernel(), &m.op(Impl::op_merge, stream).kernel()};
  m.make_current();
  launch_cascade(kernels, launch, stream);
}

}  // namespace attnc
