#include "check/attention_check.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>

#include "runtime/launch/attention_args.h"
#include "generator/plan/plan_prefill_sm90.h"
#include "check/attention_compare.h"
#include "runtime/launch/attention_launch.h"
#include "runtime/driver/cuda_driver.h"
#include "runtime/driver/device.h"
#include "runtime/driver/event_wait.h"
#include "check/half.h"
#include "check/int8_inputs.h"
#include "check/kv_cache_fill.h"
#include "check/ops_reference.h"
#include "runtime/driver/module.h"
#include "check/reference.h"

namespace attnc {
namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw BadCall("check: " + what);
}

std::vector<int> prefix_sum(const std::vector<int>& lens) {
  std::vector<int> cu(lens.size() + 1, 0);
  for (size_t i = 0; i < lens.size(); ++i) cu[i + 1] = cu[i] + lens[i];
  return cu;
}

// The batch as the kernel and the reference see it.
struct Batch {
  std::vector<int> lq, lk, cu_q, cu_k;
  bool pass_cu_q = true;  // false: plain decode, one token per request without cu_seqlens_q
  int size = 0, total_q = 0, total_k = 0, max_q = 0, max_k = 0;
};

Batch batch_of(const KernelPlan& plan, const AttentionCase& c) {
  Batch b;
  if (plan.kind == KernelKind::decode) {
    require(!c.seqlens_k.empty(), "decode needs seqlens_k (the KV length of each request)");
    b.lk = c.seqlens_k;
    b.pass_cu_q = !c.seqlens_q.empty();
    b.lq = b.pass_cu_q ? c.seqlens_q : std::vector<int>(b.lk.size(), 1);
  } else {
    require(!c.seqlens_q.empty(), "prefill needs seqlens_q");
    b.lq = c.seqlens_q;
    b.lk = c.seqlens_k.empty() ? c.seqlens_q : c.seqlens_k;
  }
  require(b.lq.size() == b.lk.size(), "seqlens_q and seqlens_k must list the same number of requests");
  for (size_t i = 0; i < b.lq.size(); ++i)
    require(b.lq[i] >= 0 && b.lk[i] >= 0, "lengths must be non-negative");
  b.cu_q = prefix_sum(b.lq);
  b.cu_k = prefix_sum(b.lk);
  b.size = int(b.lq.size());
  b.total_q = b.cu_q.back();
  b.total_k = b.cu_k.back();
  b.max_q = *std::max_element(b.lq.begin(), b.lq.end());
  b.max_k = *std::max_element(b.lk.begin(), b.lk.end());
  return b;
}

// Random normal 16-bit values and the exact doubles they round to, for the reference.
struct HalfTensor {
  std::vector<std::uint16_t> bits;
  std::vector<double> exact;
};

HalfTensor random_half(DType t, size_t n, std::mt19937_64& rng, bool exact = true) {
  std::normal_distribution<float> dist(0.f, 1.f);
  HalfTensor h;
  if (!exact) {  // timing only: uniform in [-2, 2) from 16 random bits each, no reference copy
    h.bits.resize(n);
    for (size_t i = 0; i < n; i += 4) {
      const std::uint64_t r = rng();
      for (size_t j = i; j < std::min(n, i + 4); ++j)
        h.bits[j] = to_half(t, float((r >> (16 * (j - i))) & 0xffff) / 16384.f - 2.f);
    }
    return h;
  }
  h.bits.resize(n);
  h.exact.resize(n);
  for (size_t i = 0; i < n; ++i) {
    h.bits[i] = to_half(t, dist(rng));
    h.exact[i] = from_half(t, h.bits[i]);
  }
  return h;
}

// fp8 K/V: bytes fp8(N(0, 1)) (kept in `bits`, one per element) and the values they decode to.
HalfTensor random_fp8(KvDType cache, size_t n, std::mt19937_64& rng) {
  std::normal_distribution<float> dist(0.f, 1.f);
  const bool e4m3 = cache == KvDType::fp8_e4m3;
  HalfTensor h;
  h.bits.resize(n);
  h.exact.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const std::uint8_t b = e4m3 ? fp8_e4m3_from_float(dist(rng)) : fp8_e5m2_from_float(dist(rng));
    h.bits[i] = b;
    h.exact[i] = e4m3 ? fp8_e4m3_to_double(b) : fp8_e5m2_to_double(b);
  }
  return h;
}

