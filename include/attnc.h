/* attnc C API: one attention layer (a YAML spec) served by the runtime dispatcher.
 *
 * Plain C, no C++ types; every function returns an attnc_status (0 = ATTNC_OK) and never lets an
 * exception out. On failure attnc_last_error() holds a message for the calling thread, naming the
 * argument, what it got and what is allowed.
 *
 * ABI growth: attnc_options, attnc_call and attnc_selection start with struct_size, the size of
 * the struct as the caller's header declares it. Set it to sizeof before anything else, then start
 * attnc_options / attnc_call from attnc_options_init / attnc_call_init, which set every field to its
 * default. The library reads and writes only the first min(struct_size, its own sizeof) bytes, so a
 * caller built against an older, smaller struct is never written past its end, and fields a newer
 * header added are left to the caller (zero them by initialising the struct as below). A
 * struct_size smaller than the first version's is ATTNC_ERR_INVALID_ARGUMENT, from the *_init too.
 *
 *   attnc_options opt = {.struct_size = sizeof(attnc_options)};
 *   attnc_options_init(&opt);
 *   attnc_attention* att;
 *   if (attnc_attention_create_from_file("specs/llama-3-8b.yaml", &opt, &att)) puts(attnc_last_error());
 *   attnc_attention_reserve(att, ATTNC_KIND_DECODE, 256, 1, 32768);
 *   attnc_call c = {.struct_size = sizeof(attnc_call)};
 *   attnc_call_init(&c);
 *   c.kind = ATTNC_KIND_DECODE; c.q = q; c.k = k_cache; ...
 *   attnc_attention_run(att, &c, stream);
 *   attnc_attention_destroy(att);
 */
#ifndef ATTNC_H_
#define ATTNC_H_

#include <stddef.h>

#if defined(__GNUC__)
#define ATTNC_API __attribute__((visibility("default")))
#else
#define ATTNC_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum attnc_status {
  ATTNC_OK = 0,
  ATTNC_ERR_INVALID_ARGUMENT = 1, /* NULL handle or pointer, bad enum value, struct_size too small */
  ATTNC_ERR_SPEC = 2,             /* the spec failed to read, parse or validate */
  ATTNC_ERR_NOT_SUPPORTED = 3,    /* valid, but no template generates it yet */
  ATTNC_ERR_BAD_CALL = 4,         /* the call's tensors, lengths or scalars do not fit the kernel */
  ATTNC_ERR_NO_JIT = 5,           /* kernel not in the cache and JIT compiles are off */
  ATTNC_ERR_COMPILE = 6,          /* NVRTC failed (the message has the log) */
  ATTNC_ERR_NO_GPU = 7,           /* no CUDA driver or no GPU */
  ATTNC_ERR_CUDA = 8,             /* a driver call failed */
  ATTNC_ERR_BUFFER_TOO_SMALL = 9, /* an output buffer cannot hold the result */
  ATTNC_ERR_DISPATCH = 10,        /* the dispatcher cannot serve the call (kind not in the spec, ...) */
  ATTNC_ERR_INTERNAL = 11
} attnc_status;

typedef enum attnc_kind { ATTNC_KIND_PREFILL = 0, ATTNC_KIND_PREFILL_PAGED = 1, ATTNC_KIND_DECODE = 2 } attnc_kind;

typedef enum attnc_dtype { ATTNC_DTYPE_UNSET = -1, ATTNC_DTYPE_BF16 = 0, ATTNC_DTYPE_FP16 = 1 } attnc_dtype;

/* Where a call's config came from (see attnc_attention_select). */
typedef enum attnc_origin {
  ATTNC_ORIGIN_MEMORY = 0,    /* pinned in memory */
  ATTNC_ORIGIN_TUNED = 1,     /* a tuning record */
  ATTNC_ORIGIN_HEURISTIC = 2, /* no record: default config and split heuristic */
  ATTNC_ORIGIN_FALLBACK = 3   /* a record exists but its kernel is not ready or failed: heuristic serves */
} attnc_origin;

