#include "check/int8_inputs.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "check/half.h"

namespace attnc {
namespace {

std::vector<float> normal_floats(size_t n, std::mt19937_64& rng) {
  std::normal_distribution<float> dist(0.f, 1.f);
  std::vector<float> x(n);
  for (float& v : x) v = dist(rng);
  return x;
}

// As the device does (templates/attnc/families/cache_write_int8.cuh): IEEE float division,
// round to nearest even, clamped to [-127, 127]; a zero scale gives 0.
std::int8_t quantize(float x, float scale) {
  return scale > 0 ? static_cast<std::int8_t>(std::clamp(std::nearbyint(x / scale), -127.f, 127.f)) : 0;
}

}  // namespace

void quantize_int8_rows(const std::vector<float>& x, int rows, int width, std::vector<std::int8_t>& out,
                        std::vector<float>& scale) {
  out.resize(size_t(rows) * width);
  scale.resize(rows);
  for (int r = 0; r < rows; ++r) {
    float amax = 0.f;
    for (int c = 0; c < width; ++c) amax = std::max(amax, std::fabs(x[size_t(r) * width + c]));
    scale[r] = amax / 127.f;
    for (int c = 0; c < width; ++c) out[size_t(r) * width + c] = quantize(x[size_t(r) * width + c], scale[r]);
  }
}

Int8Inputs random_int8_inputs(Int8Mode mode, DType t, int total_q, int total_k, int hq, int hkv, int d, int dv,
                              std::mt19937_64& rng) {
  Int8Inputs in;
  quantize_int8_rows(normal_floats(size_t(total_q) * hq * d, rng), total_q * hq, d, in.q, in.q_scale);
  quantize_int8_rows(normal_floats(size_t(total_k) * hkv * d, rng), total_k * hkv, d, in.k, in.k_token_scale);
  const auto dequant = [](const std::vector<std::int8_t>& x8, const std::vector<float>& scale, int width) {
    std::vector<double> x(x8.size());
    for (size_t i = 0; i < x8.size(); ++i) x[i] = double(x8[i]) * double(scale[i / width]);
    return x;
  };
  in.q_exact = dequant(in.q, in.q_scale, d);
  in.k_exact = dequant(in.k, in.k_token_scale, d);
  const std::vector<float> v = normal_floats(size_t(total_k) * hkv * dv, rng);
  in.v_exact.resize(v.size());
  if (mode == Int8Mode::qkv) {  // static per-channel scales: amax over the tokens of each (kv head, channel)
    in.v_channel_scale.assign(size_t(hkv) * dv, 0.f);
    for (size_t i = 0; i < v.size(); ++i) {
      float& s = in.v_channel_scale[i % (size_t(hkv) * dv)];
      s = std::max(s, std::fabs(v[i]));
    }
    for (float& s : in.v_channel_scale) s = s > 0 ? s / 127.f : 1.f;
    in.v.resize(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      const float s = in.v_channel_scale[i % (size_t(hkv) * dv)];
      in.v[i] = quantize(v[i], s);
      in.v_exact[i] = double(in.v[i]) * double(s);
    }
  } else {
    in.v16.resize(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      in.v16[i] = to_half(t, v[i]);
      in.v_exact[i] = from_half(t, in.v16[i]);
    }
  }
  return in;
}

Int8CacheImages int8_cache_images(Int8Mode mode, const KvCacheStrides& s, const HostPageTable& t,
                                  const std::vector<int>& cu_k, const Int8Inputs& in, int d, int dv) {
  Int8CacheImages img;
  const int bs = s.block_size, hkv = s.num_kv_heads;
  img.kv.assign(size_t(s.total_elems), 127);
  if (mode == Int8Mode::qk) img.v16.assign(size_t(s.total_elems), kHalfPoison);
  img.k_token_scale.assign(size_t(s.num_blocks) * hkv * bs, std::numeric_limits<float>::quiet_NaN());
  for (size_t r = 0; r < t.pages.size(); ++r)
    for (size_t j = 0; j < t.pages[r].size(); ++j) {
      const long long page = t.pages[r][j];
      const int slots = std::min<int>(bs, cu_k[r + 1] - cu_k[r] - int(j) * bs);
      for (int slot = 0; slot < slots; ++slot) {
        const size_t token = size_t(cu_k[r]) + j * bs + slot;
        for (int h = 0; h < hkv; ++h) {
          const size_t row = token * hkv + h;
          std::copy_n(in.k.begin() + row * d, d, img.kv.begin() + s.k_index(page, slot, h, 0));
          if (mode == Int8Mode::qkv)
            std::copy_n(in.v.begin() + row * dv, dv, img.kv.begin() + s.v_index(page, slot, h, 0));
          else
            std::copy_n(in.v16.begin() + row * dv, dv, img.v16.begin() + s.v_index(page, slot, h, 0));
          img.k_token_scale[(size_t(page) * hkv + h) * bs + slot] = in.k_token_scale[row];
        }
      }
    }
  return img;
}

void reference_int8_cache_write(const CacheWriteParams& p, DType t, QuantMode mode, const std::uint16_t* key,
                                const std::uint16_t* value, const long long* slots, const float* v_channel_scale,
                                std::int8_t* key_cache, void* value_cache, float* key_scale_cache) {
  const int d = p.head_size, dv = p.head_size_v;
  std::vector<float> row(d);
  std::vector<std::int8_t> q8;
  std::vector<float> scale;
  for (int tok = 0; tok < p.num_tokens; ++tok) {
    const long long slot = slots[tok];
    if (slot < 0 || slot >= p.num_slots) continue;
    const long long page = slot / p.block_size, pos = slot % p.block_size;
    for (int h = 0; h < p.num_heads; ++h) {
      const std::uint16_t* k = key + tok * p.key_row_stride + h * p.key_head_stride;
      for (int i = 0; i < d; ++i) row[i] = from_half(t, k[i]);
      quantize_int8_rows(row, 1, d, q8, scale);
      std::copy_n(q8.begin(), d, key_cache + page * p.kc_block_stride + pos * p.kc_page_stride + h * p.kc_head_stride);
      key_scale_cache[(page * p.num_heads + h) * p.block_size + pos] = scale[0];
      const std::uint16_t* v = value + tok * p.value_row_stride + h * p.value_head_stride;
      const long long dst = page * p.vc_block_stride + pos * p.vc_page_stride + h * p.vc_head_stride;
      for (int i = 0; i < dv; ++i) {
        if (mode == QuantMode::int8_qk)
          static_cast<std::uint16_t*>(value_cache)[dst + i] = v[i];
        else
          static_cast<std::int8_t*>(value_cache)[dst + i] = quantize(from_half(t, v[i]), v_channel_scale[h * dv + i]);
      }
    }
  }
}

}  // namespace attnc