// A device copy of `host`; at least 16 bytes, so an empty list still has a valid pointer.
template <class T>
DeviceBuffer upload(const std::vector<T>& host) {
  DeviceBuffer b(std::max<size_t>(host.size() * sizeof(T), 16));
  if (!host.empty()) b.upload(host);
  return b;
}

// [rows, row_stride] image of a dense [rows, width] tensor; the padding keeps the poison.
template <class T>
std::vector<T> padded_rows(const std::vector<T>& dense, int rows, long long width, long long row_stride,
                           T poison = T(kHalfPoison)) {
  std::vector<T> img(size_t(rows) * row_stride, poison);
  for (int r = 0; r < rows; ++r)
    std::copy_n(dense.begin() + r * width, width, img.begin() + r * row_stride);
  return img;
}

// Everything on the device for one call; lives as long as the call may run.
struct DeviceCall {
  DeviceBuffer q, q_pe, k, v, o, lse, workspace, cache;
  DeviceBuffer cu_q, cu_k, seqused, table, indptr, indices, last_len, slopes, sinks;
  DeviceBuffer k_scale, v_scale, k_descale, v_descale;
  DeviceBuffer q_scale, k_token_scale, v_channel_scale, cache_v;  // int8 specs
  HostPageTable pages;  // host mirror of the page table (paged calls)
  AttentionHostMetadata host;
  AttentionArgs args;
};

// The whole cache poisoned (0xff: NaN in bf16, fp16, e4m3 and e5m2), then only the pages the batch
// owns written; an fp8 cache narrows each image to its bytes.
void fill_paged_cache(DeviceCall& call, const KvCacheStrides& s, const Batch& b, const HalfTensor& k,
                      const HalfTensor& v, int d, int dv, int elem_bytes) {
  call.cache = DeviceBuffer(size_t(s.total_elems) * elem_bytes);
  call.cache.memset(0xff);
  std::vector<std::uint8_t> bytes;
  for_each_page_image(s, call.pages, b.cu_k, k.bits, v.bits, d, dv,
                      [&](long long offset, const std::vector<std::uint16_t>& img) {
                        if (elem_bytes == 2) {
                          call.cache.upload(img.data(), img.size() * 2, size_t(offset) * 2);
                          return;
                        }
                        bytes.assign(img.begin(), img.end());  // kHalfPoison narrows to 0xff
                        call.cache.upload(bytes.data(), bytes.size(), size_t(offset));
                      });
}