typedef struct attnc_options {
  size_t struct_size;     /* sizeof(attnc_options), set before attnc_options_init */
  const char* db;         /* NULL or "": default cache; "none": memory only; else a database path */
  int device;             /* CUDA device ordinal */
  int use_tuning;         /* 0: ignore tuning records */
  int no_jit;             /* -1: from ATTNC_NO_JIT in the environment; 0: compile on a miss; 1: fail */
  int background_compile; /* 1: a tuned kernel compiles on a worker while the heuristic one serves */
  /* Describe the device instead of asking the driver (select and prepare then need no GPU):
   * all four set, or device_name NULL. */
  const char* device_name; /* e.g. "NVIDIA H200" */
  const char* device_arch; /* e.g. "sm_90a" */
  int device_sm_count;
  int device_driver_version; /* e.g. 13000 */
} attnc_options;

/* One attention call; mirrors attnc::AttentionArgs (runtime/launch/attention_args.h). Strides are in
 * elements; 0 means contiguous where a default exists. */
typedef struct attnc_call {
  size_t struct_size; /* sizeof(attnc_call), set before attnc_call_init */
  int kind;           /* attnc_kind */
  int dtype;          /* attnc_dtype of q/k/v/o, checked against the spec; ATTNC_DTYPE_UNSET: not stated */
  int num_q_heads, num_kv_heads, head_dim, head_dim_v; /* checked when non-zero */

  const void* q; /* [total_q, Hq, D] */
  const void* k; /* contiguous [total_k, Hkv, D]; paged: the K plane */
  const void* v;
  void* o;                 /* [total_q, Hq, Dv] */
  float* lse;              /* required iff the spec asks for LSE */
  const int* cu_seqlens_q; /* [batch + 1]; NULL for plain decode (one token per request) */
  const int* cu_seqlens_k; /* [batch + 1]: contiguous K/V */
  int batch, max_seqlen_q, total_q, max_seqlen_k;

  long long q_row_stride, q_head_stride;
  long long k_row_stride, k_head_stride, k_block_stride;
  long long v_row_stride, v_head_stride, v_block_stride;
  long long o_row_stride, o_head_stride;

  /* Paged K/V: page size, pages in the cache, and one page-table form. */
  int page_size, num_blocks;
  const int* block_table; /* [batch, block_table_stride] with seqused_k (FlashAttention / vLLM form) */
  long long block_table_stride;
  int max_blocks_per_seq;
  const int* seqused_k;
  const int* kv_indptr; /* FlashInfer form: [batch + 1] into kv_indices, with kv_last_page_len */
  const int* kv_indices;
  const int* kv_last_page_len;

  float softmax_scale;           /* 0: 1/sqrt(head_dim) */
  float softcap;                 /* < 0: the spec's */
  int window_left, window_right; /* -2: the spec's; -1 unbounded */
  const float* alibi_slopes;     /* [Hq] or [batch, Hq] fp32 */
  long long alibi_batch_stride;
  const float* sinks; /* [Hq] fp32 */

  int num_splits;  /* 0: dispatcher's choice (lowered to fit the workspace); N: exactly N */
  void* workspace; /* NULL: the handle's reserved workspace */
  size_t workspace_bytes;

  /* Added after the first version (struct_size tells which fields a caller has). */
  int total_k; /* rows of contiguous k and v; -1 (attnc_call_init): unknown. prefill_sm90 reads K/V
                  through TMA and needs it (or host cu_seqlens_k); without it a prefill on sm_90a
                  runs on prefill_sm80, at about 0.4x the speed */
  /* MLA decode (an mla spec's decode kernel, mla_decode): q is [total_q, Hq, 576], or q_nope
     [total_q, Hq, 512] with q_pe [total_q, Hq, 64] here (strides 0: contiguous); k is the latent
     cache [num_blocks, page_size, 576] (page_size a multiple of 64) and v NULL or k. */
  const void* q_pe;
  long long q_pe_row_stride, q_pe_head_stride;
  /* fp8 paged caches (spec kv_cache.dtype fp8_e4m3 / fp8_e5m2; k, v and their strides in bytes):
     element = stored byte * k_scale[0] * k_descale[b * batch_stride + kv_head * head_stride], V
     alike. Each optional (NULL: 1), device fp32: k_scale/v_scale [1] (what cache_write divided
     by), k_descale/v_descale FlashAttention-3's [batch, Hkv] (strides in floats; -1 from
     attnc_call_init: contiguous; 0 broadcasts). */
  const float* k_scale;
  const float* v_scale;
  const float* k_descale;
  const float* v_descale;
  long long k_descale_batch_stride, k_descale_head_stride;
  long long v_descale_batch_stride, v_descale_head_stride;
  /* int8 quant modes (int8_qkv, int8_qk): q and k are int8 (v too for int8_qkv); NULL otherwise. */
  const float* q_scale;          /* per token and q head: [total_q, Hq] (strides 0, 0) or any (row, head) strides,
                                    e.g. 1, total_q for the int8 fork's [Hq, total_q] */
  long long q_scale_row_stride, q_scale_head_stride;
  const float* k_token_scale;    /* paged: [num_blocks, Hkv, page_size]; contiguous: [total_k, Hkv] */
  const float* v_channel_scale;  /* int8_qkv: [Hkv, Dv] per channel */
  /* Decode: the sum of the requests' KV lengths when the host knows it (0: unknown). The split-KV
     choice then sees a ragged batch (one long request beside short ones) for what it is and
     spreads the long request over the SMs; without it the split count assumes every request is
     max_seqlen_k long. Only the split count depends on it: results do not. */
  long long seqlen_k_sum;
} attnc_call;

