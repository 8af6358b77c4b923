// The C API's ops (include/attnc.h): merge_attn_states, reshape_and_cache_flash, cascade and DCP's
// LSE correction, each a versioned struct read into the runtime's args (runtime/launch/) and run
// by the handle.
#include <cstddef>
#include <optional>
#include <string>

#include "runtime/capi/capi_support.h"

namespace {

using namespace attnc;
using namespace attnc::capi;

// The first version's sizes: a caller's struct_size below these is too old or unset.
constexpr size_t kMergeV1 = offsetof(attnc_merge, lse_base) + sizeof(int);
constexpr size_t kCacheWriteV1 = offsetof(attnc_cache_write, host_slot_mapping) + sizeof(void*);
constexpr size_t kCascadeV1 = offsetof(attnc_cascade, host_block_table) + sizeof(void*);
constexpr size_t kLseCorrectV1 = offsetof(attnc_lse_correct, lse_base) + sizeof(int);

template <class T>
void zeroed(T& s) {
  s = T{};
  s.struct_size = sizeof s;
}
void default_merge(attnc_merge& m) { zeroed(m); }
void default_cache_write(attnc_cache_write& w) { zeroed(w); }
void default_lse_correct(attnc_lse_correct& c) { zeroed(c); }
void default_cascade(attnc_cascade& c) {
  zeroed(c);
  c.softcap = -1.f;
}

std::optional<LseBase> lse_base_of(int base) {
  if (base == ATTNC_LSE_BASE_E) return LseBase::e;
  if (base == ATTNC_LSE_BASE_2) return LseBase::two;
  return std::nullopt;
}

// An lse_base outside the enum, named for the caller's struct (only when its struct has the field).
int check_lse_base(const char* what, int base) {
  if (base == ATTNC_LSE_BASE_SPEC || base == ATTNC_LSE_BASE_E || base == ATTNC_LSE_BASE_2) return ATTNC_OK;
  return fail(ATTNC_ERR_INVALID_ARGUMENT, std::string(what) + ".lse_base " + std::to_string(base) +
                                              ": expected ATTNC_LSE_BASE_SPEC (0), ATTNC_LSE_BASE_E (1) or "
                                              "ATTNC_LSE_BASE_2 (2)");
}

MergeArgs to_args(const attnc_merge& m) {
  MergeArgs a;
  a.output = m.output;
  a.prefix_output = m.prefix_output;
  a.prefix_lse = m.prefix_lse;
  a.suffix_output = m.suffix_output;
  a.suffix_lse = m.suffix_lse;
  a.output_lse = m.output_lse;
  a.num_tokens = m.num_tokens;
  a.num_heads = m.num_heads;
  a.head_size = m.head_size;
  a.output_row_stride = m.output_row_stride;
  a.output_head_stride = m.output_head_stride;
  a.prefix_row_stride = m.prefix_row_stride;
  a.prefix_head_stride = m.prefix_head_stride;
  a.suffix_row_stride = m.suffix_row_stride;
  a.suffix_head_stride = m.suffix_head_stride;
  a.prefix_lse_token_stride = m.prefix_lse_token_stride;
  a.prefix_lse_head_stride = m.prefix_lse_head_stride;
  a.suffix_lse_token_stride = m.suffix_lse_token_stride;
  a.suffix_lse_head_stride = m.suffix_lse_head_stride;
  a.output_lse_token_stride = m.output_lse_token_stride;
  a.output_lse_head_stride = m.output_lse_head_stride;
  a.lse_base = lse_base_of(m.lse_base);
  return a;
}

LseCorrectArgs to_args(const attnc_lse_correct& c) {
  LseCorrectArgs a;
  a.output = c.output;
  a.partial = c.partial;
  a.lses = c.lses;
  a.output_lse = c.output_lse;
  a.num_tokens = c.num_tokens;
  a.num_heads = c.num_heads;
  a.head_size = c.head_size;
  a.world_size = c.world_size;
  a.rank = c.rank;
  a.heads_per_chunk = c.heads_per_chunk;
  a.output_row_stride = c.output_row_stride;
  a.output_head_stride = c.output_head_stride;
  a.output_chunk_stride = c.output_chunk_stride;
  a.partial_row_stride = c.partial_row_stride;
  a.partial_head_stride = c.partial_head_stride;
  a.lses_rank_stride = c.lses_rank_stride;
  a.lses_token_stride = c.lses_token_stride;
  a.lses_head_stride = c.lses_head_stride;
  a.output_lse_token_stride = c.output_lse_token_stride;
  a.output_lse_head_stride = c.output_lse_head_stride;
  a.lse_base = lse_base_of(c.lse_base);
  return a;
}

CacheWriteArgs to_args(const attnc_cache_write& w) {
  CacheWriteArgs a;
  a.key = w.key;
  a.value = w.value;
  a.key_cache = w.key_cache;
  a.value_cache = w.value_cache;
  a.slot_mapping = w.slot_mapping;
  a.k_scale = w.k_scale;
  a.v_scale = w.v_scale;
  a.per_head_scale = w.per_head_scale != 0;
  a.num_tokens = w.num_tokens;
  a.num_kv_heads = w.num_kv_heads;
  a.head_size = w.head_size;
  a.key_row_stride = w.key_row_stride;
  a.key_head_stride = w.key_head_stride;
  a.value_row_stride = w.value_row_stride;
  a.value_head_stride = w.value_head_stride;
  a.block_size = w.block_size;
  a.num_blocks = w.num_blocks;
  a.key_cache_block_stride = w.key_cache_block_stride;
  a.key_cache_page_stride = w.key_cache_page_stride;
  a.key_cache_head_stride = w.key_cache_head_stride;
  a.value_cache_block_stride = w.value_cache_block_stride;
  a.value_cache_page_stride = w.value_cache_page_stride;
  a.value_cache_head_stride = w.value_cache_head_stride;
  a.host_slot_mapping = w.host_slot_mapping;
  a.key_scale_cache = w.key_scale_cache;
  return a;
}

CascadeArgs to_args(const attnc_cascade& c, CascadeHostMetadata* host) {
  CascadeArgs a;
  a.query = c.query;
  a.key_cache = c.key_cache;
  a.value_cache = c.value_cache;
  a.output = c.output;
  a.q_row_stride = c.q_row_stride;
  a.q_head_stride = c.q_head_stride;
  a.o_row_stride = c.o_row_stride;
  a.o_head_stride = c.o_head_stride;
  a.k_row_stride = c.k_row_stride;
  a.k_head_stride = c.k_head_stride;
  a.k_block_stride = c.k_block_stride;
  a.v_row_stride = c.v_row_stride;
  a.v_head_stride = c.v_head_stride;
  a.v_block_stride = c.v_block_stride;
  a.page_size = c.page_size;
  a.num_blocks = c.num_blocks;
  a.num_tokens = c.num_tokens;
  a.num_reqs = c.num_reqs;
  a.cu_query_lens = c.cu_query_lens;
  a.max_query_len = c.max_query_len;
  a.cu_prefix_query_lens = c.cu_prefix_query_lens;
  a.prefix_kv_lens = c.prefix_kv_lens;
  a.suffix_kv_lens = c.suffix_kv_lens;
  a.common_prefix_len = c.common_prefix_len;
  a.max_kv_len = c.max_kv_len;
  a.block_table = c.block_table;
  a.block_table_stride = c.block_table_stride;
  a.max_blocks_per_seq = c.max_blocks_per_seq;
  a.softmax_scale = c.softmax_scale;
  a.softcap = c.softcap;
  a.sinks = c.sinks;
  a.workspace = c.workspace;
  a.workspace_bytes = c.workspace_bytes;
  if (c.host_cu_query_lens || c.host_suffix_kv_lens || c.host_block_table) {
    *host = {c.host_cu_query_lens, c.host_suffix_kv_lens, c.host_block_table};
    a.host = host;
  }
  return a;
}

// Reads the caller's struct, then runs `op` on the handle; every failure is a status and a message.
template <class T, class Op>
int run_op(const char* what, const char* call, attnc_attention* h, const T* in, size_t v1, void (*defaults)(T&), Op op) {
  if (!h) return fail(ATTNC_ERR_INVALID_ARGUMENT, "attention is NULL");
  if (!in) return fail(ATTNC_ERR_INVALID_ARGUMENT, std::string(what) + " is NULL");
  T s;
  if (int rc = read_struct(what, *in, v1, defaults, &s)) return rc;
  try {
    op(*h->attention, s);
    return ATTNC_OK;
  } catch (...) {
    return fail_current(call);
  }
}

}  // namespace

