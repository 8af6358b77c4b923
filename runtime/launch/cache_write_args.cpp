#include "runtime/launch/cache_write_args.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "runtime/launch/arg_checks.h"
#include "runtime/driver/module.h"

namespace attnc {
namespace {

struct CacheStrides {
  long long block, page, head;
};

// A plane's strides: all three given, or all 0 for a plane of its own in the spec's layout.
CacheStrides cache_strides(const ArgCheck& c, const char* name, long long block, long long page, long long head,
                           KvLayout layout, int bs, int heads, int d) {
  if (block == 0 && page == 0 && head == 0) {
    if (layout == KvLayout::HND) return {(long long)heads * bs * d, d, (long long)bs * d};
    return {(long long)bs * heads * d, (long long)heads * d, d};
  }
  c.require(block != 0 && page != 0 && head != 0, name,
            " strides: give block, page and head strides together (all 0: a plane of its own in the spec's ",
            to_string(layout), " layout)");
  return {block, page, head};
}

// Slot contents against the host copy: inside the cache, and no slot written twice (two tokens
// on one slot would race).
void check_slots(const ArgCheck& c, const long long* slots, int n, long long num_slots, int bs) {
  std::vector<std::pair<long long, int>> used;
  used.reserve(n);
  for (int t = 0; t < n; ++t) {
    const long long s = slots[t];
    if (s < 0) continue;
    c.require(s < num_slots, "slot_mapping[", t, "] = ", s, " points past the cache of ", num_slots / bs, " blocks of ",
              bs, " slots (", num_slots, ")");
    used.emplace_back(s, t);
  }
  std::sort(used.begin(), used.end());
  for (size_t i = 1; i < used.size(); ++i)
    c.require(used[i].first != used[i - 1].first, "slot_mapping[", used[i - 1].second, "] and slot_mapping[",
              used[i].second, "] both write slot ", used[i].first);
}

}  // namespace

CacheWriteLaunch prepare_cache_write(const KernelPlan& plan, const CacheWriteArgs& a) {
  const ArgCheck c("cache_write");
  const Spec& s = plan.spec;
  c.require(plan.kind == KernelKind::cache_write, "the plan makes ", to_string(plan.kind), " kernels, not cache_write");
  const bool fp8 = s.kv_cache.dtype == KvDType::fp8_e4m3 || s.kv_cache.dtype == KvDType::fp8_e5m2;
  const bool int8 = s.kv_cache.dtype == KvDType::int8, int8_v = int8 && s.quant != QuantMode::int8_qk;
  c.require(a.num_tokens >= 0, "num_tokens (slot_mapping's length) must be >= 0, got ", a.num_tokens);
  c.require(a.num_kv_heads >= 0, "num_kv_heads must be >= 0 (0: the spec's), got ", a.num_kv_heads);
  const int heads = a.num_kv_heads ? a.num_kv_heads : s.num_kv_heads;
  c.require(heads == s.num_kv_heads, "num_kv_heads ", heads, " does not match the spec's num_kv_heads ",
            s.num_kv_heads);
  c.require(a.head_size >= 0 && a.head_size % 8 == 0,
            "head_size must be a multiple of 8 (16-byte chunks; 0: the spec's), got ", a.head_size);
  const int d = a.head_size ? a.head_size : plan.head_dim, dv = plan.head_dim_v;
  c.require(d == plan.head_dim, "head_size ", d, " does not match the spec's head_dim ", plan.head_dim);
  c.require(a.block_size >= 0, "block_size must be >= 0 (0: the spec's page_size), got ", a.block_size);
  const int bs = a.block_size ? a.block_size : s.kv_cache.page_size;
  c.require(a.num_blocks >= 1, "num_blocks (pages in the cache) must be >= 1, got ", a.num_blocks);
  if (fp8) {
    c.require(a.k_scale && a.v_scale, "a ", to_string(s.kv_cache.dtype),
              " cache needs k_scale and v_scale (device fp32; stored = fp8(x / scale))");
  } else if (int8) {
    c.require(a.key_scale_cache != nullptr, "an int8 cache needs key_scale_cache [num_blocks, Hkv, block_size] fp32");
    c.require(!a.k_scale && !a.per_head_scale, "k_scale given but an int8 cache quantises keys per token");
    c.require((a.v_scale != nullptr) == int8_v, int8_v ? "int8_qkv needs v_scale [Hkv, Dv] fp32 (static per channel)"
                                                       : "v_scale given but int8_qk keeps V in 16 bits");
  } else {
    c.require(!a.k_scale && !a.v_scale && !a.per_head_scale,
              "k_scale/v_scale given but the cache holds the model's dtype (kv_cache.dtype same); scales apply to fp8 caches");
  }

  CacheWriteLaunch l;
  l.empty = a.num_tokens == 0;
  if (l.empty) return l;  // nothing is read or written: an empty tensor's pointer may be null

  CacheWriteParams& p = l.params;
  c.token_rows("key", a.key, 16, 2, a.key_row_stride, a.key_head_stride, heads, d, p.key_row_stride,
               p.key_head_stride);
  c.token_rows("value", a.value, 16, 2, a.value_row_stride, a.value_head_stride, heads, dv, p.value_row_stride,
               p.value_head_stride);

  const CacheStrides kc = cache_strides(c, "key_cache", a.key_cache_block_stride, a.key_cache_page_stride,
                                        a.key_cache_head_stride, s.kv_cache.layout, bs, heads, d);
  const CacheStrides vc = cache_strides(c, "value_cache", a.value_cache_block_stride, a.value_cache_page_stride,
                                        a.value_cache_head_stride, s.kv_cache.layout, bs, heads, dv);
  const int cache_bytes = fp8 || int8 ? 1 : 2, value_bytes = fp8 || int8_v ? 1 : 2;
  c.pointer("key_cache", a.key_cache, 8 * cache_bytes);
  c.pointer("value_cache", a.value_cache, 8 * value_bytes);
  c.require(a.key_cache != a.value_cache, "key_cache and value_cache are the same pointer");
  c.strides("key_cache", {kc.block, kc.page, kc.head}, 8, cache_bytes);
  c.strides("value_cache", {vc.block, vc.page, vc.head}, 8, value_bytes);
  c.disjoint("key_cache", d, {{"block", a.num_blocks, kc.block}, {"page", bs, kc.page}, {"head", heads, kc.head}});
  c.disjoint("value_cache", dv, {{"block", a.num_blocks, vc.block}, {"page", bs, vc.page}, {"head", heads, vc.head}});

  c.pointer("slot_mapping", a.slot_mapping, 8);
  if (fp8) {
    c.pointer("k_scale", a.k_scale, 4);
    c.pointer("v_scale", a.v_scale, 4);
  }
  if (int8) c.pointer("key_scale_cache", a.key_scale_cache, 4);
  if (int8_v) c.pointer("v_scale", a.v_scale, 4);
  const long long num_slots = (long long)a.num_blocks * bs;
  if (a.host_slot_mapping) check_slots(c, a.host_slot_mapping, a.num_tokens, num_slots, bs);

  p.key = a.key;
  p.value = a.value;
  p.key_cache = a.key_cache;
  p.value_cache = a.value_cache;
  p.slot_mapping = a.slot_mapping;
  p.k_scale = fp8 ? a.k_scale : nullptr;
  p.v_scale = fp8 || int8_v ? a.v_scale : nullptr;
  p.key_scale_cache = int8 ? a.key_scale_cache : nullptr;
  p.scale_head_stride = a.per_head_scale ? 1 : 0;
  p.kc_block_stride = kc.block; p.kc_page_stride = kc.page; p.kc_head_stride = kc.head;
  p.vc_block_stride = vc.block; p.vc_page_stride = vc.page; p.vc_head_stride = vc.head;
  p.num_tokens = a.num_tokens;
  p.num_heads = heads;
  p.head_size = d;
  p.head_size_v = dv;
  p.block_size = bs;
  p.num_slots = num_slots;

  l.grid.x = unsigned(a.num_tokens);
  l.block.x = unsigned(kCacheWriteThreads);
  return l;
}

Int8QuantizeLaunch prepare_int8_quantize(const KernelPlan& plan, const Int8QuantizeArgs& a) {
  const ArgCheck c("int8 quantize");
  c.require(plan.kind == KernelKind::cache_write && plan.spec.kv_cache.dtype == KvDType::int8,
            "the quantiser is the _quantize entry of an int8 spec's cache_write kernel");
  c.require(a.num_rows >= 0, "num_rows must be >= 0, got ", a.num_rows);
  const int heads = a.num_heads ? a.num_heads : plan.spec.num_q_heads, d = plan.head_dim;
  c.require(heads >= 1, "num_heads must be >= 1 (0: the spec's num_q_heads), got ", heads);
  Int8QuantizeLaunch l;
  l.empty = a.num_rows == 0;
  if (l.empty) return l;
  Int8QuantizeParams& p = l.params;
  c.token_rows("x", a.x, 16, 2, a.x_row_stride, a.x_head_stride, heads, d, p.x_row_stride, p.x_head_stride);
  c.token_rows("out", a.out, 8, 1, a.out_row_stride, a.out_head_stride, heads, d, p.out_row_stride,
               p.out_head_stride);
  c.pointer("scale", a.scale, 4);
  p.x = a.x;
  p.out = a.out;
  p.scale = a.scale;
  p.scale_row_stride = a.scale_head_major ? 1 : heads;
  p.scale_head_stride = a.scale_head_major ? a.num_rows : 1;
  p.num_rows = a.num_rows;
  p.num_heads = heads;
  p.head_size = d;
  l.grid.x = unsigned(a.num_rows);
  l.block.x = unsigned(kCacheWriteThreads);
  return l;
}

void launch_int8_quantize(const Kernel& kernel, const Int8QuantizeLaunch& l, CUstream stream) {
  if (l.empty) return;
  kernel.launch(l.grid, l.block, 0, stream, &l.params);
}

void launch_cache_write(const Kernel& kernel, const CacheWriteLaunch& l, CUstream stream) {
  if (l.empty) return;
  kernel.launch(l.grid, l.block, 0, stream, &l.params);
}

}  // namespace attnc