/* What attnc_attention_run would use for a shape. */
typedef struct attnc_selection {
  size_t struct_size; /* sizeof(attnc_selection) */
  int num_splits;
  int origin;        /* attnc_origin */
  int cached;        /* the bucket was already in memory */
  int kernel_loaded; /* the kernel is loaded: a run launches at once */
  int block_m, block_n, warps, stages;
} attnc_selection;

typedef struct attnc_attention attnc_attention;

ATTNC_API const char* attnc_version(void);
/* The calling thread's last error message ("" when none); valid until its next attnc call. */
ATTNC_API const char* attnc_last_error(void);

/* The defaults into a struct whose struct_size the caller has set (see "ABI growth" above). */
ATTNC_API int attnc_options_init(attnc_options* options);
ATTNC_API int attnc_call_init(attnc_call* call);

/* options may be NULL (defaults). */
ATTNC_API int attnc_attention_create_from_file(const char* spec_path, const attnc_options* options,
                                               attnc_attention** out);
ATTNC_API int attnc_attention_create_from_yaml(const char* yaml_text, const attnc_options* options,
                                               attnc_attention** out);
ATTNC_API void attnc_attention_destroy(attnc_attention* attention);

/* stream is a CUstream (NULL: the legacy default stream). Allocates nothing and never
 * synchronises once the shape's bucket is warm, so it can be captured in a CUDA graph. */
ATTNC_API int attnc_attention_run(attnc_attention* attention, const attnc_call* call, void* stream);

/* What run would pick. `selection` and `config_json` may each be NULL; config_json receives
 * {"kind","bucket","config":{...},"num_splits","origin","entry","cached","kernel_loaded"} as JSON
 * (ATTNC_ERR_BUFFER_TOO_SMALL when it does not fit: 1024 bytes always do). */
ATTNC_API int attnc_attention_select(attnc_attention* attention, int kind, int batch, int max_seqlen_q,
                                     int max_seqlen_k, attnc_selection* selection, char* config_json,
                                     size_t config_json_size);

/* Sizes the split-KV workspace for every call up to this shape (device memory), at the split count
 * the dispatcher picks or any count a call forces (call.num_splits), up to one part per KV tile. */
ATTNC_API int attnc_attention_reserve(attnc_attention* attention, int kind, int batch, int max_seqlen_q,
                                      int max_seqlen_k);
ATTNC_API int attnc_attention_reserve_bytes(attnc_attention* attention, size_t bytes);
/* The workspace reserve would allocate, without allocating (no GPU needed). */
ATTNC_API int attnc_attention_workspace_needed(attnc_attention* attention, int kind, int batch, int max_seqlen_q,
                                               int max_seqlen_k, size_t* bytes);