// fp8: the dequantisation factors of the case's scale kind on the device, and the reference's K/V
// multiplied by them (request b's tokens, head h: k_scale * k_descale[b, h]).
// MLA (`one_cache`): K and V are one latent cache with one scale, so only k_scale / k_descale are
// given and K's factor multiplies the reference's V too.
void setup_fp8_scales(DeviceCall& call, const AttentionCase& c, const Batch& b, int hkv, int d, int dv,
                      HalfTensor& k, HalfTensor& v, std::mt19937_64& rng, bool one_cache) {
  std::uniform_real_distribution<float> unit(0.5f, 2.f);
  const bool per_tensor = c.fp8_scales != Fp8Scales::descale, descale = c.fp8_scales != Fp8Scales::per_tensor;
  std::vector<float> scale = {0.25f * unit(rng), 0.5f * unit(rng)};  // K, V
  const int stride = hkv + 3;  // [batch, Hkv] rows padded: the batch stride is honoured
  std::vector<float> desc[2];
  for (int kv = 0; kv < 2; ++kv) {
    desc[kv].assign(size_t(b.size) * stride, std::nanf(""));
    for (int i = 0; i < b.size; ++i)
      for (int h = 0; h < hkv; ++h) desc[kv][i * stride + h] = unit(rng);
  }
  AttentionArgs& a = call.args;
  if (per_tensor) {
    call.k_scale = upload(std::vector<float>{scale[0]});
    call.v_scale = upload(std::vector<float>{scale[1]});
    a.k_scale = call.k_scale.as<float>();
    a.v_scale = one_cache ? nullptr : call.v_scale.as<float>();
  }
  if (descale) {
    call.k_descale = upload(desc[0]);
    call.v_descale = upload(desc[1]);
    a.k_descale = call.k_descale.as<float>();
    a.v_descale = one_cache ? nullptr : call.v_descale.as<float>();
    a.k_descale_batch_stride = a.v_descale_batch_stride = stride;
  }
  for (int kv = 0; kv < 2; ++kv) {
    HalfTensor& t = kv ? v : k;
    const int dim = kv ? dv : d;
    for (int i = 0; i < b.size; ++i)
      for (long long tok = b.cu_k[i]; tok < b.cu_k[i + 1]; ++tok)
        for (int h = 0; h < hkv; ++h) {
          const int from = one_cache ? 0 : kv;
          const double f = double(per_tensor ? scale[from] : 1.f) * (descale ? desc[from][i * stride + h] : 1.f);
          for (int e = 0; e < dim; ++e) t.exact[(tok * hkv + h) * dim + e] *= f;
        }
  }
}

// The page table, then fill(strides) writes the cache and binds it to the call.
void setup_paged(DeviceCall& call, const KernelPlan& plan, const AttentionCase& c, const Batch& b,
                 const std::function<void(const KvCacheStrides&)>& fill, std::mt19937_64& rng) {
  PageTableOptions opt;
  opt.form = c.page_table;
  opt.page_size = c.page_size;
  opt.num_blocks = c.num_blocks;
  opt.column_offset = c.column_offset;
  opt.indptr_offset = c.indptr_offset;
  try {
    call.pages = build_page_table(b.lk, opt, rng);
  } catch (const std::invalid_argument& e) {
    throw BadCall(std::string("check: ") + e.what());
  }
  KvCacheStrides strides;
  try {
    strides = kv_cache_strides(c.layout, c.num_blocks, c.page_size, plan.kv_heads(), plan.head_dim, plan.head_dim_v);
  } catch (const std::invalid_argument& e) {
    throw BadCall(std::string("check: ") + e.what());
  }
  fill(strides);

  const HostPageTable& t = call.pages;
  AttentionArgs& a = call.args;
  AttentionHostMetadata& h = call.host;
  if (c.page_table == PageTableForm::flashinfer) {
    call.indptr = upload(t.kv_indptr);
    call.indices = upload(t.kv_indices);
    call.last_len = upload(t.kv_last_page_len);
    a.kv_indptr = call.indptr.as<int>();
    a.kv_indices = call.indices.as<int>();
    a.kv_last_page_len = call.last_len.as<int>();
    h.kv_indptr = t.kv_indptr.data();
    h.kv_indices = t.kv_indices.data();
    h.num_kv_indices = int(t.kv_indices.size());
    h.kv_last_page_len = t.kv_last_page_len.data();
    return;
  }
  call.table = upload(t.block_table);
  a.block_table = call.table.as<int>() + c.column_offset;
  a.block_table_stride = t.table_stride;
  a.max_blocks_per_seq = t.max_blocks_per_seq;
  h.block_table = t.block_table.data() + c.column_offset;
  if (c.page_table == PageTableForm::seqused_k) {
    call.seqused = upload(t.seqused_k);
    a.seqused_k = call.seqused.as<int>();
    h.seqused_k = t.seqused_k.data();
  } else {
    call.cu_k = upload(t.cu_seqlens_k);
    a.cu_seqlens_k = call.cu_k.as<int>();
    h.cu_seqlens_k = t.cu_seqlens_k.data();
  }
}

