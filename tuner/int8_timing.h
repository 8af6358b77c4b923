// int8 specs in the tuner's timing inputs (attention-semantics.md §5.2, docs/kernels-int8.md): the
// scales the kernels require (q [total_q, Hq], k_token [pages, Hkv, page] or [total_k, Hkv], and
// int8_qkv's v_channel [Hkv, Dv]), all one small constant since only the time is read, and
// int8_qk's 16-bit V plane, which lies apart from the paged cache's int8 K plane.
#pragma once

#include "generator/spec/spec.h"
#include "runtime/driver/device.h"
#include "runtime/launch/attention_args.h"
#include "runtime/launch/kv_cache_layout.h"

namespace attnc {

class Int8TimingInputs {
 public:
  // Nothing for a spec without an int8 quant mode. `paged`: the cache's strides, or null.
  void setup(const Spec& s, int total_q, int total_k, const KvCacheStrides* paged);
  // The scales (and int8_qk's V plane) into a call whose K/V are bound already.
  void bind(AttentionArgs& a) const;

 private:
  bool int8_ = false, qk_ = false;
  std::size_t k_at_ = 0, v_at_ = 0;  // floats into scales_
  long long v_offset_ = 0;           // paged int8_qk: V's first element in its plane
  DeviceBuffer scales_, v16_;
};

}  // namespace attnc
