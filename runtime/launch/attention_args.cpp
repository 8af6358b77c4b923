#include "runtime/launch/attention_args.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>

#include "attnc/params/split_combine_shape.h"
#include "attnc/params/widen_v_shape.h"
#include "runtime/driver/tensor_map.h"
#include "runtime/launch/arg_checks.h"
#include "runtime/launch/error_message.h"
#include "runtime/launch/int8_args.h"
#include "generator/plan/plan_prefill_sm90.h"

namespace attnc {
namespace {

template <class... Parts>
void require(bool ok, const Parts&... what) {
  if (!ok) throw BadCall("attention: " + message(what...));
}


// 16-byte vector loads need 16-byte aligned rows: base pointer and every stride in whole chunks
// (8 16-bit elements, or 16 fp8 bytes).
void check_tensor(const char* name, const void* ptr, std::initializer_list<long long> strides, int elem_bytes = 2) {
  require(ptr != nullptr, name, " is null");
  require(reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0, name, " must be 16-byte aligned (vector loads)");
  const int chunk = 16 / elem_bytes;
  for (long long s : strides) {
    require(s > 0, name, " strides must be positive, got ", s);
    require(s % chunk == 0, name, " strides must be multiples of ", chunk, " elements (16 bytes), got ", s);
  }
}

// The dequantisation scales of an fp8 cache (all optional), or none for a 16-bit one.
void set_fp8_scales(AttentionParams& p, const KernelPlan& plan, const AttentionArgs& a) {
  const bool fp8 = plan.kv_cache != KvDType::same;
  if (!fp8) {
    require(!a.k_scale && !a.v_scale && !a.k_descale && !a.v_descale,
            "k_scale/v_scale/k_descale/v_descale given but the kernel reads a 16-bit KV cache; they dequantise fp8 "
            "caches (spec kv_cache.dtype fp8_e4m3 or fp8_e5m2)");
    return;
  }
  for (const float* f : {a.k_scale, a.v_scale, a.k_descale, a.v_descale})
    require(reinterpret_cast<std::uintptr_t>(f) % 4 == 0, "fp8 scales and descales must be 4-byte aligned fp32");
  const long long hkv = plan.kv_heads();  // MLA: the one latent head
  if (is_mla_decode(plan))
    require(!a.v_scale && !a.v_descale,
            "v_scale/v_descale given but mla_decode reads K and V from one latent cache with one scale: give k_scale "
            "and/or k_descale [batch, 1]");
  auto stride = [](long long s, long long dflt) { return s == -1 ? dflt : s; };
  p.k_scale = a.k_scale;
  p.v_scale = a.v_scale;
  p.k_descale = a.k_descale;
  p.v_descale = a.v_descale;
  p.k_descale_batch_stride = stride(a.k_descale_batch_stride, hkv);
  p.k_descale_head_stride = stride(a.k_descale_head_stride, 1);
  p.v_descale_batch_stride = stride(a.v_descale_batch_stride, hkv);
  p.v_descale_head_stride = stride(a.v_descale_head_stride, 1);
  for (long long s : {p.k_descale_batch_stride, p.k_descale_head_stride, p.v_descale_batch_stride,
                      p.v_descale_head_stride})
    require(s >= 0, "descale strides must be >= 0 (or -1: contiguous [batch, Hkv]), got ", s);
}

// The page-table form a call uses, checked for completeness and consistency.
void check_paged(const KernelPlan& plan, const AttentionArgs& a) {
  require(a.page_size >= 16 && a.page_size % 16 == 0, "page_size must be a positive multiple of 16, got ", a.page_size);
  require(a.num_blocks >= 1, "num_blocks (pages in the cache) must be >= 1, got ", a.num_blocks);
  const bool flashinfer = a.kv_indptr || a.kv_indices || a.kv_last_page_len;
  if (flashinfer) {
    require(a.kv_indptr && a.kv_indices && a.kv_last_page_len,
            "the FlashInfer page table needs kv_indptr, kv_indices and kv_last_page_len together");
    require(!a.block_table && !a.seqused_k,
            "give either kv_indptr/kv_indices/kv_last_page_len or block_table, not both");
  } else {
    require(a.block_table != nullptr,
            "a paged call needs block_table (with seqused_k or cu_seqlens_k) or kv_indptr/kv_indices/kv_last_page_len");
    require(a.seqused_k || a.cu_seqlens_k, "block_table needs KV lengths: seqused_k or cu_seqlens_k");
    require(a.max_blocks_per_seq >= 1, "max_blocks_per_seq (usable columns of block_table) must be >= 1");
    require(a.block_table_stride >= a.max_blocks_per_seq, "block_table_stride ", a.block_table_stride,
            " is smaller than max_blocks_per_seq ", a.max_blocks_per_seq);
    require(reinterpret_cast<std::uintptr_t>(a.block_table) % 4 == 0, "block_table must be 4-byte aligned");
  }
  (void)plan;
}

// Page-table contents against the host mirrors: no page past the cache, no request longer than
// its row of the table.
void check_host_metadata(const AttentionArgs& a, const AttentionHostMetadata& h, bool paged) {
  const int b = a.batch;
  if (h.cu_seqlens_q) {
    require(h.cu_seqlens_q[0] == 0, "cu_seqlens_q[0] must be 0, got ", h.cu_seqlens_q[0]);
    for (int i = 0; i < b; ++i) {
      const int len = h.cu_seqlens_q[i + 1] - h.cu_seqlens_q[i];
      require(len >= 0, "cu_seqlens_q must be non-decreasing (request ", i, ")");
      require(len <= a.max_seqlen_q, "request ", i, " has ", len, " query tokens, over max_seqlen_q ", a.max_seqlen_q);
    }
    require(h.cu_seqlens_q[b] <= a.total_q, "cu_seqlens_q ends at ", h.cu_seqlens_q[b], ", past total_q ", a.total_q);
  }
  if (h.cu_seqlens_k)
    for (int i = 0; i < b; ++i)
      require(h.cu_seqlens_k[i + 1] >= h.cu_seqlens_k[i], "cu_seqlens_k must be non-decreasing (request ", i, ")");
  if (!paged) return;
  if (a.kv_indptr) {
    require(h.kv_indptr && h.kv_indices && h.kv_last_page_len,
            "host metadata for the FlashInfer form needs kv_indptr, kv_indices and kv_last_page_len");
    for (int i = 0; i < b; ++i) {
      const int lo = h.kv_indptr[i], hi = h.kv_indptr[i + 1];
      require(lo >= 0 && hi >= lo, "kv_indptr must be non-negative and non-decreasing (request ", i, ")");
      require(hi <= h.num_kv_indices, "kv_indptr[", i + 1, "] = ", hi, " points past kv_indices (", h.num_kv_indices,
              " entries)");
      if (hi > lo) {
        const int last = h.kv_last_page_len[i];
        require(last >= 1 && last <= a.page_size, "kv_last_page_len[", i, "] = ", last, "; allowed: 1..", a.page_size);
      }
      for (int j = lo; j < hi; ++j)
        require(h.kv_indices[j] >= 0 && h.kv_indices[j] < a.num_blocks, "kv_indices[", j, "] = ", h.kv_indices[j],
                " (request ", i, ") points past the cache of ", a.num_blocks, " pages");
    }
    return;
  }
  require(h.block_table != nullptr, "host metadata for a block-table call needs block_table");
  require(a.seqused_k ? h.seqused_k != nullptr : h.cu_seqlens_k != nullptr,
          a.seqused_k ? "host metadata needs seqused_k" : "host metadata needs cu_seqlens_k");
  const long long capacity = (long long)a.max_blocks_per_seq * a.page_size;
  for (int i = 0; i < b; ++i) {
    const int len = a.seqused_k ? h.seqused_k[i] : h.cu_seqlens_k[i + 1] - h.cu_seqlens_k[i];
    require(len >= 0, "request ", i, " has a negative KV length ", len);
    require(len <= capacity, "request ", i, " has ", len, " KV tokens, over the block table's capacity ", capacity,
            " (", a.max_blocks_per_seq, " pages of ", a.page_size, ")");
    const int pages = (len + a.page_size - 1) / a.page_size;
    for (int j = 0; j < pages; ++j) {
      const int page = h.block_table[i * a.block_table_stride + j];
      require(page >= 0 && page < a.num_blocks, "block_table[", i, "][", j, "] = ", page, " points past the cache of ",
              a.num_blocks, " pages");
    }
  }
}

// A window given per call must be one the compiled mask reads: a causal or unmasked kernel
// ignores window sizes, so a different window there would be silently dropped.
void check_window(const KernelPlan& plan, const AttentionArgs& a) {
  require(a.window_left >= -2 && a.window_right >= -2,
          "window sizes must be >= -1 (-1 unbounded; -2 takes the spec's), got (", a.window_left, ", ", a.window_right,
          ")");
  if (plan.mask_kind == MaskKind::sliding_window || (a.window_left == -2 && a.window_right == -2)) return;
  const int left = a.window_left == -2 ? -1 : a.window_left, right = a.window_right == -2 ? -1 : a.window_right;
  const bool same = plan.mask_kind == MaskKind::causal ? left == -1 && (right == 0 || a.window_right == -2) : left == -1 && right == -1;
  require(same, "window (", a.window_left, ", ", a.window_right, ") given but the kernel was compiled ",
          (plan.mask_kind == MaskKind::causal ? "causal" : "without a mask"), "; a window needs a sliding_window spec");
}

// One tensor map over a [rows, heads, cols] view (strides in elements), boxes of 64 columns by one
// head by `box_rows` rows, 128-byte swizzle: the tiles prefill_sm90 loads.
TmaDescriptor tensor_map(const char* name, const void* base, int cols, int heads, int rows, long long head_stride,
                         long long row_stride, int box_rows) {
  TensorMapView v;
  v.base = base;
  v.rank = 3;
  v.dims[0] = cols, v.dims[1] = heads, v.dims[2] = std::max(rows, 1);
  v.strides[1] = head_stride, v.strides[2] = row_stride;
  v.box[0] = 64, v.box[1] = 1, v.box[2] = box_rows;
  const std::string problem = tensor_map_problem(v);
  require(problem.empty(), "prefill_sm90 reads ", name, " through TMA, which cannot take this view: ", problem);
  const CUtensorMap map = encode_tensor_map(v, name);
  static_assert(sizeof(CUtensorMap) == sizeof(TmaDescriptor), "a tensor map is 128 bytes");
  TmaDescriptor d;
  std::memcpy(&d, &map, sizeof d);
  return d;
}

// A paged cache plane as (cols, page_size slots, heads, pages), boxes of 64 columns by `box_rows`
// slots of one head and one page, 128-byte swizzle.
TmaDescriptor paged_tensor_map(const char* name, const void* base, int cols, int heads, const AttentionArgs& a,
                               long long head_stride, long long row_stride, long long block_stride, int box_rows) {
  TensorMapView v;
  v.base = base;
  v.rank = 4;
  v.dims[0] = cols, v.dims[1] = a.page_size, v.dims[2] = heads, v.dims[3] = a.num_blocks;
  v.strides[1] = row_stride, v.strides[2] = head_stride, v.strides[3] = block_stride;
  v.box[0] = 64, v.box[1] = box_rows, v.box[2] = 1, v.box[3] = 1;
  const std::string problem = tensor_map_problem(v);
  require(problem.empty(), "prefill_sm90 reads the paged ", name, " through TMA, which cannot take this view: ", problem);
  const CUtensorMap map = encode_tensor_map(v, name);
  TmaDescriptor d;
  std::memcpy(&d, &map, sizeof d);
  return d;
}

void set_tensor_maps(AttentionLaunch& l, const KernelPlan& plan, const AttentionArgs& a) {
  const AttentionParams& p = l.params;
  const Spec& s = plan.spec;
  const int bm = plan.config.block_m, bn = plan.config.block_n;
  const int total_k = plan.paged ? 0 : known_total_k(a);
  require(total_k >= 0, "prefill_sm90 reads K and V through TMA and needs total_k (the rows of k and v)");
  l.tensor_maps = true;
  // int8 Q/K rows are mapped as 16-bit pairs of bytes (set_int8_params halved their strides).
  const int qk_cols = plan.int8 == Int8Mode::none ? plan.head_dim : plan.head_dim / 2;
  // int8_qkv's V rows too (TMA lands them raw, the producer widens them); int8_qk's V is 16-bit.
  const int v_cols = plan.int8 == Int8Mode::qkv ? plan.head_dim_v / 2 : plan.head_dim_v;
  l.maps.q = tensor_map("q", p.q, qk_cols, s.num_q_heads, a.total_q, p.q_head_stride, p.q_row_stride, bm);
  // v_prewiden: the fp16 workspace set_v_prewiden fills, [rows, Hkv, Dv] (paged: the requests'
  // rows, read in whole key tiles).
  auto wide_v_map = [&](int rows, int box) {
    return tensor_map("the widened v (workspace)", p.v_wide, plan.head_dim_v, s.num_kv_heads, rows, plan.head_dim_v,
                      (long long)s.num_kv_heads * plan.head_dim_v, box);
  };
  if (plan.paged) {
    // Boxes of gcd(page_size, block_n) rows never cross a page (PagedKvBoxes, prefill_sm90_paged.cuh).
    const int box = std::gcd(a.page_size, bn);
    l.maps.k = paged_tensor_map("k", p.k, qk_cols, s.num_kv_heads, a, p.k_head_stride, p.k_row_stride,
                                p.k_block_stride, box);
    if (plan.config.v_prewiden)
      l.maps.v = wide_v_map(a.batch * p.v_wide_request_rows, bn);  // set_v_prewiden bounds it
    else
      l.maps.v = paged_tensor_map("v", p.v, v_cols, s.num_kv_heads, a, p.v_head_stride, p.v_row_stride,
                                  p.v_block_stride, box);
    return;
  }
  // Mixed tiles: boxes of one narrow tile (a wide one takes two); paired tiles: of one sparse block.
  const int box = plan.config.mixed_tiles || plan.config.paired_tiles ? bn / 2 : bn;
  l.maps.k = tensor_map("k", p.k, qk_cols, s.num_kv_heads, total_k, p.k_head_stride, p.k_row_stride, box);
  if (plan.config.v_prewiden)
    l.maps.v = wide_v_map(total_k, box);
  else
    l.maps.v = tensor_map("v", p.v, v_cols, s.num_kv_heads, total_k, p.v_head_stride, p.v_row_stride, box);
}

// v_prewiden (int8_qkv on prefill_sm90): `<entry>_widen_v` widens the int8 v (paged: the pages
// each request's table names) into the workspace, 16-byte pieces of its rows, before the kernel
// reads it there.
void set_v_prewiden(AttentionLaunch& l, const KernelPlan& plan, const AttentionArgs& a) {
  AttentionParams& p = l.params;
  const long long rows = v_prewiden_rows(plan, a.batch, a.max_seqlen_k, known_total_k(a));
  require(rows >= 0, plan.paged ? "paged v_prewiden gathers each request's keys into max_seqlen_k rows of the "
                                  "workspace and needs max_seqlen_k (a bound on every KV length)"
                                : "v_prewiden widens the total_k rows of v and needs total_k (or host cu_seqlens_k)");
  const size_t need = v_prewiden_workspace_bytes(plan, rows);
  require(a.workspace != nullptr && a.workspace_bytes >= need, "v_prewiden widens v into a workspace of ",
          (long long)need, plan.paged ? " bytes (batch x max_seqlen_k rounded up to block_n" : " bytes (total_k",
          " x Hkv x head_dim_v x 2), got ", (long long)a.workspace_bytes,
          " (reserve() sizes it; the kernel without v_prewiden needs none)");
  require(reinterpret_cast<std::uintptr_t>(a.workspace) % 16 == 0, "workspace must be 16-byte aligned");
  // The int8 strides are in 2-byte units here (set_int8_params halved them).
  require(reinterpret_cast<std::uintptr_t>(p.v) % 16 == 0, "v must be 16-byte aligned for v_prewiden (16-byte pieces)");
  for (long long stride : {p.v_row_stride, p.v_head_stride, plan.paged ? p.v_block_stride : 0})
    require(stride % 8 == 0, "v strides must be multiples of 16 int8 elements for v_prewiden (16-byte pieces), got ",
            2 * stride);
  p.v_wide = static_cast<unsigned short*>(a.workspace);
  const long long pieces_per_row = (long long)plan.kv_heads() * (plan.head_dim_v / 16);
  long long pieces;  // 16-byte pieces a grid row widens: all of them, or (paged) one request's
  if (plan.paged) {
    require(rows < (1LL << 31), "paged v_prewiden's workspace rows (batch x max_seqlen_k rounded up to block_n, ",
            rows, ") must stay under 2^31 (a TMA dimension)");
    p.v_wide_request_rows = int(v_prewiden_request_rows(plan, a.max_seqlen_k));
    pieces = p.v_wide_request_rows * pieces_per_row;
    require(pieces < (1LL << 30), "paged v_prewiden indexes a request's pieces in 32 bits: max_seqlen_k ",
            a.max_seqlen_k, " x Hkv x head_dim_v / 16 must stay under 2^30");
    l.widen_grid.y = unsigned(a.batch);  // one grid row per request; the kernel's grid.z bounds it (<= 65535)
  } else {
    p.total_k = int(rows);
    pieces = rows * pieces_per_row;
  }
  l.widen_v = pieces > 0 && a.batch > 0;  // no rows: nothing to widen, and a grid of 0 blocks cannot launch
  l.widen_grid.x = unsigned(std::min<long long>((pieces + kWidenVThreads - 1) / kWidenVThreads, 1 << 20));
  l.widen_block.x = unsigned(kWidenVThreads);
}

// mla_decode's map over the latent cache: (576 columns, page_size slots, pages), boxes of 64
// columns by 64 slots of one page, 128-byte swizzle. An fp8 cache is mapped as 16-bit pairs of
// bytes (288 per row; strides are even: whole 16-byte chunks), unswizzled boxes of half a row
// (144 pairs) by 64 slots: two boxes land a tile's bytes as rows of 288 (features/mla_fp8.cuh).
void set_latent_cache_map(AttentionLaunch& l, const KernelPlan& plan, const AttentionArgs& a) {
  const bool fp8 = plan.kv_cache != KvDType::same;
  const int pair = fp8 ? 2 : 1;  // cache elements per 16-bit element of the map
  TensorMapView v;
  v.base = a.k;
  v.rank = 3;
  v.dims[0] = plan.head_dim / pair, v.dims[1] = a.page_size, v.dims[2] = a.num_blocks;
  v.strides[1] = a.k_row_stride / pair, v.strides[2] = a.k_block_stride / pair;
  v.box[0] = fp8 ? plan.head_dim / 4 : 64, v.box[1] = 64, v.box[2] = 1;
  if (fp8) v.swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
  const std::string problem = tensor_map_problem(v);
  require(problem.empty(), "mla_decode reads the latent cache through TMA, which cannot take this view: ", problem);
  const CUtensorMap map = encode_tensor_map(v, "k");
  std::memcpy(&l.maps.k, &map, sizeof map);
  l.tensor_maps = true;
}

// What mla_decode adds to a paged decode call: q's width (576, or 512 with q_pe apart), v aliasing
// k, whole 64-key tiles inside a page.
void check_mla_decode(const AttentionArgs& a, AttentionParams& p, int hq) {
  require(a.page_size % 64 == 0, "mla_decode reads 64-key tiles inside one page: page_size must be a multiple of 64, got ",
          a.page_size);
  require(a.v == nullptr || a.v == a.k, "mla_decode reads V from the first 512 columns of k: v must be null or k");
  if (!a.q_pe) return;
  p.q_pe = a.q_pe;
  p.q_pe_row_stride = or_default(a.q_pe_row_stride, (long long)hq * 64);
  p.q_pe_head_stride = or_default(a.q_pe_head_stride, 64);
  check_tensor("q_pe", a.q_pe, {p.q_pe_row_stride, p.q_pe_head_stride});
}

}  // namespace

AttentionLaunch prepare_attention(const KernelPlan& plan, const AttentionArgs& a) {
  const Spec& s = plan.spec;
  const int hq = s.num_q_heads, hkv = plan.kv_heads(), d = plan.head_dim, dv = plan.head_dim_v;
  if (a.dtype)
    require(*a.dtype == s.dtype, "q/k/v/o are ", to_string(*a.dtype), " but the kernel was compiled for ",
            to_string(s.dtype));
  auto same = [](const char* what, int given, int compiled) {
    require(given == 0 || given == compiled, what, " is ", given, " but the kernel was compiled for ", compiled);
  };
  same("num_q_heads", a.num_q_heads, hq);
  same("num_kv_heads", a.num_kv_heads, hkv);
  same("head_dim", a.head_dim, d);
  same("head_dim_v", a.head_dim_v, dv);
  require(a.batch >= 1, "batch must be >= 1, got ", a.batch);
  require(a.max_seqlen_q >= 0, "max_seqlen_q must be >= 0");
  require(a.total_q >= 0, "total_q must be >= 0");
  if (!a.cu_seqlens_q)
    require(plan.kind == KernelKind::decode, "cu_seqlens_q is required (only decode takes one token per request)");
  if (!a.cu_seqlens_q) {
    require(a.max_seqlen_q <= 1, "without cu_seqlens_q every request has one token: max_seqlen_q <= 1");
    require(a.total_q >= a.batch, "without cu_seqlens_q every request has one token: total_q ", a.total_q,
            " must be >= batch ", a.batch);
  }
  // (0 would leave the packed rows of large groups without blocks.)
  const int max_seqlen_q = query_len_bound(a);

  AttentionParams p{};
  p.q = a.q; p.k = a.k; p.v = a.v; p.o = a.o; p.lse = a.lse;
  p.cu_seqlens_q = a.cu_seqlens_q;
  p.cu_seqlens_k = a.cu_seqlens_k;
  const bool mla = is_mla_decode(plan);
  require(!a.q_pe || mla, "q_pe given but only mla_decode takes q_pe apart from q");
  const int q_width = mla && a.q_pe ? d - 64 : d;  // MLA: q_nope alone when q_pe comes apart
  p.q_row_stride = or_default(a.q_row_stride, (long long)hq * q_width);
  p.q_head_stride = or_default(a.q_head_stride, q_width);
  p.o_row_stride = or_default(a.o_row_stride, (long long)hq * dv);
  p.o_head_stride = or_default(a.o_head_stride, dv);
  check_tensor("q", a.q, {p.q_row_stride, p.q_head_stride});
  check_tensor("o", a.o, {p.o_row_stride, p.o_head_stride});

  if (plan.paged) {
    check_paged(plan, a);
    p.k_row_stride = a.k_row_stride; p.k_block_stride = a.k_block_stride;
    p.k_head_stride = mla ? or_default(a.k_head_stride, d) : a.k_head_stride;  // MLA: one latent head
    p.v_row_stride = a.v_row_stride; p.v_head_stride = a.v_head_stride; p.v_block_stride = a.v_block_stride;
    const int kv_bytes = plan.kv_cache == KvDType::same ? 2 : 1;
    check_tensor("k", a.k, {p.k_row_stride, p.k_head_stride, p.k_block_stride}, kv_bytes);
    if (mla) check_mla_decode(a, p, hq);
    else check_tensor("v", a.v, {p.v_row_stride, p.v_head_stride, p.v_block_stride}, kv_bytes);
    p.page_size = a.page_size;
    p.block_table = a.block_table;
    p.block_table_stride = a.block_table_stride;
    p.seqused_k = a.seqused_k;
    p.kv_indptr = a.kv_indptr;
    p.kv_indices = a.kv_indices;
    p.kv_last_page_len = a.kv_last_page_len;
  } else {
    require(a.cu_seqlens_k != nullptr, "cu_seqlens_k is required with contiguous K/V");
    require(!a.block_table && !a.kv_indptr && !a.kv_indices && !a.kv_last_page_len && !a.seqused_k,
            "a page table was given but this kernel reads contiguous K/V (use the prefill_paged kernel)");
    p.k_row_stride = or_default(a.k_row_stride, (long long)hkv * d);
    p.k_head_stride = or_default(a.k_head_stride, d);
    p.v_row_stride = or_default(a.v_row_stride, (long long)hkv * dv);
    p.v_head_stride = or_default(a.v_head_stride, dv);
    check_tensor("k", a.k, {p.k_row_stride, p.k_head_stride});
    check_tensor("v", a.v, {p.v_row_stride, p.v_head_stride});
  }
  if (a.host) check_host_metadata(a, *a.host, plan.paged);
  set_fp8_scales(p, plan, a);

  if (plan.lse != LseOut::none) {
    require(a.lse != nullptr, "the spec asks for LSE output but lse is null");
    require(reinterpret_cast<std::uintptr_t>(a.lse) % 4 == 0, "lse must be 4-byte aligned");
    const bool head_major = s.lse.layout == LseLayout::head_major;
    p.lse_row_stride = head_major ? 1 : hq;
    p.lse_head_stride = head_major ? a.total_q : 1;
  } else {
    require(a.lse == nullptr, "lse given but the spec has lse.layout none");
  }

  p.batch = a.batch;
  p.num_q_heads = hq;
  p.num_kv_heads = hkv;
  p.max_seqlen_q = a.max_seqlen_q;
  p.total_q = a.total_q;
  require(a.softmax_scale == 0 || (a.softmax_scale > 0 && std::isfinite(a.softmax_scale)),
          "softmax_scale must be finite and > 0 (or 0 for 1/sqrt(head_dim)), got ", a.softmax_scale);
  const float scale = a.softmax_scale > 0 ? a.softmax_scale : 1.0f / std::sqrt(float(d));
  p.scale_log2 = scale * 1.4426950408889634f;
  const float cap = a.softcap >= 0 ? a.softcap : s.softcap;
  require((cap > 0) == plan.softcap,
          plan.softcap ? "softcap must be > 0: the kernel was compiled with softcap"
                       : "softcap given but the kernel was compiled without it (spec softcap: 0)");
  p.softcap = cap;
  p.softcap_inv_scale = cap > 0 ? scale / cap : 0.f;
  check_window(plan, a);
  p.window_left = a.window_left >= -1 ? a.window_left : s.mask.window_left;
  p.window_right = a.window_right >= -1 ? a.window_right : s.mask.window_right;

  require((a.alibi_slopes != nullptr) == (plan.alibi != Alibi::none),
          plan.alibi != Alibi::none ? "alibi_slopes [Hq] is required: the spec has alibi" : "alibi_slopes given but the spec has no alibi");
  require(a.alibi_batch_stride == 0 || a.alibi_batch_stride >= hq,
          "alibi_batch_stride must be 0 ([Hq] slopes) or >= Hq ([batch, Hq]), got ", a.alibi_batch_stride);
  p.alibi_slopes = a.alibi_slopes;
  p.alibi_batch_stride = a.alibi_batch_stride;
  require((a.sinks != nullptr) == plan.sinks,
          plan.sinks ? "sinks [Hq] is required: the spec has sinks" : "sinks given but the spec has no sinks");
  p.sinks = a.sinks;

  require(a.seqlen_k_sum >= 0, "seqlen_k_sum must be >= 0 (the KV lengths summed; 0: unknown), got ", a.seqlen_k_sum);
  int splits = a.num_splits;
  require(splits >= 1 && splits <= kMaxSplits, "num_splits must be in 1..", kMaxSplits,
          " (decide it with decide_num_splits, generator/split_kv.h), got ", splits);
  require(splits == 1 || plan.split_kv, "num_splits ", splits, " needs a split-KV kernel (decode); this one takes 1");
  if (a.total_q == 0) splits = 1;  // no query rows: nothing to split, and a combine grid of 0 blocks cannot launch
  p.num_splits = splits;
  p.max_seqlen_k = std::max(0, a.max_seqlen_k);  // decode_bw's split parts are sized from it
  if (splits > 1) {
    const size_t need = attention_workspace_bytes(plan, a.total_q, splits);
    require(a.workspace != nullptr && a.workspace_bytes >= need, "num_splits ", splits, " needs a workspace of ",
            (long long)need, " bytes, got ", (long long)a.workspace_bytes);
    require(reinterpret_cast<std::uintptr_t>(a.workspace) % 16 == 0, "workspace must be 16-byte aligned");
    const SplitPartials parts = split_partials(plan, a.workspace, a.total_q, splits);
    p.o_partial = parts.o;
    p.lse_partial = parts.lse;
  }

  set_int8_params(plan, a, p);

  AttentionLaunch l;
  l.params = p;
  const long long blocks_x = row_blocks(plan, max_seqlen_q), blocks_y = plan.pack_gqa ? hkv : hq;
  const long long blocks_z = (long long)a.batch * splits;
  require(blocks_x <= 0x7fffffffLL, "max_seqlen_q ", a.max_seqlen_q, " needs ", blocks_x,
          " row blocks, over the grid limit 2^31 - 1");
  require(blocks_y <= 65535, "the grid's y dimension (heads) must be <= 65535, got ", blocks_y);
  require(blocks_z <= 65535, "batch * num_splits must be <= 65535, got ", blocks_z);
  l.grid.x = unsigned(blocks_x);
  l.grid.y = unsigned(blocks_y);
  l.grid.z = unsigned(blocks_z);
  l.block.x = unsigned(plan.threads);
  l.smem_bytes = plan.smem_bytes;
  if (plan.config.v_prewiden) set_v_prewiden(l, plan, a);
  if (is_prefill_sm90(plan)) set_tensor_maps(l, plan, a);
  l.persistent = is_prefill_sm90(plan) && plan.config.persistent;
  if (mla) set_latent_cache_map(l, plan, a);
  if (splits > 1) {
    l.combine = true;  // total_q >= 1 here, so the combine grid is not empty
    l.combine_grid.x = unsigned(((long long)a.total_q * hq + kCombineRowsPerBlock - 1) / kCombineRowsPerBlock);
    l.combine_block.x = unsigned(kCombineThreads);
  }
  return l;
}

}  // namespace attnc