/* Builds the kernel run would use for the shape into the cache (no GPU needed).
 * kernel_origin (may be NULL): 0 memory, 1 loaded from the cache, 2 compiled here. */
ATTNC_API int attnc_attention_prepare(attnc_attention* attention, int kind, int batch, int max_seqlen_q,
                                      int max_seqlen_k, int* kernel_origin);
/* Waits for background compiles. */
ATTNC_API int attnc_attention_wait_background(attnc_attention* attention);
/* The spec as the handle holds it, for bindings: {"name","spec_id","dtype","head_dim","head_dim_v",
 * "num_q_heads","num_kv_heads","page_size","kv_layout","kv_cache_dtype","lse_layout","lse_base","softcap","alibi",
 * "sinks","kernels":[...]}
 * (ATTNC_ERR_BUFFER_TOO_SMALL when it does not fit: 2048 bytes always do). */
ATTNC_API int attnc_attention_spec_json(attnc_attention* attention, char* json, size_t json_size);
/* Warnings so far (cache unusable, tuning record ignored, background compile failed); "" if none.
 * Valid until the next call on this thread. */
ATTNC_API const char* attnc_attention_warnings(attnc_attention* attention);

/* The workspace reserve would allocate when forced split counts are covered only up to
 * max_num_splits (> 0; 0: every count, as attnc_attention_workspace_needed). Give the result to
 * attnc_attention_reserve_bytes to serve with less memory. */
ATTNC_API int attnc_attention_workspace_needed_splits(attnc_attention* attention, int kind, int batch,
                                                      int max_seqlen_q, int max_seqlen_k, int max_num_splits,
                                                      size_t* bytes);

/* ---- Ops of the same layer: merge, cache write, cascade, DCP's LSE correction ----
 * Built from the spec's dims and dtypes (whether or not its `kernels:` list names them): the first
 * call builds (memory -> SQLite -> NVRTC) and loads the kernel, later calls check and launch on
 * `stream` without allocating (capturable once warm). Strides are in elements; 0 = contiguous. */

typedef enum attnc_lse_base { ATTNC_LSE_BASE_SPEC = 0, ATTNC_LSE_BASE_E = 1, ATTNC_LSE_BASE_2 = 2 } attnc_lse_base;

/* vLLM's merge_attn_states(output, prefix_output, prefix_lse, suffix_output, suffix_lse,
 * output_lse): output = the two partial attentions weighted by their LSEs (a row whose LSEs are both
 * -inf gives 0; +inf LSEs are taken as -inf, as vLLM does). Outputs [num_tokens, num_heads,
 * head_size] in the spec's dtype; LSEs fp32, by default vLLM's [num_heads, num_tokens]. */
typedef struct attnc_merge {
  size_t struct_size; /* sizeof(attnc_merge), set before attnc_merge_init */
  void* output;
  const void* prefix_output;
  const float* prefix_lse;
  const void* suffix_output;
  const float* suffix_lse;
  float* output_lse; /* optional */
  int num_tokens;
  int num_heads; /* 0: the spec's num_q_heads */
  int head_size; /* 0: the spec's head_dim_v (MLA specs: or kv_lora_rank) */
  long long output_row_stride, output_head_stride;
  long long prefix_row_stride, prefix_head_stride;
  long long suffix_row_stride, suffix_head_stride;
  /* Token and head strides of each LSE, given together; both 0 = [num_heads, num_tokens]. */
  long long prefix_lse_token_stride, prefix_lse_head_stride;
  long long suffix_lse_token_stride, suffix_lse_head_stride;
  long long output_lse_token_stride, output_lse_head_stride;
  int lse_base; /* attnc_lse_base of all three LSEs */
} attnc_merge;

/* vLLM's reshape_and_cache_flash(key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype,
 * k_scale, v_scale): token i's key and value go to page slot_mapping[i] / block_size, position
 * slot_mapping[i] % block_size; a negative slot skips the token. The cache's dtype is the spec's
 * kv_cache.dtype (same, or fp8_e4m3 / fp8_e5m2 with k_scale and v_scale: stored =
 * satfinite(value / scale)). */
