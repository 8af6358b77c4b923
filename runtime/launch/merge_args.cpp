#include "runtime/launch/merge_args.h"

#include <climits>

#include "runtime/launch/arg_checks.h"
#include "runtime/driver/module.h"

namespace attnc {

MergeLaunch prepare_merge(const KernelPlan& plan, const MergeArgs& a) {
  const ArgCheck c("merge");
  const Spec& s = plan.spec;
  c.require(plan.kind == KernelKind::merge, "the plan makes ", to_string(plan.kind), " kernels, not merge");
  c.require(a.num_tokens >= 0, "num_tokens must be >= 0, got ", a.num_tokens);
  c.require(a.num_heads >= 0, "num_heads must be >= 0 (0: the spec's), got ", a.num_heads);
  const int heads = a.num_heads ? a.num_heads : s.num_q_heads;
  c.require(heads == s.num_q_heads, "num_heads ", heads, " does not match the spec's num_q_heads ", s.num_q_heads);
  const int d = c.output_head_size(a.head_size, s, plan.head_dim_v);
  const long long chunks = (long long)a.num_tokens * (d / 8);
  c.require(chunks <= INT_MAX - kMergeThreads, "num_tokens ", a.num_tokens,
            " is too large: num_tokens * head_size / 8 must be < 2^31");

  MergeLaunch l;
  l.empty = a.num_tokens == 0;
  if (l.empty) return l;  // nothing is read or written: an empty tensor's pointer may be null

  MergeParams& p = l.params;
  c.token_rows("output", a.output, 16, 2, a.output_row_stride, a.output_head_stride, heads, d, p.out_row_stride,
               p.out_head_stride);
  c.token_rows("prefix_output", a.prefix_output, 16, 2, a.prefix_row_stride, a.prefix_head_stride, heads, d,
               p.prefix_row_stride, p.prefix_head_stride);
  c.token_rows("suffix_output", a.suffix_output, 16, 2, a.suffix_row_stride, a.suffix_head_stride, heads, d,
               p.suffix_row_stride, p.suffix_head_stride);
  c.disjoint("output", d, {{"token", a.num_tokens, p.out_row_stride}, {"head", heads, p.out_head_stride}});
  // In place is fine (each thread reads its chunk before writing it) only over the same layout.
  if (a.output == a.prefix_output)
    c.require(p.out_row_stride == p.prefix_row_stride && p.out_head_stride == p.prefix_head_stride,
              "output aliases prefix_output with different strides");
  if (a.output == a.suffix_output)
    c.require(p.out_row_stride == p.suffix_row_stride && p.out_head_stride == p.suffix_head_stride,
              "output aliases suffix_output with different strides");

  c.pointer("prefix_lse", a.prefix_lse, 4);
  c.pointer("suffix_lse", a.suffix_lse, 4);
  c.lse_strides("prefix_lse", a.prefix_lse_token_stride, a.prefix_lse_head_stride, a.num_tokens,
                p.prefix_lse_token_stride, p.prefix_lse_head_stride);
  c.lse_strides("suffix_lse", a.suffix_lse_token_stride, a.suffix_lse_head_stride, a.num_tokens,
                p.suffix_lse_token_stride, p.suffix_lse_head_stride);
  c.optional_output_lse(a.output_lse, a.output_lse_token_stride, a.output_lse_head_stride, a.num_tokens, heads,
                        p.out_lse_token_stride, p.out_lse_head_stride);

  p.out = a.output;
  p.prefix = a.prefix_output;
  p.suffix = a.suffix_output;
  p.prefix_lse = a.prefix_lse;
  p.suffix_lse = a.suffix_lse;
  p.out_lse = a.output_lse;
  p.num_tokens = a.num_tokens;
  p.num_heads = heads;
  p.head_size = d;
  p.lse_base2 = a.lse_base.value_or(s.lse.base) == LseBase::two ? 1 : 0;

  c.require(heads <= 65535, "num_heads must be <= 65535 (grid y), got ", heads);
  l.grid.x = unsigned((chunks + kMergeThreads - 1) / kMergeThreads);
  l.grid.y = unsigned(heads);
  l.block.x = unsigned(kMergeThreads);
  return l;
}

void launch_merge(const Kernel& kernel, const MergeLaunch& l, CUstream stream) {
  if (l.empty) return;
  kernel.launch(l.grid, l.block, 0, stream, &l.params);
}

}  // namespace attnc
