#include "tuner/int8_timing.h"

#include <vector>

#include "check/half.h"

namespace attnc {

void Int8TimingInputs::setup(const Spec& s, int total_q, int total_k, const KvCacheStrides* paged) {
  int8_ = s.quant == QuantMode::int8_qkv || s.quant == QuantMode::int8_qk;
  if (!int8_) return;
  qk_ = s.quant == QuantMode::int8_qk;
  const std::size_t q = std::size_t(total_q) * s.num_q_heads;
  const std::size_t k = paged ? std::size_t(paged->num_blocks) * s.num_kv_heads * paged->block_size
                              : std::size_t(total_k) * s.num_kv_heads;
  k_at_ = q;
  v_at_ = q + k;
  // 0.01: scores of a few units, as real int8 scales give (timing only reads the clock).
  scales_ = DeviceBuffer::from(std::vector<float>(v_at_ + std::size_t(s.num_kv_heads) * s.head_dim_v, 0.01f));
  if (qk_ && paged) {  // the 16-bit V plane, laid out as the cache's strides say
    v_offset_ = paged->v_offset;
    v16_ = DeviceBuffer::from(std::vector<std::uint16_t>(std::size_t(paged->total_elems), to_half(s.dtype, 0.25f)));
  }
}

void Int8TimingInputs::bind(AttentionArgs& a) const {
  if (!int8_) return;
  const float* f = scales_.as<float>();
  a.q_scale = f;
  a.k_token_scale = f + k_at_;
  if (!qk_) a.v_channel_scale = f + v_at_;
  if (v16_.size()) a.v = v16_.as<std::uint16_t>() + v_offset_;
}

}  // namespace attnc
