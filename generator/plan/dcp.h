// Decode context parallelism (attention-semantics.md §9; docs/dcp.md): how N ranks shard every
// request's KV, and the layer each rank runs over its shard.
//
// Token t of a request lives on rank (t / I) % N, I = the interleave size (vLLM's
// cp_kv_cache_interleave_size), at local index (t / (N * I)) * I + t % I of that rank's cache.
// Each rank holds the same KV heads; the query heads of the N ranks are all-gathered, so the
// context pass runs N * H_local query heads over the local shard, without a causal mask (every
// context token precedes the new tokens, whose own causal pass is separate), and returns its LSE.
#pragma once

#include "generator/spec/spec.h"

namespace attnc {

struct DcpShard {
  long long world_size = 1;  // N >= 1
  long long interleave = 1;  // I >= 1
};

// The rank holding token t, and t's index in that rank's cache.
long long dcp_rank_of(const DcpShard&, long long t);
long long dcp_local_index(const DcpShard&, long long t);
// The global position of local index j on `rank` (the inverse of the two above).
long long dcp_global_position(const DcpShard&, long long rank, long long j);
// How many of a request's first `len` tokens `rank` holds (vLLM's get_dcp_local_seq_lens).
long long dcp_local_len(const DcpShard&, long long rank, long long len);
// The longest local length of any request up to `max_len` tokens: ceil(max_len / (N * I)) * I,
// as vLLM sizes max_dcp_context_kv_len (no device-to-host copy).
long long dcp_max_local_len(const DcpShard&, long long max_len);
// Throws std::invalid_argument naming the field when N or I is < 1.
void check_dcp_shard(const DcpShard&);

// The context pass's layer for a rank whose own layer is `local` (H_local query heads): N * H_local
// query heads, no mask, the LSE returned (head-major, base e unless `local` says otherwise),
// kernels [decode]. Refuses with NotSupportedYet what a shard cannot compute: ALiBi and sliding
// windows (they need each key's global position; the kernels see local indices), attention sinks
// (each rank would count the sink once: N times in all), block sparsity (positional). An MLA
// layer's context pass is its absorbed decode (mla_decode) over the rank's latent shard. Throws
// std::invalid_argument for world_size < 1 or a head count past the limit.
Spec dcp_context_spec(const Spec& local, int world_size);

}  // namespace attnc
