#include "runtime/launch/int8_args.h"

#include <cstdint>

#include "runtime/launch/arg_checks.h"

namespace attnc {

void set_int8_params(const KernelPlan& plan, const AttentionArgs& a, AttentionParams& p) {
  const ArgCheck c("attention");
  const auto require = [&](bool ok, const auto&... what) { c.require(ok, what...); };
  const auto check_scale = [&](const char* name, const float* ptr, const char* shape) {
    require(ptr != nullptr, name, " ", shape, " fp32 is required: the kernel is int8");
    c.pointer(name, ptr, 4);
  };
  if (plan.int8 == Int8Mode::none) {
    require(!a.q_scale && !a.k_token_scale && !a.v_channel_scale,
            "q_scale/k_token_scale/v_channel_scale given but the spec has no int8 quant");
    return;
  }
  const Spec& s = plan.spec;
  const bool qkv = plan.int8 == Int8Mode::qkv;
  check_scale("q_scale", a.q_scale, "[total_q, Hq] or [Hq, total_q]");
  check_scale("k_token_scale", a.k_token_scale, plan.paged ? "[num_blocks, Hkv, page_size]" : "[total_k, Hkv]");
  if (qkv) check_scale("v_channel_scale", a.v_channel_scale, "[Hkv, Dv]");
  else require(a.v_channel_scale == nullptr, "v_channel_scale given but int8_qk keeps V in 16 bits (no V scales)");
  require((a.q_scale_row_stride == 0) == (a.q_scale_head_stride == 0),
          "q_scale strides: give both (row, head) or neither ([total_q, Hq])");
  require(a.q_scale_row_stride >= 0 && a.q_scale_head_stride >= 0, "q_scale strides must be >= 0");
  p.q_scale = a.q_scale;
  p.q_scale_row_stride = a.q_scale_row_stride ? a.q_scale_row_stride : s.num_q_heads;
  p.q_scale_head_stride = a.q_scale_head_stride ? a.q_scale_head_stride : 1;
  p.k_token_scale = a.k_token_scale;
  p.k_token_scale_row_stride = plan.paged ? 1 : s.num_kv_heads;
  p.k_token_scale_head_stride = plan.paged ? a.page_size : 1;
  p.k_token_scale_block_stride = plan.paged ? (long long)s.num_kv_heads * a.page_size : 0;
  p.v_channel_scale = a.v_channel_scale;
  // prefill_sm90 copies a page's key scales with bulk copies (16-byte aligned ends; page sizes are
  // multiples of 16, so the start is what is left to check).
  if (plan.family == "prefill_sm90" && plan.paged)
    require(reinterpret_cast<std::uintptr_t>(a.k_token_scale) % 16 == 0,
            "k_token_scale must be 16-byte aligned for paged prefill_sm90 (bulk copies of a page's scales); "
            "prefill_sm80 takes 4-byte aligned scales");
  // decode_bw copies int8 rows in 16-byte pieces (kv_int8_regs.cuh): whole 16-byte strides.
  if (plan.family == "decode_bw") {
    for (long long stride : {p.k_row_stride, p.k_head_stride, p.k_block_stride})
      require(stride % 16 == 0, "k strides must be multiples of 16 int8 elements for decode_bw (16-byte copies), got ",
              stride, "; the decode_split family reads 8-byte aligned rows");
    if (qkv)
      for (long long stride : {p.v_row_stride, p.v_head_stride, p.v_block_stride})
        require(stride % 16 == 0, "v strides must be multiples of 16 int8 elements for decode_bw (16-byte copies), "
                "got ", stride, "; the decode_split family reads 8-byte aligned rows");
  }
  // int8 rows are addressed in 2-byte units (the element strides are checked multiples of 8).
  for (long long* stride : {&p.q_row_stride, &p.q_head_stride, &p.k_row_stride, &p.k_head_stride, &p.k_block_stride})
    *stride /= 2;
  if (qkv)
    for (long long* stride : {&p.v_row_stride, &p.v_head_stride, &p.v_block_stride}) *stride /= 2;
}

}  // namespace attnc