typedef struct attnc_cache_write {
  size_t struct_size; /* sizeof(attnc_cache_write), set before attnc_cache_write_init */
  const void* key;   /* [>= num_tokens, num_kv_heads, head_dim]; a view of fused QKV is fine */
  const void* value; /* [>= num_tokens, num_kv_heads, head_dim_v] */
  void* key_cache;   /* page 0, position 0, head 0 of the key plane */
  void* value_cache;
  const long long* slot_mapping; /* device int64 [num_tokens] */
  const float* k_scale;          /* fp8 caches: device fp32 [1], or [num_kv_heads] with per_head_scale */
  const float* v_scale;
  int per_head_scale;
  int num_tokens;
  int num_kv_heads; /* 0: the spec's */
  int head_size;    /* 0: the spec's head_dim */
  long long key_row_stride, key_head_stride;
  long long value_row_stride, value_head_stride;
  int block_size; /* 0: the spec's kv_cache.page_size */
  int num_blocks;
  /* Cache strides in cache elements (page, position in page, head); all 0: the spec's layout.
   * vLLM's (2, nb, bs, Hkv, D): page bs*Hkv*D, position Hkv*D, head D. */
  long long key_cache_block_stride, key_cache_page_stride, key_cache_head_stride;
  long long value_cache_block_stride, value_cache_page_stride, value_cache_head_stride;
  const long long* host_slot_mapping; /* optional host copy: every slot is checked first */
  /* int8 caches (int8_qkv, int8_qk): keys quantised per token and head, their scales here
     [num_blocks, Hkv, block_size] fp32; int8_qkv quantises value with v_scale [Hkv, Dv]. */
  float* key_scale_cache;
} attnc_cache_write;

/* Cascade attention (vLLM's cascade_attention): every request shares the first common_prefix_len
 * tokens of its KV (the same pages at the start of each block-table row); the shared pages are
 * read once. Three kernels on `stream`: the prefix pass, the suffix pass, their merge. */
typedef struct attnc_cascade {
  size_t struct_size; /* sizeof(attnc_cascade), set before attnc_cascade_init */
  const void* query;  /* [num_tokens, Hq, D] */
  const void* key_cache;
  const void* value_cache;
  void* output; /* [num_tokens, Hq, Dv] */
  long long q_row_stride, q_head_stride;
  long long o_row_stride, o_head_stride;
  long long k_row_stride, k_head_stride, k_block_stride; /* required */
  long long v_row_stride, v_head_stride, v_block_stride;
  int page_size, num_blocks;
  int num_tokens, num_reqs;
  const int* cu_query_lens;        /* [num_reqs + 1] */
  int max_query_len;               /* host */
  const int* cu_prefix_query_lens; /* [2] = {0, num_tokens} */
  const int* prefix_kv_lens;       /* [1] = {common_prefix_len} */
  const int* suffix_kv_lens;       /* [num_reqs] = seq_lens - common_prefix_len */
  int common_prefix_len;           /* host; a positive multiple of page_size */
  int max_kv_len;                  /* host, optional (0: unknown) */
  const int* block_table;          /* [num_reqs, block_table_stride] */
  long long block_table_stride;
  int max_blocks_per_seq;
  float softmax_scale; /* 0: 1/sqrt(head_dim) */
  float softcap;       /* < 0: the spec's */
  const float* sinks;  /* [Hq] when the spec has sinks */
  void* workspace;     /* NULL: the handle's reserved workspace (attnc_attention_cascade_workspace_needed) */
  size_t workspace_bytes;
  /* Optional host copies, checked before launch. */
  const int* host_cu_query_lens;
  const int* host_suffix_kv_lens;
  const int* host_block_table;
} attnc_cascade;

