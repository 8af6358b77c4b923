// prepare_merge, prepare_cache_write and prepare_cascade check every argument before any launch
// and name what is wrong; good arguments give the strides and launch shapes the kernels expect.
// Also the op planner: names, refusals, and what it emits.
#include <gtest/gtest.h>

#include "generator/emit/emit.h"
#include "generator/spec/spec_parse.h"
#include "runtime/launch/cache_write_args.h"
#include "runtime/launch/cascade.h"
#include "runtime/launch/merge_args.h"

namespace attnc {
namespace {

Spec llama(KvDType cache = KvDType::same) {
  Spec s;
  s.num_q_heads = 32;
  s.num_kv_heads = 8;
  s.kv_cache.dtype = cache;
  s.kernels.merge = s.kernels.cache_write = true;
  return s;
}

KernelPlan plan_for(const Spec& s, KernelKind kind, const std::string& arch = "sm_90a") {
  return plan_kernel(s, kind, default_config(s, kind, arch), arch);
}

template <class F>
void expect_bad(F&& call, const std::string& what) {
  try {
    call();
    ADD_FAILURE() << "accepted; expected an error containing: " << what;
  } catch (const BadCall& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

template <class T = void>
T* fake(unsigned long long address) {  // aligned device addresses: only checked, never dereferenced
  return reinterpret_cast<T*>(address);
}

// ---- planner and emitter ----

TEST(OpsPlan, NamesCarryOnlyWhatChangesTheCode) {
  EXPECT_EQ(emit_kernel(plan_for(llama(), KernelKind::merge)).entry, "attnc_merge_states_bf16");
  EXPECT_EQ(emit_kernel(plan_for(llama(), KernelKind::cache_write)).entry, "attnc_cache_write_b16");
  Spec fp16 = llama();
  fp16.dtype = DType::fp16;
  fp16.head_dim = fp16.head_dim_v = 64;
  EXPECT_EQ(emit_kernel(plan_for(fp16, KernelKind::merge)).entry, "attnc_merge_states_fp16");
  // The 16-bit copy is one kernel for every spec.
  EXPECT_EQ(emit_kernel(plan_for(fp16, KernelKind::cache_write)).source,
            emit_kernel(plan_for(llama(), KernelKind::cache_write)).source);
  EXPECT_EQ(emit_kernel(plan_for(llama(KvDType::fp8_e4m3), KernelKind::cache_write)).entry,
            "attnc_cache_write_bf16_fp8e4m3");
  EXPECT_EQ(emit_kernel(plan_for(llama(KvDType::fp8_e5m2), KernelKind::cache_write, "sm_89")).entry,
            "attnc_cache_write_bf16_fp8e5m2");
}

TEST(OpsPlan, RefusesWhatNoTemplateDoes) {
  EXPECT_THROW(plan_for(llama(KvDType::fp8_e4m3), KernelKind::cache_write, "sm_86"), NotSupportedYet);
  Spec int8_d512 = llama(KvDType::int8);
  int8_d512.quant = QuantMode::int8_qkv;
  int8_d512.head_dim = int8_d512.head_dim_v = 512;
  EXPECT_THROW(plan_for(int8_d512, KernelKind::cache_write), NotSupportedYet);  // a key row per warp
  Config c = default_config(llama(), KernelKind::merge, "sm_90a");
  c.family = "cache_write";
  EXPECT_THROW(plan_kernel(llama(), KernelKind::merge, c, "sm_90a"), BadConfig);
  // Tile fields aimed at attention kernels do not change an op kernel.
  Config tiles = Config::from_json(R"({"block_n":32,"stages":3})", default_config(llama(), KernelKind::merge, "sm_90a"));
  EXPECT_EQ(emit_kernel(plan_kernel(llama(), KernelKind::merge, tiles, "sm_90a")).source,
            emit_kernel(plan_for(llama(), KernelKind::merge)).source);
}

// ---- merge ----

MergeArgs good_merge() {
  MergeArgs a;
  a.output = fake(0x10000);
  a.prefix_output = fake(0x20000);
  a.prefix_lse = fake<float>(0x30000);
  a.suffix_output = fake(0x40000);
  a.suffix_lse = fake<float>(0x50000);
  a.num_tokens = 100;
  return a;
}

TEST(MergeArgs, GoodCallGivesVllmLayoutsAndGrid) {
  const MergeLaunch l = prepare_merge(plan_for(llama(), KernelKind::merge), good_merge());
  EXPECT_EQ(l.params.out_row_stride, 32 * 128);
  EXPECT_EQ(l.params.suffix_head_stride, 128);
  EXPECT_EQ(l.params.prefix_lse_token_stride, 1);  // [H, T]
  EXPECT_EQ(l.params.prefix_lse_head_stride, 100);
  EXPECT_EQ(l.params.head_size, 128);
  EXPECT_EQ(l.params.lse_base2, 0);
  EXPECT_EQ(l.params.out_lse, nullptr);
  EXPECT_EQ(l.grid.x, (100u * 16 + 127) / 128);
  EXPECT_EQ(l.grid.y, 32u);
  EXPECT_EQ(l.block.x, 128u);

  MergeArgs a = good_merge();
  a.lse_base = LseBase::two;
  a.output_lse = fake<float>(0x60000);
  a.output_lse_token_stride = 32;  // [T, H]
  a.output_lse_head_stride = 1;
  a.output = const_cast<void*>(a.prefix_output);  // in place
  const MergeParams p = prepare_merge(plan_for(llama(), KernelKind::merge), a).params;
  EXPECT_EQ(p.lse_base2, 1);
  EXPECT_EQ(p.out_lse_token_stride, 32);

  a = good_merge();
  a.num_tokens = 0;
  a.output = nullptr;  // an empty call touches nothing
  EXPECT_TRUE(prepare_merge(plan_for(llama(), KernelKind::merge), a).empty);
}

TEST(MergeArgs, BadCallsNameTheProblem) {
  const KernelPlan plan = plan_for(llama(), KernelKind::merge);
  auto bad = [&](void (*edit)(MergeArgs&), const std::string& what) {
    MergeArgs a = good_merge();
    edit(a);
    expect_bad([&] { prepare_merge(plan, a); }, what);
  };
  bad([](MergeArgs& a) { a.num_tokens = -1; }, "merge: num_tokens must be >= 0, got -1");
  bad([](MergeArgs& a) { a.output = nullptr; }, "merge: output is null");
  bad([](MergeArgs& a) { a.suffix_lse = nullptr; }, "merge: suffix_lse is null");
  bad([](MergeArgs& a) { a.prefix_output = fake(0x20008); }, "prefix_output must be 16-byte aligned");
  bad([](MergeArgs& a) { a.prefix_lse = fake<float>(0x30002); }, "prefix_lse must be 4-byte aligned");
  bad([](MergeArgs& a) { a.head_size = 60; }, "head_size must be a multiple of 8 (16-byte chunks; 0: the spec's), got 60");
  bad([](MergeArgs& a) { a.head_size = 64; }, "head_size 64 does not match the spec's head_dim_v 128");
  bad([](MergeArgs& a) { a.num_heads = 8; }, "num_heads 8 does not match the spec's num_q_heads 32");
  bad([](MergeArgs& a) { a.suffix_row_stride = 4100; }, "suffix_output strides must be multiples of 8 elements (16 bytes), got 4100");
  bad([](MergeArgs& a) { a.output_head_stride = -128; }, "output strides must be positive, got -128");
  bad([](MergeArgs& a) { a.output_head_stride = 64; }, "output overlaps itself");
  bad([](MergeArgs& a) { a.suffix_lse_token_stride = 32; }, "suffix_lse strides must both be positive");
  bad([](MergeArgs& a) {
        a.output_lse = fake<float>(0x60000);
        a.output_lse_token_stride = 1;
        a.output_lse_head_stride = 50;  // heads of 100 tokens 50 apart
      },
      "output_lse overlaps itself");
  bad([](MergeArgs& a) { a.output_lse_head_stride = 1; }, "output_lse strides given but output_lse is null");
  bad([](MergeArgs& a) {
        a.output = const_cast<void*>(a.suffix_output);
        a.output_row_stride = 8192;
      },
      "output aliases suffix_output with different strides");
  bad([](MergeArgs& a) { a.num_tokens = 1 << 28; }, "num_tokens * head_size / 8 must be < 2^31");
  expect_bad([&] { prepare_merge(plan_for(llama(), KernelKind::cache_write), good_merge()); },
             "the plan makes cache_write kernels, not merge");
}

// An MLA layer's merge takes prefill's rows (head_dim_v 128) and absorbed decode's (the latent V,
// kv_lora_rank 512); nothing else.
TEST(MergeArgs, MlaTakesPrefillAndLatentRows) {
  const Spec s = parse_spec("version: 1\nnum_q_heads: 32\nmla: {kv_lora_rank: 512, qk_rope_head_dim: 64, "
                            "qk_nope_head_dim: 128, v_head_dim: 128}\nkernels: [merge]\n", "mla.yaml");
  const KernelPlan plan = plan_for(s, KernelKind::merge);
  MergeArgs a = good_merge();
  EXPECT_EQ(prepare_merge(plan, a).params.head_size, 128);
  a.head_size = 512;
  const MergeLaunch l = prepare_merge(plan, a);
  EXPECT_EQ(l.params.head_size, 512);
  EXPECT_EQ(l.params.out_row_stride, 32 * 512);
  EXPECT_EQ(l.params.prefix_head_stride, 512);
  EXPECT_EQ(l.grid.x, (100u * 64 + 127) / 128);
  a.head_size = 576;
  expect_bad([&] { prepare_merge(plan, a); },
             "head_size 576 is neither the spec's head_dim_v 128 nor its kv_lora_rank 512");
  a = good_merge();
  a.head_size = 512;  // not an MLA layer: its outputs are head_dim_v wide
  expect_bad([&] { prepare_merge(plan_for(llama(), KernelKind::merge), a); },
             "head_size 512 does not match the spec's head_dim_v 128");
}

// ---- cache_write ----

CacheWriteArgs good_write() {
  CacheWriteArgs a;
  a.key = fake(0x10000);
  a.value = fake(0x20000);
  a.key_cache = fake(0x100000);
  a.value_cache = fake(0x200000);
  a.slot_mapping = fake<const long long>(0x30000);
  a.num_tokens = 7;
  a.num_blocks = 64;
  return a;
}

TEST(CacheWriteArgs, DefaultsFollowTheSpecLayout) {
  const CacheWriteLaunch l = prepare_cache_write(plan_for(llama(), KernelKind::cache_write), good_write());
  EXPECT_EQ(l.params.key_row_stride, 8 * 128);
  EXPECT_EQ(l.params.block_size, 16);
  EXPECT_EQ(l.params.kc_block_stride, 16 * 8 * 128);  // NHD
  EXPECT_EQ(l.params.kc_page_stride, 8 * 128);
  EXPECT_EQ(l.params.kc_head_stride, 128);
  EXPECT_EQ(l.params.num_slots, 64 * 16);
  EXPECT_EQ(l.grid.x, 7u);
  Spec hnd = llama();
  hnd.kv_cache.layout = KvLayout::HND;
  const CacheWriteParams p = prepare_cache_write(plan_for(hnd, KernelKind::cache_write), good_write()).params;
  EXPECT_EQ(p.vc_block_stride, 8 * 16 * 128);
  EXPECT_EQ(p.vc_page_stride, 128);
  EXPECT_EQ(p.vc_head_stride, 16 * 128);
}

TEST(CacheWriteArgs, Fp8TakesScales) {
  const KernelPlan plan = plan_for(llama(KvDType::fp8_e4m3), KernelKind::cache_write);
  CacheWriteArgs a = good_write();
  a.key_cache = fake(0x100008);  // fp8 caches move 8-byte pieces
  a.k_scale = fake<const float>(0x40000);
  a.v_scale = fake<const float>(0x40004);
  a.per_head_scale = true;
  const CacheWriteParams p = prepare_cache_write(plan, a).params;
  EXPECT_EQ(p.scale_head_stride, 1);
  EXPECT_EQ(p.k_scale, a.k_scale);
  a.v_scale = nullptr;
  expect_bad([&] { prepare_cache_write(plan, a); }, "cache_write: a fp8_e4m3 cache needs k_scale and v_scale");
  a = good_write();
  a.k_scale = a.v_scale = fake<const float>(0x40000);
  a.key_cache_block_stride = 16 * 8 * 128 + 4;
  a.key_cache_page_stride = 8 * 128;
  a.key_cache_head_stride = 128;
  expect_bad([&] { prepare_cache_write(plan, a); }, "key_cache strides must be multiples of 8 elements (8 bytes), got 16388");
}

Spec int8_llama(QuantMode q) {
  Spec s = llama(KvDType::int8);
  s.quant = q;
  s.kv_cache.layout = KvLayout::HND;
  return s;
}

TEST(CacheWriteArgs, Int8QuantisesKeysIntoTheScaleCache) {
  const KernelPlan qkv = plan_for(int8_llama(QuantMode::int8_qkv), KernelKind::cache_write);
  const KernelPlan qk = plan_for(int8_llama(QuantMode::int8_qk), KernelKind::cache_write);
  EXPECT_EQ(emit_kernel(qkv).entry, "attnc_cache_write_bf16_int8qkv");
  EXPECT_EQ(emit_kernel(qk).entry, "attnc_cache_write_bf16_int8qk");
  EXPECT_NE(emit_kernel(qkv).source.find("_quantize(const attnc::Int8QuantizeParams params)"), std::string::npos);
  CacheWriteArgs a = good_write();
  a.key_cache = fake(0x100008);  // int8 planes move 8-byte pieces
  expect_bad([&] { prepare_cache_write(qk, a); }, "cache_write: an int8 cache needs key_scale_cache");
  a.key_scale_cache = fake<float>(0x50000);
  EXPECT_EQ(prepare_cache_write(qk, a).params.key_scale_cache, a.key_scale_cache);
  expect_bad([&] { prepare_cache_write(qkv, a); }, "int8_qkv needs v_scale [Hkv, Dv]");
  a.v_scale = fake<const float>(0x40000);
  const CacheWriteParams p = prepare_cache_write(qkv, a).params;
  EXPECT_EQ(p.v_scale, a.v_scale);
  EXPECT_EQ(p.kc_head_stride, 16 * 128);  // HND
  expect_bad([&] { prepare_cache_write(qk, a); }, "v_scale given but int8_qk keeps V in 16 bits");
  a.k_scale = fake<const float>(0x40000);
  expect_bad([&] { prepare_cache_write(qkv, a); }, "k_scale given but an int8 cache quantises keys per token");
  // The quantiser: [rows, Hq, D] by default, scales [rows, Hq] or [Hq, rows].
  Int8QuantizeArgs q;
  q.x = fake(0x10000);
  q.out = fake<signed char>(0x20000);
  q.scale = fake<float>(0x30000);
  q.num_rows = 5;
  Int8QuantizeParams qp = prepare_int8_quantize(qkv, q).params;
  EXPECT_EQ(qp.x_row_stride, 32 * 128);
  EXPECT_EQ(qp.scale_row_stride, 32);
  EXPECT_EQ(qp.scale_head_stride, 1);
  q.scale_head_major = true;
  qp = prepare_int8_quantize(qkv, q).params;
  EXPECT_EQ(qp.scale_row_stride, 1);
  EXPECT_EQ(qp.scale_head_stride, 5);
  expect_bad([&] { prepare_int8_quantize(plan_for(llama(), KernelKind::cache_write), q); },
             "the quantiser is the _quantize entry of an int8 spec's cache_write kernel");
}

TEST(CacheWriteArgs, BadCallsNameTheProblem) {
  const KernelPlan plan = plan_for(llama(), KernelKind::cache_write);
  auto bad = [&](void (*edit)(CacheWriteArgs&), const std::string& what) {
    CacheWriteArgs a = good_write();
    edit(a);
    expect_bad([&] { prepare_cache_write(plan, a); }, what);
  };
  bad([](CacheWriteArgs& a) { a.num_tokens = -3; }, "cache_write: num_tokens (slot_mapping's length) must be >= 0, got -3");
  bad([](CacheWriteArgs& a) { a.key = nullptr; }, "cache_write: key is null");
  bad([](CacheWriteArgs& a) { a.slot_mapping = nullptr; }, "slot_mapping is null");
  bad([](CacheWriteArgs& a) { a.slot_mapping = fake<const long long>(0x30004); }, "slot_mapping must be 8-byte aligned");
  bad([](CacheWriteArgs& a) { a.value_cache = fake(0x200008); }, "value_cache must be 16-byte aligned");
  bad([](CacheWriteArgs& a) { a.value_cache = a.key_cache; }, "key_cache and value_cache are the same pointer");
  bad([](CacheWriteArgs& a) { a.head_size = 100; }, "head_size must be a multiple of 8 (16-byte chunks; 0: the spec's), got 100");
  bad([](CacheWriteArgs& a) { a.head_size = 64; }, "head_size 64 does not match the spec's head_dim 128");
  bad([](CacheWriteArgs& a) { a.num_kv_heads = 32; }, "num_kv_heads 32 does not match the spec's num_kv_heads 8");
  bad([](CacheWriteArgs& a) { a.num_blocks = 0; }, "num_blocks (pages in the cache) must be >= 1, got 0");
  bad([](CacheWriteArgs& a) { a.block_size = -16; }, "block_size must be >= 0");
  bad([](CacheWriteArgs& a) { a.key_row_stride = 1030; }, "key strides must be multiples of 8 elements (16 bytes), got 1030");
  bad([](CacheWriteArgs& a) { a.key_cache_page_stride = 1024; }, "key_cache strides: give block, page and head strides together");
  bad([](CacheWriteArgs& a) {  // heads 64 apart in rows of 128
        a.value_cache_block_stride = 16 * 8 * 128;
        a.value_cache_page_stride = 8 * 128;
        a.value_cache_head_stride = 64;
      },
      "value_cache overlaps itself");
  bad([](CacheWriteArgs& a) { a.k_scale = fake<const float>(0x40000); }, "k_scale/v_scale given but the cache holds the model's dtype");
  static const long long past[7] = {0, 1, -1, 1023, 1024, 5, 6};  // 64 blocks of 16: slots 0..1023
  bad([](CacheWriteArgs& a) { a.host_slot_mapping = past; },
      "slot_mapping[4] = 1024 points past the cache of 64 blocks of 16 slots (1024)");
  static const long long twice[7] = {0, 1, -1, -1, 9, 5, 9};
  bad([](CacheWriteArgs& a) { a.host_slot_mapping = twice; }, "slot_mapping[4] and slot_mapping[6] both write slot 9");
  static const long long fine[7] = {0, 1, -1, -1, 1023, 5, 9};
  CacheWriteArgs a = good_write();
  a.host_slot_mapping = fine;
  EXPECT_NO_THROW(prepare_cache_write(plan, a));
}

TEST(CacheWriteArgs, ThreeLayoutsByStrides) {
  const KernelPlan plan = plan_for(llama(), KernelKind::cache_write);
  const long long nb = 64, bs = 32, h = 8, d = 128;
  CacheWriteArgs a = good_write();
  a.block_size = int(bs);
  // FlashInfer (nb, 2, bs, Hkv, D): K and V pages interleave, each plane is strided.
  a.value_cache = static_cast<char*>(a.key_cache) + 2 * bs * h * d;
  a.key_cache_block_stride = a.value_cache_block_stride = 2 * bs * h * d;
  a.key_cache_page_stride = a.value_cache_page_stride = h * d;
  a.key_cache_head_stride = a.value_cache_head_stride = d;
  EXPECT_NO_THROW(prepare_cache_write(plan, a));
  // The int8 fork's HND (2, nb, Hkv, bs, D).
  a.value_cache = static_cast<char*>(a.key_cache) + 2 * nb * h * bs * d;
  a.key_cache_block_stride = a.value_cache_block_stride = h * bs * d;
  a.key_cache_page_stride = a.value_cache_page_stride = d;
  a.key_cache_head_stride = a.value_cache_head_stride = bs * d;
  EXPECT_NO_THROW(prepare_cache_write(plan, a));
  // A key view of fused QKV [T, (32 + 2 * 8) * 128].
  a.key_row_stride = a.value_row_stride = (32 + 16) * d;
  EXPECT_EQ(prepare_cache_write(plan, a).params.key_row_stride, 48 * 128);
}

// ---- cascade ----

CascadeArgs good_cascade() {
  CascadeArgs a;
  a.query = fake(0x10000);
  a.key_cache = fake(0x100000);
  a.value_cache = fake(0x200000);
  a.output = fake(0x20000);
  a.k_row_stride = a.v_row_stride = 8 * 128;
  a.k_head_stride = a.v_head_stride = 128;
  a.k_block_stride = a.v_block_stride = 16 * 8 * 128;
  a.page_size = 16;
  a.num_blocks = 1000;
  a.num_tokens = 40;
  a.num_reqs = 8;
  a.cu_query_lens = fake<const int>(0x30000);
  a.max_query_len = 10;
  a.cu_prefix_query_lens = fake<const int>(0x30100);
  a.prefix_kv_lens = fake<const int>(0x30200);
  a.suffix_kv_lens = fake<const int>(0x30300);
  a.common_prefix_len = 256;
  a.block_table = fake<const int>(0x40000);
  a.block_table_stride = 64;
  a.max_blocks_per_seq = 64;
  a.workspace = fake(0x1000000);
  a.workspace_bytes = 1 << 20;
  return a;
}

TEST(Cascade, PassSpecs) {
  Spec s = llama();
  s.sinks = true;
  s.lse = {LseLayout::token_major, LseBase::two};
  const Spec pre = cascade_pass_spec(s, CascadePass::prefix), suf = cascade_pass_spec(s, CascadePass::suffix);
  EXPECT_EQ(pre.mask.kind, MaskKind::none);
  EXPECT_FALSE(pre.sinks);
  EXPECT_EQ(suf.mask.kind, MaskKind::causal);
  EXPECT_TRUE(suf.sinks);
  for (const Spec& p : {pre, suf}) {
    EXPECT_EQ(p.lse.layout, LseLayout::head_major);
    EXPECT_EQ(p.lse.base, LseBase::e);
    EXPECT_FALSE(p.kernels.merge || p.kernels.decode || p.kernels.cache_write);
  }
  s.alibi = Alibi::linear;
  expect_bad([&] { cascade_pass_spec(s, CascadePass::suffix); }, "cascade: ALiBi (linear) is not supported");
  s.alibi = Alibi::none;
  s.mask = {MaskKind::sliding_window, 4095, 0};
  expect_bad([&] { plan_cascade(s, "sm_90a"); }, "cascade: sliding window (4095, 0) is not supported");
  s.mask = {MaskKind::sliding_window, -1, 0};  // causal written as a window
  EXPECT_NO_THROW(plan_cascade(s, "sm_90a"));
}

// The passes are the arch's paged prefill: prefill_sm90 on sm_90a, whose launches encode TMA
// tensor maps through the driver; the wiring tests below plan for sm_90 (prefill_sm80 passes),
// whose argument checks need none.
TEST(Cascade, PassesArePagedPrefillOfTheArch) {
  const CascadePlans hopper = plan_cascade(llama(), "sm_90a");
  EXPECT_EQ(hopper.prefix.family, "prefill_sm90");
  EXPECT_EQ(hopper.suffix.family, "prefill_sm90");
  EXPECT_TRUE(hopper.prefix.paged && hopper.suffix.paged);
  EXPECT_EQ(plan_cascade(llama(), "sm_90").suffix.family, "prefill_sm80");
}

TEST(Cascade, GoodCallWiresThePasses) {
  const CascadePlans plans = plan_cascade(llama(), "sm_90");
  const CascadeArgs a = good_cascade();
  const CascadeLaunch l = prepare_cascade(plans, a);
  EXPECT_EQ(l.prefix.params.batch, 1);
  EXPECT_EQ(l.prefix.params.block_table, a.block_table);
  EXPECT_EQ(l.prefix.params.seqused_k, a.prefix_kv_lens);
  EXPECT_EQ(l.prefix.params.cu_seqlens_q, a.cu_prefix_query_lens);
  EXPECT_EQ(l.prefix.params.sinks, nullptr);
  EXPECT_EQ(l.prefix.grid.x, 1u);  // 40 rows in one 128-row block
  EXPECT_EQ(l.prefix.grid.z, 1u);
  EXPECT_EQ(l.suffix.params.batch, 8);
  EXPECT_EQ(l.suffix.params.block_table, a.block_table + 16);  // 256 / 16 shared pages
  EXPECT_EQ(l.suffix.params.block_table_stride, 64);
  EXPECT_EQ(l.suffix.params.seqused_k, a.suffix_kv_lens);
  EXPECT_EQ(l.suffix.params.lse_head_stride, 40);  // [Hq, T]
  EXPECT_EQ(l.merge.params.prefix, l.prefix.params.o);
  EXPECT_EQ(l.merge.params.suffix_lse, l.suffix.params.lse);
  EXPECT_EQ(l.merge.params.out, a.output);
  EXPECT_EQ(l.merge.params.lse_base2, 0);
  EXPECT_EQ(l.merge.params.prefix_lse_head_stride, 40);
  EXPECT_EQ(cascade_workspace_bytes(plans, 40), 2 * size_t(40 * 32 * 128 * 2) + 2 * size_t(5120 + 0));
}

TEST(Cascade, BadCallsNameTheProblem) {
  const CascadePlans plans = plan_cascade(llama(), "sm_90");
  auto bad = [&](void (*edit)(CascadeArgs&), const std::string& what) {
    CascadeArgs a = good_cascade();
    edit(a);
    expect_bad([&] { prepare_cascade(plans, a); }, what);
  };
  bad([](CascadeArgs& a) { a.common_prefix_len = 0; }, "cascade: common_prefix_len must be > 0");
  bad([](CascadeArgs& a) { a.common_prefix_len = 250; }, "common_prefix_len 250 is not a multiple of page_size 16");
  bad([](CascadeArgs& a) { a.max_blocks_per_seq = 16; }, "max_blocks_per_seq 16 leaves no block-table columns after the 16 shared pages");
  bad([](CascadeArgs& a) { a.max_kv_len = 256; }, "max_kv_len 256 must exceed common_prefix_len 256");
  bad([](CascadeArgs& a) { a.suffix_kv_lens = nullptr; }, "cascade: suffix_kv_lens is null");
  bad([](CascadeArgs& a) { a.workspace_bytes = 1000; }, "the workspace must hold 665600 bytes for 40 tokens, got 1000");
  bad([](CascadeArgs& a) { a.workspace = fake(0x1000008); }, "workspace must be 16-byte aligned");
  bad([](CascadeArgs& a) { a.block_table = nullptr; }, "cascade: prefix pass: attention: a paged call needs block_table");
  bad([](CascadeArgs& a) { a.page_size = 8; a.common_prefix_len = 256; }, "page_size must be a positive multiple of 16, got 8");
  bad([](CascadeArgs& a) { a.sinks = fake<const float>(0x50000); }, "cascade: suffix pass: attention: sinks given but the spec has no sinks");
  bad([](CascadeArgs& a) { a.output = fake(0x20008); }, "cascade: merge: output must be 16-byte aligned");
  static const int cu[9] = {0, 5, 10, 15, 20, 25, 30, 35, 40};
  static const int short_suffix[8] = {5, 5, 5, 5, 4, 5, 5, 5};
  static int table[8 * 64];
  for (int i = 0; i < 8 * 64; ++i) table[i] = i % 1000;
  static CascadeHostMetadata h{cu, short_suffix, table};
  bad([](CascadeArgs& a) { a.host = &h; }, "request 4 has 5 query tokens but 4 suffix KV tokens");
  static const int cu_short[9] = {0, 5, 10, 15, 20, 25, 30, 35, 39};
  static CascadeHostMetadata h2{cu_short, short_suffix, table};
  bad([](CascadeArgs& a) { a.host = &h2; }, "cu_query_lens ends at 39, but num_tokens is 40");
  static const int suffix_ok[8] = {5, 5, 5, 5, 5, 5, 5, 5};
  static int far_table[8 * 64];
  for (int i = 0; i < 8 * 64; ++i) far_table[i] = i % 1000;
  far_table[3] = 5000;  // a shared page past the cache
  static CascadeHostMetadata h3{cu, suffix_ok, far_table};
  bad([](CascadeArgs& a) { a.host = &h3; }, "prefix pass: attention: block_table[0][3] = 5000 points past the cache of 1000 pages");
  static CascadeHostMetadata h4{cu, suffix_ok, table};
  CascadeArgs a = good_cascade();
  a.host = &h4;
  EXPECT_NO_THROW(prepare_cascade(plans, a));
}

}  // namespace
}  // namespace attnc
