// int8 attention specs (attention-semantics.md §5.2) are planned on prefill_sm90 (contiguous
// prefill; paged prefill when a config names it), prefill_sm80 (paged prefill's default) and, for
// decode, decode_bw (head dims multiples of 64 up to 192) or decode_split, and prepare_attention
// takes their scales: required exactly where the mode needs them, in the fork's layouts, with the
// int8 tensors' strides in 2-byte units.
#include <gtest/gtest.h>

#include "generator/emit/emit.h"
#include "generator/plan/plan_attention.h"
#include "generator/plan/plan_prefill_sm90.h"
#include "runtime/launch/attention_args.h"

namespace attnc {
namespace {

Spec int8_llama(QuantMode q) {
  Spec s;
  s.dtype = DType::fp16;
  s.num_q_heads = 32;
  s.num_kv_heads = 8;
  s.quant = q;
  s.kv_cache.dtype = KvDType::int8;
  s.kv_cache.layout = KvLayout::HND;
  s.kernels.decode = true;
  return s;
}

KernelPlan plan_for(const Spec& s, KernelKind kind) {
  return plan_kernel(s, kind, default_config(s, kind, "sm_90a"), "sm_90a");
}

AttentionArgs good_args(bool paged) {
  AttentionArgs a;
  a.q = reinterpret_cast<const void*>(0x10000);
  a.k = reinterpret_cast<const void*>(0x20000);
  a.v = reinterpret_cast<const void*>(0x30000);
  a.o = reinterpret_cast<void*>(0x40000);
  a.cu_seqlens_q = reinterpret_cast<const int*>(0x50000);
  a.cu_seqlens_k = reinterpret_cast<const int*>(0x60000);
  a.batch = 2;
  a.max_seqlen_q = 300;
  a.total_q = 400;
  a.q_scale = reinterpret_cast<const float*>(0x70000);
  a.k_token_scale = reinterpret_cast<const float*>(0x80000);
  a.v_channel_scale = reinterpret_cast<const float*>(0x90000);
  if (paged) {  // the fork's (2, nb, Hkv, bs, D) int8 cache, page 16
    a.block_table = reinterpret_cast<const int*>(0xa0000);
    a.block_table_stride = a.max_blocks_per_seq = 64;
    a.page_size = 16;
    a.num_blocks = 1024;
    a.k_row_stride = a.v_row_stride = 128;
    a.k_head_stride = a.v_head_stride = 16 * 128;
    a.k_block_stride = a.v_block_stride = 8 * 16 * 128;
  }
  return a;
}

void expect_bad(const KernelPlan& plan, const AttentionArgs& a, const std::string& what) {
  try {
    prepare_attention(plan, a);
    ADD_FAILURE() << "accepted; expected an error containing: " << what;
  } catch (const BadCall& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(Int8Plan, RunsOnItsFamiliesWithItsModeInTheName) {
  const Spec qkv = int8_llama(QuantMode::int8_qkv), qk = int8_llama(QuantMode::int8_qk);
  EXPECT_EQ(plan_for(qkv, KernelKind::prefill_paged).family, "prefill_sm90");  // s8 wgmma over the pages
  EXPECT_EQ(plan_for(qk, KernelKind::prefill_paged).family, "prefill_sm90");
  EXPECT_EQ(plan_for(qkv, KernelKind::decode).family, "decode_bw");      // int8 in registers (kv_int8_regs.cuh)
  EXPECT_EQ(plan_for(qk, KernelKind::decode).family, "decode_bw");
  EXPECT_EQ(plan_for(qkv, KernelKind::decode).config.block_n, 32);  // (tuned: docs/kernels-int8.md)
  EXPECT_EQ(plan_for(qk, KernelKind::decode).config.block_n, 16);
  EXPECT_EQ(plan_for(qk, KernelKind::prefill_paged).int8, Int8Mode::qk);
  EXPECT_NE(emit_kernel(plan_for(qkv, KernelKind::decode)).entry.find("_i8qkv_"), std::string::npos);
  EXPECT_NE(emit_kernel(plan_for(qk, KernelKind::prefill)).source.find("kInt8 = attnc::Int8Mode::qk;"),
            std::string::npos);
  Spec fp16 = qkv;
  fp16.quant = QuantMode::none;
  fp16.kv_cache.dtype = KvDType::same;
  EXPECT_EQ(emit_kernel(plan_for(fp16, KernelKind::prefill)).source.find("kInt8"), std::string::npos);
  // Head dims decode_bw's int8 path cannot read (16-byte pieces per lane) fall through to decode_split.
  Spec d96 = qk;
  d96.head_dim = d96.head_dim_v = 96;
  EXPECT_EQ(plan_for(d96, KernelKind::decode).family, "decode_split");
  Config bw = default_config(qkv, KernelKind::decode, "sm_90a");
  try {
    plan_kernel(d96, KernelKind::decode, bw, "sm_90a");
    ADD_FAILURE() << "decode_bw planned int8 at d96";
  } catch (const NotSupportedYet& e) {
    EXPECT_NE(std::string(e.what()).find("multiples of 64 up to 192"), std::string::npos) << e.what();
  }
}

TEST(Int8Args, ScalesInTheForksLayoutsAndStridesInTwoByteUnits) {
  Spec paged_spec = int8_llama(QuantMode::int8_qkv);
  paged_spec.tuning.families = {"prefill_sm80"};  // strides only: no tensor maps (they need a driver)
  const KernelPlan paged = plan_for(paged_spec, KernelKind::prefill_paged);
  AttentionArgs a = good_args(true);
  AttentionParams p = prepare_attention(paged, a).params;
  EXPECT_EQ(p.q_row_stride, 32 * 128 / 2);
  EXPECT_EQ(p.k_head_stride, 16 * 128 / 2);
  EXPECT_EQ(p.v_block_stride, 8 * 16 * 128 / 2);
  EXPECT_EQ(p.o_row_stride, 32 * 128);  // the output stays 16-bit
  EXPECT_EQ(p.q_scale_row_stride, 32);  // [total_q, Hq]
  EXPECT_EQ(p.q_scale_head_stride, 1);
  EXPECT_EQ(p.k_token_scale_block_stride, 8 * 16);  // [num_blocks, Hkv, block_size]
  EXPECT_EQ(p.k_token_scale_head_stride, 16);
  EXPECT_EQ(p.k_token_scale_row_stride, 1);
  a.q_scale_row_stride = 1;  // the fork's [Hq, total_q]
  a.q_scale_head_stride = 400;
  p = prepare_attention(paged, a).params;
  EXPECT_EQ(p.q_scale_head_stride, 400);

  Spec qk_spec = int8_llama(QuantMode::int8_qk);
  qk_spec.tuning.families = {"prefill_sm80"};  // strides only: no tensor maps
  const KernelPlan qk = plan_for(qk_spec, KernelKind::prefill);
  AttentionArgs c = good_args(false);
  c.v_channel_scale = nullptr;
  p = prepare_attention(qk, c).params;
  EXPECT_EQ(p.k_token_scale_row_stride, 8);  // contiguous K: [total_k, Hkv]
  EXPECT_EQ(p.k_token_scale_head_stride, 1);
  EXPECT_EQ(p.k_row_stride, 8 * 128 / 2);
  EXPECT_EQ(p.v_row_stride, 8 * 128);  // int8_qk: V is 16-bit
}

// Contiguous int8 prefill is prefill_sm90's on sm_90a in both modes: Q·Kᵀ on s8 wgmma over Q/K
// tiles of D bytes a row (half the 2-byte columns), plus a ring of fp32 key scales; int8_qkv's V
// widened to fp16 in the 16-bit V ring. The rest stays on prefill_sm80 with the reason.
TEST(Int8Plan, ContiguousInt8PrefillIsPrefillSm90) {
  const Spec qk = int8_llama(QuantMode::int8_qk), qkv = int8_llama(QuantMode::int8_qkv);
  for (const Spec& s : {qk, qkv}) {
    const KernelPlan p = plan_for(s, KernelKind::prefill);
    ASSERT_EQ(p.family, "prefill_sm90");
    EXPECT_EQ(p.int8, s.quant == QuantMode::int8_qk ? Int8Mode::qk : Int8Mode::qkv);
    // d128, 2 stages: Q region (the 16-bit output's M x 128) + K (N x 64 pairs) and 16-bit V rings
    // + 2 x N key scales + 9 barriers + 1 KiB alignment, m128n128; int8_qkv the same with its V
    // widened once per call into the workspace (v_prewiden: no raw V ring).
    const bool v8 = s.quant == QuantMode::int8_qkv;
    const int m = 128, n = 128;
    EXPECT_EQ(p.config.short_name(), v8 ? "m128n128w12s2vw" : "m128n128w12s2");
    EXPECT_EQ(p.smem_bytes, 1024 + 2 * (m * 128 + 2 * n * (64 + 128)) + 4 * 2 * n + 8 * 9);
    // Where no workspace is given: the producer widens, m192n64 (each widened V tile serves 192
    // rows), with the raw int8 V ring (2 x N x 128 bytes) and its 4 barriers.
    if (v8) {
      const KernelPlan producer =
          plan_kernel(s, KernelKind::prefill, default_prefill_sm90_config(s, KernelKind::prefill, VWiden::producer),
                      "sm_90a");
      EXPECT_EQ(producer.config.short_name(), "m192n64w16s2");
      EXPECT_EQ(producer.smem_bytes, 1024 + 2 * (192 * 128 + 2 * 64 * (64 + 128)) + 4 * 2 * 64 + 8 * 9 + 2 * 64 * 128 + 8 * 4);
    }
  }
  EXPECT_NE(emit_kernel(plan_for(qk, KernelKind::prefill)).source.find("kInt8 = attnc::Int8Mode::qk;"),
            std::string::npos);
  Spec wide = qkv;  // above d128 narrower key tiles (register pressure, the raw V ring)
  wide.head_dim = wide.head_dim_v = 192;
  EXPECT_EQ(default_config(wide, KernelKind::prefill, "sm_90a").block_n, 96);
  wide.head_dim = wide.head_dim_v = 256;
  EXPECT_EQ(default_config(wide, KernelKind::prefill, "sm_90a").block_n, 64);
  Spec d72 = qk;
  d72.head_dim = d72.head_dim_v = 72;
  EXPECT_NE(prefill_sm90_refusal(d72, KernelKind::prefill, "sm_90a").find("head_dim 72 is not a multiple of 16"),
            std::string::npos);
  EXPECT_EQ(default_config(d72, KernelKind::prefill, "sm_90a").family, "prefill_sm80");
}

// Paged int8 prefill on prefill_sm90 (the int8 K plane by TMA per page, key scales by bulk copy with
// the K boxes, int8_qkv's raw V widened by the producer) is the default on sm_90a (8x prefill_sm80's
// time on the H200, docs/kernels-int8.md); a spec that names only prefill_sm80 keeps it.
TEST(Int8Plan, PagedInt8PrefillOnPrefillSm90) {
  for (QuantMode q : {QuantMode::int8_qk, QuantMode::int8_qkv}) {
    const Spec s = int8_llama(q);
    EXPECT_EQ(prefill_sm90_refusal(s, KernelKind::prefill_paged, "sm_90a"), "");
    const Config c = default_family_config(s, KernelKind::prefill_paged, "sm_90a", "prefill_sm90");
    const KernelPlan paged = plan_kernel(s, KernelKind::prefill_paged, c, "sm_90a");
    const KernelPlan contiguous = plan_kernel(s, KernelKind::prefill, c, "sm_90a");
    EXPECT_EQ(paged.family, "prefill_sm90");
    EXPECT_TRUE(paged.paged);
    EXPECT_EQ(paged.int8, q == QuantMode::int8_qk ? Int8Mode::qk : Int8Mode::qkv);
    EXPECT_EQ(paged.threads, 384);
    EXPECT_EQ(paged.smem_bytes, contiguous.smem_bytes + 8);  // v_tail (int8_qkv's raw barriers after it)
    const KernelSource src = emit_kernel(paged);
    EXPECT_NE(src.entry.find(q == QuantMode::int8_qk ? "_paged_i8qk_" : "_paged_i8qkv_"), std::string::npos) << src.entry;
    EXPECT_NE(src.source.find("kPaged = true;"), std::string::npos);
    EXPECT_EQ(default_config(s, KernelKind::prefill_paged, "sm_90a").family, "prefill_sm90");
    Spec only_sm80 = s;  // the spec's family list still decides
    only_sm80.tuning.families = {"prefill_sm80"};
    EXPECT_EQ(default_config(only_sm80, KernelKind::prefill_paged, "sm_90a").family, "prefill_sm80");
  }
  // Narrower key tiles when paged above d128 (its consumers keep 232 registers beside the paged
  // producer's 32): 80 at d192, 48 at d256.
  Spec wide = int8_llama(QuantMode::int8_qk);
  wide.head_dim = wide.head_dim_v = 192;
  EXPECT_EQ(default_family_config(wide, KernelKind::prefill_paged, "sm_90a", "prefill_sm90").block_n, 80);
  wide.head_dim = wide.head_dim_v = 256;
  EXPECT_EQ(default_family_config(wide, KernelKind::prefill_paged, "sm_90a", "prefill_sm90").block_n, 48);
  // The refusals keep their reasons, paged too.
  Spec d72 = int8_llama(QuantMode::int8_qkv);
  d72.head_dim = d72.head_dim_v = 72;
  EXPECT_NE(prefill_sm90_refusal(d72, KernelKind::prefill_paged, "sm_90a")
                .find("head_dim 72 and head_dim_v 72 must be multiples of 16"),
            std::string::npos);
  EXPECT_EQ(default_config(d72, KernelKind::prefill_paged, "sm_90a").family, "prefill_sm80");
  try {
    plan_kernel(d72, KernelKind::prefill_paged,
                default_family_config(d72, KernelKind::prefill_paged, "sm_90a", "prefill_sm90"), "sm_90a");
    ADD_FAILURE() << "prefill_sm90 planned int8 at d72";
  } catch (const NotSupportedYet& e) {
    EXPECT_NE(std::string(e.what()).find("multiples of 16; it runs on prefill_sm80"), std::string::npos) << e.what();
  }
  Spec persistent = int8_llama(QuantMode::int8_qk);
  Config pc = default_family_config(persistent, KernelKind::prefill_paged, "sm_90a", "prefill_sm90");
  pc.persistent = true;
  EXPECT_THROW(plan_kernel(persistent, KernelKind::prefill_paged, pc, "sm_90a"), BadConfig);
}

TEST(Int8Args, PagedPrefillSm90TakesKeyScalesOnSixteenBytes) {
  const Spec s = int8_llama(QuantMode::int8_qkv);
  const KernelPlan sm90 = plan_kernel(
      s, KernelKind::prefill_paged, default_family_config(s, KernelKind::prefill_paged, "sm_90a", "prefill_sm90"),
      "sm_90a");
  AttentionArgs a = good_args(true);
  a.k_token_scale = reinterpret_cast<const float*>(0x80004);
  expect_bad(sm90, a, "k_token_scale must be 16-byte aligned for paged prefill_sm90");
  // prefill_sm80 reads the scales one by one: 4-byte aligned ones pass.
  Spec sm80 = s;
  sm80.tuning.families = {"prefill_sm80"};
  EXPECT_EQ(prepare_attention(plan_for(sm80, KernelKind::prefill_paged), a).params.k_token_scale, a.k_token_scale);
}

TEST(Int8Args, BadCallsNameTheProblem) {
  const KernelPlan qkv = plan_for(int8_llama(QuantMode::int8_qkv), KernelKind::decode);
  AttentionArgs a = good_args(true);
  a.q_scale = nullptr;
  expect_bad(qkv, a, "attention: q_scale [total_q, Hq] or [Hq, total_q] fp32 is required: the kernel is int8");
  a = good_args(true);
  a.v_channel_scale = nullptr;
  expect_bad(qkv, a, "v_channel_scale [Hkv, Dv] fp32 is required");
  a = good_args(true);
  a.k_token_scale = reinterpret_cast<const float*>(0x80002);
  expect_bad(qkv, a, "k_token_scale must be 4-byte aligned");
  a = good_args(true);
  a.q_scale_row_stride = 1;
  expect_bad(qkv, a, "q_scale strides: give both (row, head) or neither");
  const KernelPlan qk = plan_for(int8_llama(QuantMode::int8_qk), KernelKind::decode);
  expect_bad(qk, good_args(true), "v_channel_scale given but int8_qk keeps V in 16 bits");
  // decode_bw copies int8 rows in 16-byte pieces; decode_split takes 8-byte aligned ones.
  a = good_args(true);
  a.k_row_stride = 136;
  expect_bad(qkv, a, "k strides must be multiples of 16 int8 elements for decode_bw");
  a.k_row_stride = 128;
  a.v_head_stride = 16 * 128 + 8;
  expect_bad(qkv, a, "v strides must be multiples of 16 int8 elements for decode_bw");
  const KernelPlan split = plan_kernel(int8_llama(QuantMode::int8_qkv), KernelKind::decode,
                                       config_for(int8_llama(QuantMode::int8_qkv), KernelKind::decode, "sm_90a",
                                                  R"({"family":"decode_split"})"),
                                       "sm_90a");
  EXPECT_NO_THROW(prepare_attention(split, a));
  Spec fp16 = int8_llama(QuantMode::none);
  fp16.kv_cache.dtype = KvDType::same;
  AttentionArgs plain = good_args(false);
  plain.v_channel_scale = plain.k_token_scale = nullptr;
  const KernelPlan p16 = plan_kernel(fp16, KernelKind::prefill, config_for(fp16, KernelKind::prefill, "sm_90a",
                                                                            R"({"family":"prefill_sm80"})"),
                                     "sm_90a");
  expect_bad(p16, plain, "q_scale/k_token_scale/v_channel_scale given but the spec has no int8 quant");
}

// v_prewiden (contiguous int8_qkv on prefill_sm90): the call needs total_k and a workspace for the
// widened V, and 16-byte pieces of v; the checks come before the tensor maps (no driver needed).
TEST(Int8Args, VPrewidenNeedsItsWorkspace) {
  const Spec s = int8_llama(QuantMode::int8_qkv);
  const KernelPlan plan = plan_kernel(
      s, KernelKind::prefill, default_prefill_sm90_config(s, KernelKind::prefill, VWiden::once_per_call), "sm_90a");
  ASSERT_TRUE(plan.config.v_prewiden);
  EXPECT_STREQ(companion_suffix(plan), "_widen_v");
  AttentionArgs a = good_args(false);
  expect_bad(plan, a, "v_prewiden widens the total_k rows of v and needs total_k");
  a.total_k = 1000;
  expect_bad(plan, a, "v_prewiden widens v into a workspace of 2048000 bytes (total_k x Hkv x head_dim_v x 2), got 0");
  a.workspace = reinterpret_cast<void*>(0xb0000);
  a.workspace_bytes = 2048000 - 2;
  expect_bad(plan, a, "got 2047998");
  a.workspace_bytes = 2048000;
  a.workspace = reinterpret_cast<void*>(0xb0008);
  expect_bad(plan, a, "workspace must be 16-byte aligned");
  a.workspace = reinterpret_cast<void*>(0xb0000);
  a.v_row_stride = 8 * 128 + 8;  // int8 elements: 8 bytes past a 16-byte piece
  expect_bad(plan, a, "v strides must be multiples of 16 int8 elements for v_prewiden (16-byte pieces), got 1032");
  const KernelPlan producer = plan_kernel(
      s, KernelKind::prefill, default_prefill_sm90_config(s, KernelKind::prefill, VWiden::producer), "sm_90a");
  EXPECT_EQ(companion_suffix(producer), nullptr);
}

// Paged v_prewiden: each request's keys gathered into max_seqlen_k rows rounded up to the key tile,
// so the call needs max_seqlen_k, a workspace of batch such requests, and 16-byte pieces of v
// (the page stride too).
TEST(Int8Args, PagedVPrewidenNeedsMaxSeqlenKAndItsWorkspace) {
  const Spec s = int8_llama(QuantMode::int8_qkv);
  const KernelPlan plan =
      plan_kernel(s, KernelKind::prefill_paged,
                  default_prefill_sm90_config(s, KernelKind::prefill_paged, VWiden::once_per_call), "sm_90a");
  ASSERT_TRUE(plan.config.v_prewiden);
  ASSERT_EQ(plan.config.block_n, 128);
  EXPECT_STREQ(companion_suffix(plan), "_widen_v");
  AttentionArgs a = good_args(true);
  expect_bad(plan, a, "paged v_prewiden gathers each request's keys into max_seqlen_k rows of the workspace and "
                      "needs max_seqlen_k");
  a.max_seqlen_k = 1000;  // 1024 rows a request, 2 requests, Hkv 8, Dv 128, 2 bytes
  expect_bad(plan, a, "v_prewiden widens v into a workspace of 4194304 bytes (batch x max_seqlen_k rounded up to "
                      "block_n x Hkv x head_dim_v x 2), got 0");
  a.workspace = reinterpret_cast<void*>(0xb0000);
  a.workspace_bytes = 4194304;
  a.v_block_stride = 8 * 16 * 128 + 8;
  expect_bad(plan, a, "v strides must be multiples of 16 int8 elements for v_prewiden (16-byte pieces), got 16392");
}

}  // namespace
}  // namespace attnc