// The int8 inputs on the device: q scales in the case's layout, K (and V) contiguous or in a
// paged cache with its key-scale cache.
void setup_int8(DeviceCall& call, const KernelPlan& plan, const AttentionCase& c, const Batch& b,
                const Int8Inputs& in, std::mt19937_64& rng) {
  AttentionArgs& a = call.args;
  const int hq = plan.spec.num_q_heads;
  std::vector<float> qs = in.q_scale;
  if (c.q_scale_head_major) {
    for (int t = 0; t < b.total_q; ++t)
      for (int h = 0; h < hq; ++h) qs[size_t(h) * b.total_q + t] = in.q_scale[size_t(t) * hq + h];
    a.q_scale_row_stride = 1;
    a.q_scale_head_stride = b.total_q;
  }
  call.q_scale = upload(qs);
  a.q_scale = call.q_scale.as<float>();
  if (plan.int8 == Int8Mode::qkv) {
    call.v_channel_scale = upload(in.v_channel_scale);
    a.v_channel_scale = call.v_channel_scale.as<float>();
  }
  if (!plan.paged) {
    call.k = upload(in.k);
    call.v = plan.int8 == Int8Mode::qkv ? upload(in.v) : upload(in.v16);
    call.k_token_scale = upload(in.k_token_scale);
    a.k_token_scale = call.k_token_scale.as<float>();
    return;
  }
  setup_paged(call, plan, c, b, [&](const KvCacheStrides& s) {
    const Int8CacheImages img = int8_cache_images(plan.int8, s, call.pages, b.cu_k, in, plan.head_dim,
                                                  plan.head_dim_v);
    call.cache = upload(img.kv);
    call.k_token_scale = upload(img.k_token_scale);
    bind_kv_cache(a, s, call.cache.as(), 1);  // int8 planes: one byte per element
    if (plan.int8 == Int8Mode::qk) {          // int8_qk's 16-bit V lies in its own buffer
      call.cache_v = upload(img.v16);
      a.v = call.cache_v.as<std::uint16_t>() + s.v_offset;
    }
    a.k_token_scale = call.k_token_scale.as<float>();
  }, rng);
}

ReferenceOptions reference_options(const KernelPlan& plan, float scale, const std::vector<double>* slopes,
                                   const std::vector<double>* sinks) {
  const Spec& s = plan.spec;
  ReferenceOptions r;
  r.head_dim = plan.head_dim;
  r.head_dim_v = plan.head_dim_v;
  r.num_q_heads = s.num_q_heads;
  r.num_kv_heads = plan.kv_heads();
  r.scale = scale;
  r.causal = s.mask.kind == MaskKind::causal;
  if (s.mask.kind == MaskKind::sliding_window) {
    r.window_left = s.mask.window_left;
    r.window_right = s.mask.window_right;
  }
  r.softcap = s.softcap;
  r.alibi = plan.alibi;
  r.alibi_slopes = plan.alibi != Alibi::none ? slopes : nullptr;
  r.sinks = plan.sinks ? sinks : nullptr;
  r.sparse = sparse_pattern(s);
  return r;
}

// MLA: V is the first dv columns of each k row (one latent head).
HalfTensor latent_values(const HalfTensor& k, int rows, int d, int dv) {
  HalfTensor v;
  for (int r = 0; r < rows; ++r) {
    v.bits.insert(v.bits.end(), k.bits.begin() + size_t(r) * d, k.bits.begin() + size_t(r) * d + dv);
    if (!k.exact.empty())
      v.exact.insert(v.exact.end(), k.exact.begin() + size_t(r) * d, k.exact.begin() + size_t(r) * d + dv);
  }
  return v;
}

}  // namespace

