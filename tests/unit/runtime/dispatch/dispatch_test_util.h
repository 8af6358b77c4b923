// Shared by the dispatcher tests: a small spec, a described (not opened) device and tuning records
// written the way the tuner writes them.
#pragma once

#include <string>

#include "cache/store.h"
#include "generator/spec/spec_parse.h"
#include "runtime/driver/device_info.h"
#include "runtime/compiler/nvrtc_compiler.h"
#include "runtime/dispatch/shape_bucket.h"
#include "runtime/dispatch/tuned_choice.h"
#include "runtime/dispatch/tuning_key.h"

namespace attnc::test {

// Head dim 64 keeps NVRTC compiles short.
inline const char* kSmallSpecYaml = R"(version: 1
name: dispatch-test
head_dim: 64
num_q_heads: 8
num_kv_heads: 2
dtype: bf16
kv_cache: {dtype: same, layout: NHD, page_size: 16}
mask: causal
kernels: [prefill, decode]
)";

// `s` as an int8_qkv spec (int8 Q, K and V, an int8 KV cache).
inline Spec as_int8_qkv(Spec s) {
  s.quant = QuantMode::int8_qkv;
  s.kv_cache.dtype = KvDType::int8;
  return s;
}

inline DeviceInfo test_device() { return {"Test GPU", "sm_90a", 132, 13000}; }

// The key the tuner writes under (runtime/dispatch/tuning_key.h), for a bucket label such as "b4.q1.k1024".
inline TuningKey key_for(const Spec& spec, const DeviceInfo& d, KernelKind kind, const std::string& bucket) {
  return tuning_key(d, spec_id(spec), kind, ShapeBucket::parse(kind, bucket));
}

inline void put_record(const std::string& db, const TuningKey& key, const std::string& config_json) {
  Store store = Store::open(db);
  TuningRecord r;
  r.key = key;
  r.config_json = config_json;
  r.time_us = 10;
  store.put_tuning(r);
}

}  // namespace attnc::test
