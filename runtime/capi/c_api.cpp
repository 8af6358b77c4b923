// The C API (include/attnc.h) over the dispatcher: handles, struct_size checks, and every
// exception turned into a status code plus a thread-local message.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "attnc_version.h"
#include "generator/spec/spec_parse.h"
#include "include/attnc.h"
#include "runtime/driver/cuda_driver.h"
#include "runtime/dispatch/dispatcher.h"
#include "runtime/compiler/nvrtc_compiler.h"
#include "runtime/capi/capi_support.h"

namespace {

using namespace attnc;
using namespace attnc::capi;

thread_local std::string t_text;  // attnc_attention_warnings' result

// The first version's sizes: a caller's struct_size below these is too old or unset.
constexpr size_t kOptionsV1 = offsetof(attnc_options, device_driver_version) + sizeof(int);
constexpr size_t kCallV1 = offsetof(attnc_call, workspace_bytes) + sizeof(size_t);
constexpr size_t kSelectionV1 = offsetof(attnc_selection, stages) + sizeof(int);

void default_options(attnc_options& o) {
  o = attnc_options{};
  o.struct_size = sizeof o;
  o.use_tuning = 1;
  o.no_jit = -1;
}

void default_call(attnc_call& c) {
  c = attnc_call{};
  c.struct_size = sizeof c;
  c.kind = ATTNC_KIND_PREFILL;
  c.dtype = ATTNC_DTYPE_UNSET;
  c.softcap = -1.f;
  c.window_left = c.window_right = -2;
  c.total_k = -1;
  c.k_descale_batch_stride = c.k_descale_head_stride = -1;
  c.v_descale_batch_stride = c.v_descale_head_stride = -1;
}

int check_kind(int kind, KernelKind* out) {
  switch (kind) {
    case ATTNC_KIND_PREFILL:
      *out = KernelKind::prefill;
      return ATTNC_OK;
    case ATTNC_KIND_PREFILL_PAGED:
      *out = KernelKind::prefill_paged;
      return ATTNC_OK;
    case ATTNC_KIND_DECODE:
      *out = KernelKind::decode;
      return ATTNC_OK;
  }
  return fail(ATTNC_ERR_INVALID_ARGUMENT, "kind " + std::to_string(kind) +
                                              ": expected ATTNC_KIND_PREFILL (0), ATTNC_KIND_PREFILL_PAGED (1) or "
                                              "ATTNC_KIND_DECODE (2)");
}

int to_options(const attnc_options* in, AttentionOptions* out) {
  attnc_options o;
  default_options(o);
  if (in)
    if (int rc = read_struct("attnc_options", *in, kOptionsV1, default_options, &o)) return rc;
  out->db = o.db ? o.db : "";
  out->device = o.device;
  out->use_tuning = o.use_tuning != 0;
  if (o.no_jit >= 0) out->no_jit = o.no_jit != 0;
  out->background_compile = o.background_compile != 0;
  if (o.device_name) {
    if (!o.device_arch || o.device_sm_count <= 0)
      return fail(ATTNC_ERR_INVALID_ARGUMENT,
                  "attnc_options: device_name is set, so device_arch (e.g. \"sm_90a\") and device_sm_count (> 0) "
                  "must be too; got device_arch " +
                      std::string(o.device_arch ? o.device_arch : "NULL") + ", device_sm_count " +
                      std::to_string(o.device_sm_count));
    out->device_info = DeviceInfo{o.device_name, o.device_arch, o.device_sm_count, o.device_driver_version};
  }
  return ATTNC_OK;
}

// Copies `text` and its NUL into the caller's buffer, or says how much it needs.
template <class Make>
int create(const char* what, const char* text, const attnc_options* options, attnc_attention** out, Make make) {
  if (!out) return fail(ATTNC_ERR_INVALID_ARGUMENT, "out is NULL: pass the address of an attnc_attention*");
  *out = nullptr;
  if (!text) return fail(ATTNC_ERR_INVALID_ARGUMENT, std::string(what) + " is NULL");
  try {
    AttentionOptions o;
    if (int rc = to_options(options, &o)) return rc;
    auto h = std::make_unique<attnc_attention>();
    h->attention = make(text, std::move(o));
    *out = h.release();
    return ATTNC_OK;
  } catch (...) {
    return fail_current();
  }
}

void to_args(const attnc_call& c, AttentionArgs& a) {
  if (c.dtype == ATTNC_DTYPE_BF16) a.dtype = DType::bf16;
  if (c.dtype == ATTNC_DTYPE_FP16) a.dtype = DType::fp16;
  a.num_q_heads = c.num_q_heads;
  a.num_kv_heads = c.num_kv_heads;
  a.head_dim = c.head_dim;
  a.head_dim_v = c.head_dim_v;
  a.q = c.q;
  a.k = c.k;
  a.v = c.v;
  a.o = c.o;
  a.lse = c.lse;
  a.cu_seqlens_q = c.cu_seqlens_q;
  a.cu_seqlens_k = c.cu_seqlens_k;
  a.batch = c.batch;
  a.max_seqlen_q = c.max_seqlen_q;
  a.total_q = c.total_q;
  a.max_seqlen_k = c.max_seqlen_k;
  a.q_row_stride = c.q_row_stride;
  a.q_head_stride = c.q_head_stride;
  a.k_row_stride = c.k_row_stride;
  a.k_head_stride = c.k_head_stride;
  a.k_block_stride = c.k_block_stride;
  a.v_row_stride = c.v_row_stride;
  a.v_head_stride = c.v_head_stride;
  a.v_block_stride = c.v_block_stride;
  a.o_row_stride = c.o_row_stride;
  a.o_head_stride = c.o_head_stride;
  a.page_size = c.page_size;
  a.num_blocks = c.num_blocks;
  a.block_table = c.block_table;
  a.block_table_stride = c.block_table_stride;
  a.max_blocks_per_seq = c.max_blocks_per_seq;
  a.seqused_k = c.seqused_k;
  a.kv_indptr = c.kv_indptr;
  a.kv_indices = c.kv_indices;
  a.kv_last_page_len = c.kv_last_page_len;
  a.softmax_scale = c.softmax_scale;
  a.softcap = c.softcap;
  a.window_left = c.window_left;
  a.window_right = c.window_right;
  a.alibi_slopes = c.alibi_slopes;
  a.alibi_batch_stride = c.alibi_batch_stride;
  a.sinks = c.sinks;
  a.num_splits = c.num_splits;
  a.workspace = c.workspace;
  a.workspace_bytes = c.workspace_bytes;
  a.total_k = c.total_k;  // -1 from the defaults for a caller older than the field
  a.q_pe = c.q_pe;
  a.q_pe_row_stride = c.q_pe_row_stride;
  a.q_pe_head_stride = c.q_pe_head_stride;
  a.k_scale = c.k_scale;
  a.v_scale = c.v_scale;
  a.k_descale = c.k_descale;
  a.v_descale = c.v_descale;
  a.k_descale_batch_stride = c.k_descale_batch_stride;
  a.k_descale_head_stride = c.k_descale_head_stride;
  a.v_descale_batch_stride = c.v_descale_batch_stride;
  a.v_descale_head_stride = c.v_descale_head_stride;
  a.q_scale = c.q_scale;
  a.q_scale_row_stride = c.q_scale_row_stride;
  a.q_scale_head_stride = c.q_scale_head_stride;
  a.k_token_scale = c.k_token_scale;
  a.v_channel_scale = c.v_channel_scale;
  a.seqlen_k_sum = c.seqlen_k_sum;  // 0 from the defaults for a caller older than the field
}

}  // namespace