double visible_pairs(const Spec& s, const std::vector<int>& lq, const std::vector<int>& lk_in) {
  const std::vector<int>& lk = lk_in.empty() ? lq : lk_in;
  int left = -1, right = -1;
  if (s.mask.kind == MaskKind::causal) right = 0;
  if (s.mask.kind == MaskKind::sliding_window) { left = s.mask.window_left; right = s.mask.window_right; }
  double pairs = 0;
  if (s.sparse.enabled) {  // block-sparse is causal: the pattern's keys, averaged over the q heads
    const SparsePattern sp = sparse_pattern(s);
    for (size_t b = 0; b < lq.size(); ++b)
      for (long i = 0; i < lq[b]; ++i)
        for (int h = 0; h < s.num_q_heads; ++h)
          pairs += double(sparse_visible_keys(sp, i + lk[b] - lq[b], lk[b], h)) / s.num_q_heads;
    return pairs;
  }
  for (size_t b = 0; b < lq.size(); ++b) {
    for (long i = 0; i < lq[b]; ++i) {
      const long diag = i + lk[b] - lq[b];
      const long lo = left < 0 ? 0 : std::max(0L, diag - left);
      const long hi = right < 0 ? lk[b] - 1 : std::min<long>(lk[b] - 1, diag + right);
      if (hi >= lo) pairs += double(hi - lo + 1);
    }
  }
  return pairs;
}

double reference_work(const KernelPlan& plan, const AttentionCase& c) {
  const Batch b = batch_of(plan, c);
  return visible_pairs(plan.spec, b.lq, b.lk) * plan.spec.num_q_heads;
}

const char* to_string(Fp8Scales s) {
  return s == Fp8Scales::per_tensor ? "scale" : s == Fp8Scales::descale ? "descale" : "scale_descale";
}

std::string AttentionReport::summary() const {
  char buf[360];
  std::snprintf(buf, sizeof buf,
                "%s max_abs_err=%.3g max_rel_err=%.3g rel_l2_err=%.3g lse_err=%.3g bad=%lld stray=%lld splits=%d "
                "time=%.3f ms %.1f TFLOP/s seed=%llu",
                !checked ? "UNCHECKED" : passed ? "PASS" : "FAIL", max_abs_err, max_rel_err, rel_l2_err,
                lse_max_abs_err, bad_elements, stray_writes, num_splits, time_ms, tflops,
                static_cast<unsigned long long>(seed));
  return buf;
}

