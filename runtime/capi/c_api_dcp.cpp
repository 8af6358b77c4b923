// The C API's decode context parallelism helpers (include/attnc.h; docs/dcp.md): the context pass's
// layer and the shard lengths, from generator/plan/dcp.h. The LSE correction is an op
// (c_api_ops.cpp).
#include <string>

#include "generator/plan/dcp.h"
#include "generator/spec/spec_parse.h"
#include "runtime/capi/capi_support.h"

using namespace attnc;
using namespace attnc::capi;

extern "C" {

int attnc_attention_dcp_context_yaml(attnc_attention* h, int world_size, char* yaml, size_t yaml_size) {
  if (!h) return fail(ATTNC_ERR_INVALID_ARGUMENT, "attention is NULL");
  if (!yaml) return fail(ATTNC_ERR_INVALID_ARGUMENT, "yaml is NULL");
  if (world_size < 1)
    return fail(ATTNC_ERR_INVALID_ARGUMENT, "world_size must be >= 1, got " + std::to_string(world_size));
  try {
    return copy_out(to_yaml(dcp_context_spec(h->attention->spec(), world_size)), yaml, yaml_size);
  } catch (...) {
    return fail_current("DCP context spec");
  }
}

int attnc_dcp_local_seq_lens(int world_size, int rank, int interleave, const int* seq_lens, int count,
                             int* local_seq_lens) {
  if (world_size < 1) return fail(ATTNC_ERR_INVALID_ARGUMENT, "world_size must be >= 1, got " + std::to_string(world_size));
  if (interleave < 1) return fail(ATTNC_ERR_INVALID_ARGUMENT, "interleave must be >= 1, got " + std::to_string(interleave));
  if (rank < 0 || rank >= world_size)
    return fail(ATTNC_ERR_INVALID_ARGUMENT, "rank must be in [0, world_size = " + std::to_string(world_size) +
                                                "), got " + std::to_string(rank));
  if (count < 0) return fail(ATTNC_ERR_INVALID_ARGUMENT, "count must be >= 0, got " + std::to_string(count));
  if (count > 0 && (!seq_lens || !local_seq_lens))
    return fail(ATTNC_ERR_INVALID_ARGUMENT, "seq_lens and local_seq_lens must not be NULL when count > 0");
  const DcpShard shard{world_size, interleave};
  for (int i = 0; i < count; ++i) {
    if (seq_lens[i] < 0)
      return fail(ATTNC_ERR_INVALID_ARGUMENT,
                  "seq_lens[" + std::to_string(i) + "] must be >= 0, got " + std::to_string(seq_lens[i]));
    local_seq_lens[i] = int(dcp_local_len(shard, rank, seq_lens[i]));
  }
  return ATTNC_OK;
}

}  // extern "C"