extern "C" {

const char* attnc_version(void) { return ATTNC_VERSION; }
const char* attnc_last_error(void) { return capi::last_error(); }

int attnc_options_init(attnc_options* o) { return init_struct("attnc_options", o, kOptionsV1, default_options); }

int attnc_call_init(attnc_call* c) { return init_struct("attnc_call", c, kCallV1, default_call); }

int attnc_attention_create_from_file(const char* path, const attnc_options* options, attnc_attention** out) {
  return create("spec_path", path, options, out,
                [](const char* p, AttentionOptions o) { return Attention::from_file(p, std::move(o)); });
}

int attnc_attention_create_from_yaml(const char* yaml, const attnc_options* options, attnc_attention** out) {
  return create("yaml_text", yaml, options, out,
                [](const char* y, AttentionOptions o) { return Attention::from_yaml(y, std::move(o)); });
}

void attnc_attention_destroy(attnc_attention* h) {
  try {
    delete h;
  } catch (...) {
  }
}

int attnc_attention_run(attnc_attention* h, const attnc_call* call, void* stream) {
  if (!h) return fail(ATTNC_ERR_INVALID_ARGUMENT, "attention is NULL");
  if (!call) return fail(ATTNC_ERR_INVALID_ARGUMENT, "call is NULL");
  attnc_call c;
  if (int rc = read_struct("attnc_call", *call, kCallV1, default_call, &c)) return rc;
  KernelKind kind;
  if (int rc = check_kind(c.kind, &kind)) return rc;
  if (c.dtype < ATTNC_DTYPE_UNSET || c.dtype > ATTNC_DTYPE_FP16)
    return fail(ATTNC_ERR_INVALID_ARGUMENT, "call.dtype " + std::to_string(c.dtype) +
                                                ": expected ATTNC_DTYPE_UNSET (-1), ATTNC_DTYPE_BF16 (0) or "
                                                "ATTNC_DTYPE_FP16 (1)");
  try {
    AttentionArgs args;
    to_args(c, args);
    h->attention->run(args, kind, static_cast<CUstream>(stream));
    return ATTNC_OK;
  } catch (...) {
    return fail_current();
  }
}

int attnc_attention_select(attnc_attention* h, int kind, int batch, int max_seqlen_q, int max_seqlen_k,
                           attnc_selection* selection, char* json, size_t json_size) {
  if (!h) return fail(ATTNC_ERR_INVALID_ARGUMENT, "attention is NULL");
  if (selection)
    if (int rc = check_size("attnc_selection", selection->struct_size, kSelectionV1, /*has_init=*/false)) return rc;
  KernelKind k;
  if (int rc = check_kind(kind, &k)) return rc;
  try {
    const Selection s = h->attention->select({k, batch, max_seqlen_q, max_seqlen_k});
    if (selection) {
      attnc_selection out{};
      out.num_splits = s.num_splits;
      out.origin = static_cast<int>(s.origin);
      out.cached = s.cached;
      out.kernel_loaded = s.kernel_loaded;
      out.block_m = s.config->block_m;
      out.block_n = s.config->block_n;
      out.warps = s.config->warps;
      out.stages = s.config->stages;
      write_struct(out, selection);
    }
    return json ? copy_out(s.to_json(), json, json_size) : ATTNC_OK;
  } catch (...) {
    return fail_current();
  }
}

int attnc_attention_reserve(attnc_attention* h, int kind, int batch, int max_seqlen_q, int max_seqlen_k) {
  if (!h) return fail(ATTNC_ERR_INVALID_ARGUMENT, "attention is NULL");
  KernelKind k;
  if (int rc = check_kind(kind, &k)) return rc;
  try {
    h->attention->reserve({k, batch, max_seqlen_q, max_seqlen_k});
    return ATTNC_OK;
  } catch (...) {
    return fail_current();
  }
}

int attnc_attention_reserve_bytes(attnc_attention* h, size_t bytes) {
  if (!h) return fail(ATTNC_ERR_INVALID_ARGUMENT, "attention is NULL");
  try {
    h->attention->reserve_bytes(bytes);
    return ATTNC_OK;
  } catch (...) {
    return fail_current();
  }
}

int attnc_attention_workspace_needed(attnc_attention* h, int kind, int batch, int max_seqlen_q, int max_seqlen_k,
                                     size_t* bytes) {
  return attnc_attention_workspace_needed_splits(h, kind, batch, max_seqlen_q, max_seqlen_k, 0, bytes);
}

int attnc_attention_workspace_needed_splits(attnc_attention* h, int kind, int batch, int max_seqlen_q,
                                            int max_seqlen_k, int max_num_splits, size_t* bytes) {
  if (!h) return fail(ATTNC_ERR_INVALID_ARGUMENT, "attention is NULL");
  if (!bytes) return fail(ATTNC_ERR_INVALID_ARGUMENT, "bytes is NULL");
  if (max_num_splits < 0)
    return fail(ATTNC_ERR_INVALID_ARGUMENT,
                "max_num_splits must be >= 0 (0: every count), got " + std::to_string(max_num_splits));
  KernelKind k;
  if (int rc = check_kind(kind, &k)) return rc;
  try {
    *bytes = h->attention->workspace_needed({k, batch, max_seqlen_q, max_seqlen_k}, max_num_splits);
    return ATTNC_OK;
  } catch (...) {
    return fail_current();
  }
}

int attnc_attention_prepare(attnc_attention* h, int kind, int batch, int max_seqlen_q, int max_seqlen_k,
                            int* kernel_origin) {
  if (!h) return fail(ATTNC_ERR_INVALID_ARGUMENT, "attention is NULL");
  KernelKind k;
  if (int rc = check_kind(kind, &k)) return rc;
  try {
    const KernelOrigin o = h->attention->prepare({k, batch, max_seqlen_q, max_seqlen_k});
    if (kernel_origin) *kernel_origin = static_cast<int>(o);
    return ATTNC_OK;
  } catch (...) {
    return fail_current();
  }
}

int attnc_attention_wait_background(attnc_attention* h) {
  if (!h) return fail(ATTNC_ERR_INVALID_ARGUMENT, "attention is NULL");
  try {
    h->attention->wait_background();
    return ATTNC_OK;
  } catch (...) {
    return fail_current();
  }
}

int attnc_attention_spec_json(attnc_attention* h, char* json, size_t json_size) {
  if (!h) return fail(ATTNC_ERR_INVALID_ARGUMENT, "attention is NULL");
  if (!json) return fail(ATTNC_ERR_INVALID_ARGUMENT, "json is NULL");
  try {
    const Spec& s = h->attention->spec();
    nlohmann::ordered_json j;
    j["name"] = s.name;
    j["spec_id"] = h->attention->spec_id();
    j["dtype"] = to_string(s.dtype);
    j["head_dim"] = s.head_dim;
    j["head_dim_v"] = s.head_dim_v;
    j["num_q_heads"] = s.num_q_heads;
    j["num_kv_heads"] = s.num_kv_heads;
    j["page_size"] = s.kv_cache.page_size;
    j["kv_layout"] = to_string(s.kv_cache.layout);
    j["kv_cache_dtype"] = to_string(s.kv_cache.dtype);
    j["lse_base"] = s.lse.base == LseBase::e ? "e" : "2";
    j["lse_layout"] = to_string(s.lse.layout);
    j["softcap"] = s.softcap;
    j["alibi"] = to_string(s.alibi);
    j["sinks"] = s.sinks;
    auto kinds = nlohmann::ordered_json::array();
    for (KernelKind k : kernels_of(s)) kinds.push_back(to_string(k));
    j["kernels"] = kinds;
    return copy_out(j.dump(), json, json_size);
  } catch (...) {
    return fail_current();
  }
}

const char* attnc_attention_warnings(attnc_attention* h) {
  try {
    t_text = h ? h->attention->warnings() : std::string();
  } catch (...) {
    t_text.clear();
  }
  return t_text.c_str();
}

}  // extern "C"