/* Decode context parallelism's LSE correction (vLLM's cp_lse_ag_out_rs between its all-gather and
 * its reduce-scatter; docs/dcp.md), on the layer of the gathered query heads
 * (attnc_attention_dcp_context_yaml). `partial` is this rank's attention over its shard of the
 * keys, `lses` the LSEs of all world_size ranks (an all-gather). Writes
 *   lse = log(sum_r exp(lses[r])),  output = partial * exp(lses[rank] - lse)
 * per (token, head) (NaN and +inf LSEs count as -inf; a weight of 0 writes 0) and, when output_lse
 * is set, lse. Output head h goes to chunk h / heads_per_chunk: by default the output is
 * [num_heads / heads_per_chunk, num_tokens, heads_per_chunk, head_size], ready for a
 * reduce-scatter over heads. */
typedef struct attnc_lse_correct {
  size_t struct_size; /* sizeof(attnc_lse_correct), set before attnc_lse_correct_init */
  void* output;       /* may be partial itself (same strides, heads_per_chunk = num_heads) */
  const void* partial; /* [num_tokens, num_heads, head_size] in the spec's dtype */
  const float* lses;   /* [world_size, num_tokens, num_heads] by default */
  float* output_lse;   /* optional; [num_heads, num_tokens] by default */
  int num_tokens;
  int num_heads;  /* 0: the spec's num_q_heads */
  int head_size;  /* 0: the spec's head_dim_v (MLA specs: or kv_lora_rank); a multiple of 8 */
  int world_size; /* N >= 1 */
  int rank;       /* 0 <= rank < N */
  int heads_per_chunk; /* divides num_heads; 0: num_heads (one chunk, the plain layout) */
  long long output_row_stride, output_head_stride, output_chunk_stride;
  long long partial_row_stride, partial_head_stride;
  /* Float strides, all three given or all 0. */
  long long lses_rank_stride, lses_token_stride, lses_head_stride;
  long long output_lse_token_stride, output_lse_head_stride;
  int lse_base; /* attnc_lse_base of lses and output_lse */
} attnc_lse_correct;

ATTNC_API int attnc_merge_init(attnc_merge* merge);
ATTNC_API int attnc_lse_correct_init(attnc_lse_correct* correct);
ATTNC_API int attnc_cache_write_init(attnc_cache_write* write);
ATTNC_API int attnc_cascade_init(attnc_cascade* cascade);

ATTNC_API int attnc_attention_merge(attnc_attention* attention, const attnc_merge* merge, void* stream);
ATTNC_API int attnc_attention_cache_write(attnc_attention* attention, const attnc_cache_write* write, void* stream);
ATTNC_API int attnc_attention_lse_correct(attnc_attention* attention, const attnc_lse_correct* correct, void* stream);
/* Decode context parallelism (docs/dcp.md): the YAML of the layer a rank's context pass runs, for
 * `attention` as the rank's own layer (H_local query heads): world_size * H_local query heads, no
 * mask, the LSE returned, kernels [decode]. ATTNC_ERR_NOT_SUPPORTED for what a shard cannot compute
 * (ALiBi, sliding windows, sinks, block sparsity, MLA); ATTNC_ERR_BUFFER_TOO_SMALL as
 * attnc_attention_spec_json. No GPU needed. */
ATTNC_API int attnc_attention_dcp_context_yaml(attnc_attention* attention, int world_size, char* yaml,
                                               size_t yaml_size);
/* vLLM's get_dcp_local_seq_lens on host arrays: how many of each request's seq_lens[i] tokens
 * `rank` holds when token t lives on rank (t / interleave) % world_size. */
ATTNC_API int attnc_dcp_local_seq_lens(int world_size, int rank, int interleave, const int* seq_lens, int count,
                                       int* local_seq_lens);
/* Refused for specs with ALiBi or a sliding window (ATTNC_ERR_BAD_CALL). */
ATTNC_API int attnc_attention_cascade(attnc_attention* attention, const attnc_cascade* cascade, void* stream);
/* Bytes of workspace a cascade call of num_tokens needs (no GPU needed). */
ATTNC_API int attnc_attention_cascade_workspace_needed(attnc_attention* attention, int num_tokens, size_t* bytes);

#ifdef __cplusplus
}
#endif

#endif /* ATTNC_H_ */