extern "C" {

int attnc_merge_init(attnc_merge* m) { return init_struct("attnc_merge", m, kMergeV1, default_merge); }
int attnc_cache_write_init(attnc_cache_write* w) {
  return init_struct("attnc_cache_write", w, kCacheWriteV1, default_cache_write);
}
int attnc_cascade_init(attnc_cascade* c) { return init_struct("attnc_cascade", c, kCascadeV1, default_cascade); }

int attnc_attention_merge(attnc_attention* h, const attnc_merge* merge, void* stream) {
  if (merge && merge->struct_size >= kMergeV1)
    if (int rc = check_lse_base("attnc_merge", merge->lse_base)) return rc;
  return run_op("attnc_merge", "merge_attn_states call", h, merge, kMergeV1, default_merge, [&](Attention& att, const attnc_merge& m) {
    att.merge(to_args(m), static_cast<CUstream>(stream));
  });
}

int attnc_lse_correct_init(attnc_lse_correct* c) {
  return init_struct("attnc_lse_correct", c, kLseCorrectV1, default_lse_correct);
}

int attnc_attention_lse_correct(attnc_attention* h, const attnc_lse_correct* correct, void* stream) {
  if (correct && correct->struct_size >= kLseCorrectV1)
    if (int rc = check_lse_base("attnc_lse_correct", correct->lse_base)) return rc;
  return run_op("attnc_lse_correct", "lse_correct call", h, correct, kLseCorrectV1, default_lse_correct,
                [&](Attention& att, const attnc_lse_correct& c) {
                  att.lse_correct(to_args(c), static_cast<CUstream>(stream));
                });
}

int attnc_attention_cache_write(attnc_attention* h, const attnc_cache_write* write, void* stream) {
  return run_op("attnc_cache_write", "reshape_and_cache_flash call", h, write, kCacheWriteV1, default_cache_write,
                [&](Attention& att, const attnc_cache_write& w) {
                  att.cache_write(to_args(w), static_cast<CUstream>(stream));
                });
}

int attnc_attention_cascade(attnc_attention* h, const attnc_cascade* cascade, void* stream) {
  return run_op("attnc_cascade", "cascade call", h, cascade, kCascadeV1, default_cascade,
                [&](Attention& att, const attnc_cascade& c) {
                  CascadeHostMetadata host;
                  att.cascade(to_args(c, &host), static_cast<CUstream>(stream));
                });
}

int attnc_attention_cascade_workspace_needed(attnc_attention* h, int num_tokens, size_t* bytes) {
  if (!h) return fail(ATTNC_ERR_INVALID_ARGUMENT, "attention is NULL");
  if (!bytes) return fail(ATTNC_ERR_INVALID_ARGUMENT, "bytes is NULL");
  if (num_tokens < 0) return fail(ATTNC_ERR_INVALID_ARGUMENT, "num_tokens must be >= 0, got " + std::to_string(num_tokens));
  try {
    *bytes = h->attention->cascade_workspace_needed(num_tokens);
    return ATTNC_OK;
  } catch (...) {
    return fail_current("cascade call");
  }
}

}  // extern "C"
