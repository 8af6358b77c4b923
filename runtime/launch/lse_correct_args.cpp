#include "runtime/launch/lse_correct_args.h"

#include <climits>

#include "runtime/launch/arg_checks.h"
#include "runtime/driver/module.h"

namespace attnc {

LseCorrectLaunch prepare_lse_correct(const KernelPlan& plan, const LseCorrectArgs& a) {
  const ArgCheck c("lse_correct");
  const Spec& s = plan.spec;
  c.require(plan.kind == KernelKind::lse_correct, "the plan makes ", to_string(plan.kind),
            " kernels, not lse_correct");
  c.require(a.num_tokens >= 0, "num_tokens must be >= 0, got ", a.num_tokens);
  c.require(a.num_heads >= 0, "num_heads must be >= 0 (0: the spec's), got ", a.num_heads);
  const int heads = a.num_heads ? a.num_heads : s.num_q_heads;
  c.require(heads == s.num_q_heads, "num_heads ", heads, " does not match the spec's num_q_heads ", s.num_q_heads);
  c.require(heads <= 65535, "num_heads must be <= 65535 (grid y), got ", heads);
  const int d = c.output_head_size(a.head_size, s, plan.head_dim_v);
  c.require(a.world_size >= 1, "world_size must be >= 1 (the ranks whose LSEs are gathered), got ", a.world_size);
  c.require(a.rank >= 0 && a.rank < a.world_size, "rank must be in [0, world_size = ", a.world_size, "), got ",
            a.rank);
  c.require(a.heads_per_chunk >= 0, "heads_per_chunk must be >= 0 (0: num_heads), got ", a.heads_per_chunk);
  const int per_chunk = a.heads_per_chunk ? a.heads_per_chunk : heads;
  c.require(heads % per_chunk == 0, "heads_per_chunk ", per_chunk, " must divide num_heads ", heads);
  const long long chunks = (long long)a.num_tokens * (d / 8);
  c.require(chunks <= INT_MAX - kLseCorrectThreads, "num_tokens ", a.num_tokens,
            " is too large: num_tokens * head_size / 8 must be < 2^31");

  LseCorrectLaunch l;
  l.empty = a.num_tokens == 0;
  if (l.empty) return l;  // nothing is read or written: an empty tensor's pointer may be null

  LseCorrectParams& p = l.params;
  p.out_row_stride = or_default(a.output_row_stride, (long long)per_chunk * d);
  p.out_head_stride = or_default(a.output_head_stride, d);
  p.out_chunk_stride = or_default(a.output_chunk_stride, (long long)a.num_tokens * per_chunk * d);
  c.pointer("output", a.output, 16);
  c.strides("output", {p.out_row_stride, p.out_head_stride, p.out_chunk_stride}, 8, 2);
  c.token_rows("partial", a.partial, 16, 2, a.partial_row_stride, a.partial_head_stride, heads, d,
               p.partial_row_stride, p.partial_head_stride);
  c.disjoint("output", d,
             {{"chunk", heads / per_chunk, p.out_chunk_stride},
              {"token", a.num_tokens, p.out_row_stride},
              {"head", per_chunk, p.out_head_stride}});
  // In place is fine (each thread reads its chunk before writing it) only where every row stays put.
  if (a.output == a.partial)
    c.require(per_chunk == heads && p.out_row_stride == p.partial_row_stride &&
                  p.out_head_stride == p.partial_head_stride,
              "output aliases partial with a different layout (in place needs the same strides and "
              "heads_per_chunk = num_heads)");

  c.pointer("lses", a.lses, 4);
  const bool lses_default = !a.lses_rank_stride && !a.lses_token_stride && !a.lses_head_stride;
  c.require(lses_default || (a.lses_rank_stride > 0 && a.lses_token_stride > 0 && a.lses_head_stride > 0),
            "lses strides must all be positive (or all 0 for [world_size, num_tokens, num_heads]), got rank ",
            a.lses_rank_stride, ", token ", a.lses_token_stride, ", head ", a.lses_head_stride);
  p.lses_rank_stride = lses_default ? (long long)a.num_tokens * heads : a.lses_rank_stride;
  p.lses_token_stride = lses_default ? heads : a.lses_token_stride;
  p.lses_head_stride = lses_default ? 1 : a.lses_head_stride;
  c.optional_output_lse(a.output_lse, a.output_lse_token_stride, a.output_lse_head_stride, a.num_tokens, heads,
                        p.out_lse_token_stride, p.out_lse_head_stride);

  p.out = a.output;
  p.partial = a.partial;
  p.lses = a.lses;
  p.out_lse = a.output_lse;
  p.num_tokens = a.num_tokens;
  p.num_heads = heads;
  p.head_size = d;
  p.heads_per_chunk = per_chunk;
  p.world_size = a.world_size;
  p.rank = a.rank;
  p.lse_base2 = a.lse_base.value_or(s.lse.base) == LseBase::two ? 1 : 0;

  l.grid.x = unsigned((chunks + kLseCorrectThreads - 1) / kLseCorrectThreads);
  l.grid.y = unsigned(heads);
  l.block.x = unsigned(kLseCorrectThreads);
  return l;
}

void launch_lse_correct(const Kernel& kernel, const LseCorrectLaunch& l, CUstream stream) {
  if (l.empty) return;
  kernel.launch(l.grid, l.block, 0, stream, &l.params);
}

}  // namespace attnc
