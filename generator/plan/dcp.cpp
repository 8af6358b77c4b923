#include "generator/plan/dcp.h"

#include <stdexcept>
#include <string>

#include "generator/plan/plan.h"

namespace attnc {

void check_dcp_shard(const DcpShard& s) {
  if (s.world_size < 1)
    throw std::invalid_argument("DCP world_size must be >= 1, got " + std::to_string(s.world_size));
  if (s.interleave < 1)
    throw std::invalid_argument("DCP interleave size must be >= 1, got " + std::to_string(s.interleave));
}

long long dcp_rank_of(const DcpShard& s, long long t) { return (t / s.interleave) % s.world_size; }

long long dcp_local_index(const DcpShard& s, long long t) {
  return t / (s.world_size * s.interleave) * s.interleave + t % s.interleave;
}

long long dcp_global_position(const DcpShard& s, long long rank, long long j) {
  return j / s.interleave * s.world_size * s.interleave + rank * s.interleave + j % s.interleave;
}

long long dcp_local_len(const DcpShard& s, long long rank, long long len) {
  const long long base = len / s.interleave / s.world_size * s.interleave;  // whole rounds of N * I
  const long long rem = len - base * s.world_size;                          // tokens of the last round
  const long long extra = rem - rank * s.interleave;
  return base + (extra < 0 ? 0 : extra > s.interleave ? s.interleave : extra);
}

long long dcp_max_local_len(const DcpShard& s, long long max_len) {
  const long long round = s.world_size * s.interleave;
  return (max_len + round - 1) / round * s.interleave;
}

Spec dcp_context_spec(const Spec& local, int world_size) {
  check_dcp_shard({world_size, 1});
  if (local.alibi != Alibi::none)
    throw NotSupportedYet("ALiBi with decode context parallelism (the bias needs each key's global position; "
                          "a rank's kernel sees its shard's local indices)");
  if (local.mask.kind == MaskKind::sliding_window)
    throw NotSupportedYet("sliding windows with decode context parallelism (the window needs each key's global "
                          "position; a rank's kernel sees its shard's local indices)");
  if (local.sinks)
    throw NotSupportedYet("attention sinks with decode context parallelism (every rank would add the sink to its "
                          "denominator: N times in the combined result)");
  if (local.sparse.enabled)
    throw NotSupportedYet("block-sparse attention with decode context parallelism (its blocks are positional)");
  constexpr long long kMaxHeads = 65535;  // the op kernels' grid y
  if ((long long)local.num_q_heads * world_size > kMaxHeads)
    throw std::invalid_argument("DCP: num_q_heads " + std::to_string(local.num_q_heads) + " x world_size " +
                                std::to_string(world_size) + " is past " + std::to_string(kMaxHeads) + " heads");
  Spec s = local;
  s.name = local.name + "-dcp" + std::to_string(world_size);
  s.num_q_heads = local.num_q_heads * world_size;
  // MLA: the shard pass is the absorbed decode (MQA over the one latent head, q gathered as
  // [T, N*H, 576]); the spec's num_kv_heads is its MHA prefill's, which follows num_q_heads.
  if (s.mla.enabled) s.num_kv_heads = s.num_q_heads;
  s.mask = MaskSpec{MaskKind::none, -1, -1};
  if (s.lse.layout == LseLayout::none) s.lse.layout = LseLayout::head_major;
  s.kernels = KernelSet{};
  s.kernels.prefill = false;
  s.kernels.decode = true;
  return s;
}

}  // namespace attnc