AttentionReport check_attention(const KernelPlan& plan, const Kernel& kernel, const Kernel* combine,
                                const AttentionCase& c) {
  require(plan.kind == KernelKind::prefill || plan.kind == KernelKind::prefill_paged ||
              plan.kind == KernelKind::decode,
          std::string("attention kernels only; got a ") + to_string(plan.kind) + " kernel");
  const Spec& s = plan.spec;
  const DType t = s.dtype;
  const int hq = s.num_q_heads, hkv = plan.kv_heads(), d = plan.head_dim, dv = plan.head_dim_v;
  const Batch b = batch_of(plan, c);
  const bool mla = is_mla_decode(plan);
  require(!c.q_pe_apart || mla, "q_pe_apart is for mla_decode kernels");

  AttentionReport rep;
  rep.seed = c.seed ? c.seed : std::uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  std::mt19937_64 rng(rep.seed);
  const bool fp8 = plan.kv_cache != KvDType::same, int8 = plan.int8 != Int8Mode::none;
  HalfTensor q, k, v;
  Int8Inputs i8;
  if (int8) {
    i8 = random_int8_inputs(plan.int8, t, b.total_q, b.total_k, hq, hkv, d, dv, rng);
  } else {
    q = random_half(t, size_t(b.total_q) * hq * d, rng, c.check);
    k = fp8 ? random_fp8(plan.kv_cache, size_t(b.total_k) * hkv * d, rng)
            : random_half(t, size_t(b.total_k) * hkv * d, rng, c.check);
    v = mla    ? latent_values(k, b.total_k, d, dv)
        : fp8 ? random_fp8(plan.kv_cache, size_t(b.total_k) * hkv * dv, rng)
              : random_half(t, size_t(b.total_k) * hkv * dv, rng, c.check);
  }
  std::vector<double> slopes(hq), sinks(hq);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (int h = 0; h < hq; ++h) {
    slopes[h] = std::exp2(-1.0 - 7.0 * unit(rng));  // ALiBi-like: 2^-1 .. 2^-8
    sinks[h] = normal(rng);
  }

  DeviceCall call;
  AttentionArgs& a = call.args;
  const long long q_row = (long long)hq * d + c.qo_row_pad, o_row = (long long)hq * dv + c.qo_row_pad;
  require(q_row > 0 && o_row > 0, "qo_row_pad is too negative");
  if (c.q_pe_apart) {  // q_nope [total_q, Hq, d - 64] (row padding kept) and q_pe [total_q, Hq, 64]
    const int dn = d - 64;
    std::vector<std::uint16_t> nope, pe;
    for (size_t r = 0; r < size_t(b.total_q) * hq; ++r) {
      nope.insert(nope.end(), q.bits.begin() + r * d, q.bits.begin() + r * d + dn);
      pe.insert(pe.end(), q.bits.begin() + r * d + dn, q.bits.begin() + (r + 1) * d);
    }
    call.q = upload(padded_rows(nope, b.total_q, (long long)hq * dn, (long long)hq * dn + c.qo_row_pad));
    call.q_pe = upload(pe);
    a.q_pe = call.q_pe.as();
  } else if (int8) {
    call.q = upload(padded_rows<std::int8_t>(i8.q, b.total_q, (long long)hq * d, q_row, 127));
  } else {
    call.q = upload(padded_rows(q.bits, b.total_q, (long long)hq * d, q_row));
  }
  call.o = DeviceBuffer(size_t(b.total_q + 1) * o_row * 2);  // one guard row
  call.o.memset(0xff);                                        // NaN in bf16 and fp16
  call.lse = DeviceBuffer(size_t(b.total_q + 1) * hq * 4);    // one guard row
  call.lse.memset(0xff);                                      // NaN in fp32
  a.q = call.q.as();
  a.o = call.o.as();
  a.q_row_stride = c.q_pe_apart ? (long long)hq * (d - 64) + c.qo_row_pad : q_row;
  a.o_row_stride = o_row;
  a.lse = plan.lse != LseOut::none ? call.lse.as<float>() : nullptr;
  a.batch = b.size;
  a.total_q = b.total_q;
  a.max_seqlen_q = b.max_q;
  a.max_seqlen_k = b.max_k;
  a.softmax_scale = c.softmax_scale;
  if (b.pass_cu_q) {
    call.cu_q = upload(b.cu_q);
    a.cu_seqlens_q = call.cu_q.as<int>();
    call.host.cu_seqlens_q = b.cu_q.data();
  }
  if (plan.alibi != Alibi::none) {
    call.slopes = upload(std::vector<float>(slopes.begin(), slopes.end()));
    a.alibi_slopes = call.slopes.as<float>();
  }
  if (plan.sinks) {
    call.sinks = upload(std::vector<float>(sinks.begin(), sinks.end()));
    a.sinks = call.sinks.as<float>();
  }
  // The reference sees what the device sees: slopes and sinks rounded to fp32.
  for (int h = 0; h < hq; ++h) {
    slopes[h] = float(slopes[h]);
    sinks[h] = float(sinks[h]);
  }

  if (int8) {
    setup_int8(call, plan, c, b, i8, rng);
  } else if (plan.paged) {
    setup_paged(call, plan, c, b, [&](const KvCacheStrides& strides) {
      const int elem_bytes = fp8 ? 1 : 2;
      fill_paged_cache(call, strides, b, k, v, d, dv, elem_bytes);
      bind_kv_cache(call.args, strides, call.cache.as(), elem_bytes);
    }, rng);
    if (mla) a.v = nullptr;  // V is read from k's rows; the V plane the layout also holds is never read
    if (fp8) setup_fp8_scales(call, c, b, hkv, d, dv, k, v, rng, mla);  // after the cache holds the bytes
  } else {
    call.k = upload(k.bits);
    call.v = upload(v.bits);
  }
  if (!plan.paged) {
    call.cu_k = upload(b.cu_k);
    a.k = call.k.as();
    a.v = call.v.as();
    a.cu_seqlens_k = call.cu_k.as<int>();
    a.total_k = b.total_k;
    call.host.cu_seqlens_k = b.cu_k.data();
  }

  a.num_splits = decide_num_splits(plan, {b.size, query_len_bound(a), b.max_k, b.total_q, c.num_sms}, c.num_splits);
  // Split partials, or (v_prewiden) the widened V: what the dispatcher's reserve() would give.
  const size_t workspace_bytes =
      std::max(a.num_splits > 1 && plan.split_kv ? attention_workspace_bytes(plan, b.total_q, a.num_splits) : size_t(0),
               v_prewiden_workspace_bytes(plan, v_prewiden_rows(plan, b.size, b.max_k, b.total_k)));
  if (workspace_bytes > 0) {
    a.workspace_bytes = workspace_bytes;
    call.workspace = DeviceBuffer(a.workspace_bytes);
    call.workspace.memset(0xff);  // partials nobody wrote, or V nobody widened, stay NaN
    a.workspace = call.workspace.as();
  }
  a.host = &call.host;

  const AttentionLaunch launch = prepare_attention(plan, a);
  rep.num_splits = launch.params.num_splits;
  require(!launch.combine || combine != nullptr,
          "the call splits KV into " + std::to_string(rep.num_splits) + " parts but no combine kernel was given");
  require(!launch.widen_v || combine != nullptr, "the kernel reads V widened into the workspace (v_prewiden) but "
          "no widening kernel (<entry>_widen_v) was given");
  // Memsets and pageable copies may still be in flight on the legacy stream, which the call's
  // non-blocking stream does not wait for.
  ATTNC_CU(CtxSynchronize);
  Stream stream;
  launch_attention(kernel, combine, launch, stream.handle());
  if (c.timeout_ms > 0) {
    Event done;
    done.record(stream.handle());
    wait_event(done, std::chrono::steady_clock::now() + std::chrono::milliseconds(c.timeout_ms),
               "check of " + kernel.entry());
  } else {
    stream.synchronize();
  }

  if (c.check) {
    std::vector<double> ref_o, ref_lse;
    const float scale = c.softmax_scale > 0 ? c.softmax_scale : 1.0f / std::sqrt(float(d));
    reference_attention_parallel(reference_options(plan, scale, &slopes, &sinks), b.cu_q, b.cu_k,
                                 int8 ? i8.q_exact : q.exact, int8 ? i8.k_exact : k.exact,
                                 int8 ? i8.v_exact : v.exact, ref_o, ref_lse);
    ErrorTally e;
    compare_output(t, call.o.download<std::uint16_t>(), o_row, b.total_q, hq, dv, ref_o, c.atol, c.rtol, e);
    if (plan.lse != LseOut::none) {
      const double to_base = plan.lse == LseOut::base_2 ? 1.0 / std::log(2.0) : 1.0;
      compare_lse(call.lse.download<float>(), s.lse.layout == LseLayout::head_major, to_base, b.total_q, hq, ref_lse,
                  e);
    }
    rep.max_abs_err = e.max_abs;
    rep.max_rel_err = e.max_rel;
    rep.rel_l2_err = e.rel_l2;
    rep.lse_max_abs_err = e.lse_max_abs;
    rep.bad_elements = e.bad;
    rep.stray_writes = e.stray;
    rep.checked = true;
    rep.passed = e.bad == 0 && e.stray == 0;
  }

  if (c.timing_reps > 0) {
    for (int i = 0; i < 3; ++i) launch_attention(kernel, combine, launch, stream.handle());
    std::vector<float> times;
    Event start, stop;
    for (int i = 0; i < c.timing_reps; ++i) {
      start.record(stream.handle());
      launch_attention(kernel, combine, launch, stream.handle());
      stop.record(stream.handle());
      stop.synchronize();
      times.push_back(elapsed_ms(start, stop));
    }
    std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
    rep.time_ms = times[times.size() / 2];
    const double flops = 2.0 * visible_pairs(s, b.lq, b.lk) * hq * (d + dv);
    rep.tflops = rep.time_ms > 0 ? flops / (rep.time_ms * 1e-3) / 1e12 : 0;
  }
  return rep;
}

}  // namespace attnc
