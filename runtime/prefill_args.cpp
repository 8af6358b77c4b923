#include "runtime/prefill_args.h"

#include <cmath>
#include <cstdint>
#include <string>

namespace attnc {
namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw BadCall("prefill: " + what);
}

long long or_default(long long stride, long long dflt) { return stride ? stride : dflt; }

// 16-byte vector loads need 16-byte aligned rows: base pointer and every stride in whole chunks.
void check_tensor(const char* name, const void* ptr, long long row_stride, long long head_stride) {
  require(ptr != nullptr, std::string(name) + " is null");
  require(reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0,
          std::string(name) + " must be 16-byte aligned (vector loads)");
  require(row_stride > 0 && head_stride > 0, std::string(name) + " strides must be positive");
  require(row_stride % 8 == 0 && head_stride % 8 == 0,
          std::string(name) + " strides must be multiples of 8 elements (16 bytes); got row " +
              std::to_string(row_stride) + ", head " + std::to_string(head_stride));
}

}  // namespace

PrefillParams make_prefill_params(const KernelPlan& plan, const PrefillArgs& a) {
  const Spec& s = plan.spec;
  const int hq = s.num_q_heads, hkv = s.num_kv_heads, d = plan.head_dim, dv = plan.head_dim_v;
  require(a.batch >= 1, "batch must be >= 1, got " + std::to_string(a.batch));
  require(a.max_seqlen_q >= 0, "max_seqlen_q must be >= 0");
  require(a.cu_seqlens_q && a.cu_seqlens_k, "cu_seqlens_q and cu_seqlens_k are required");

  PrefillParams p{};
  p.q = a.q; p.k = a.k; p.v = a.v; p.o = a.o; p.lse = a.lse;
  p.cu_seqlens_q = a.cu_seqlens_q;
  p.cu_seqlens_k = a.cu_seqlens_k;
  p.q_row_stride = or_default(a.q_row_stride, (long long)hq * d);
  p.q_head_stride = or_default(a.q_head_stride, d);
  p.k_row_stride = or_default(a.k_row_stride, (long long)hkv * d);
  p.k_head_stride = or_default(a.k_head_stride, d);
  p.v_row_stride = or_default(a.v_row_stride, (long long)hkv * dv);
  p.v_head_stride = or_default(a.v_head_stride, dv);
  p.o_row_stride = or_default(a.o_row_stride, (long long)hq * dv);
  p.o_head_stride = or_default(a.o_head_stride, dv);
  check_tensor("q", a.q, p.q_row_stride, p.q_head_stride);
  check_tensor("k", a.k, p.k_row_stride, p.k_head_stride);
  check_tensor("v", a.v, p.v_row_stride, p.v_head_stride);
  check_tensor("o", a.o, p.o_row_stride, p.o_head_stride);

  if (plan.lse) {
    require(a.lse != nullptr, "the spec asks for LSE output but lse is null");
    require(a.total_q >= 0, "total_q must be >= 0 with head-major LSE");
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
  const float scale = a.softmax_scale > 0 ? a.softmax_scale : 1.0f / std::sqrt(float(d));
  require(std::isfinite(scale), "softmax_scale must be finite");
  p.scale_log2 = scale * 1.4426950408889634f;
  const float cap = a.softcap >= 0 ? a.softcap : s.softcap;
  require((cap > 0) == plan.softcap,
          plan.softcap ? "softcap must be > 0: the kernel was compiled with softcap"
                       : "softcap given but the kernel was compiled without it (spec softcap: 0)");
  p.softcap = cap;
  p.softcap_inv_scale = cap > 0 ? scale / cap : 0.f;
  p.window_left = a.window_left >= -1 ? a.window_left : s.mask.window_left;
  p.window_right = a.window_right >= -1 ? a.window_right : s.mask.window_right;
  return p;
}

GridDims prefill_grid(const KernelPlan& plan, const PrefillArgs& a) {
  GridDims g;
  const int bm = plan.config.block_m;
  g.x = unsigned((a.max_seqlen_q + bm - 1) / bm);
  if (g.x == 0) g.x = 1;
  g.y = unsigned(plan.spec.num_q_heads);
  g.z = unsigned(a.batch);
  return g;
}

}  // namespace attnc
