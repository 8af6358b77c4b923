// prepare_lse_correct (decode context parallelism's LSE correction) checks every argument before
// any launch and names what is wrong; good arguments give the strides of the chunked output the
// reduce-scatter takes. Also the planner and emitter of its family.
#include <gtest/gtest.h>

#include "generator/emit/emit.h"
#include "generator/spec/spec_parse.h"
#include "runtime/launch/lse_correct_args.h"

namespace attnc {
namespace {

// The context layer of 2 ranks of a 16-head layer: 32 gathered query heads.
Spec context_layer() {
  Spec s;
  s.num_q_heads = 32;
  s.num_kv_heads = 2;
  s.lse.layout = LseLayout::head_major;
  return s;
}

KernelPlan plan_for(const Spec& s) {
  return plan_kernel(s, KernelKind::lse_correct, default_config(s, KernelKind::lse_correct, "sm_90a"), "sm_90a");
}

template <class T = void>
T* fake(unsigned long long address) {  // aligned device addresses: only checked, never dereferenced
  return reinterpret_cast<T*>(address);
}

LseCorrectArgs good() {
  LseCorrectArgs a;
  a.output = fake(0x100000);
  a.partial = fake<const void>(0x200000);
  a.lses = fake<const float>(0x300000);
  a.num_tokens = 100;
  a.world_size = 2;
  a.rank = 1;
  a.heads_per_chunk = 16;
  return a;
}

TEST(LseCorrectPlan, OneKernelPerDtypeFromTheOpsTemplate) {
  const KernelSource k = emit_kernel(plan_for(context_layer()));
  EXPECT_EQ(k.entry, "attnc_lse_correct_bf16");
  EXPECT_NE(k.source.find("#include \"attnc/families/lse_correct.cuh\""), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("attnc::LseCorrect<Traits>::run(params)"), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("__launch_bounds__(128)"), std::string::npos) << k.source;
  Spec fp16 = context_layer();
  fp16.dtype = DType::fp16;
  EXPECT_EQ(emit_kernel(plan_for(fp16)).entry, "attnc_lse_correct_fp16");
  Spec other_heads = context_layer();
  other_heads.num_q_heads = 64;
  EXPECT_EQ(emit_kernel(plan_for(other_heads)).source, emit_kernel(plan_for(context_layer())).source);
}

TEST(LseCorrectPlan, RefusesHeadDimsNotOf16ByteChunksAndForeignFamilies) {
  Spec s = context_layer();
  s.head_dim = s.head_dim_v = 36;
  EXPECT_THROW(plan_for(s), NotSupportedYet);
  Config c = default_config(context_layer(), KernelKind::lse_correct, "sm_90a");
  c.family = "merge_states";
  EXPECT_THROW(plan_kernel(context_layer(), KernelKind::lse_correct, c, "sm_90a"), BadConfig);
}

TEST(LseCorrectArgs, DefaultsAreTheReduceScatterLayout) {
  const LseCorrectLaunch l = prepare_lse_correct(plan_for(context_layer()), good());
  const LseCorrectParams& p = l.params;
  // Output [2 chunks, 100 tokens, 16 heads, 128]; partial [100, 32, 128]; lses [2, 100, 32].
  EXPECT_EQ(p.out_chunk_stride, 100LL * 16 * 128);
  EXPECT_EQ(p.out_row_stride, 16 * 128);
  EXPECT_EQ(p.out_head_stride, 128);
  EXPECT_EQ(p.partial_row_stride, 32 * 128);
  EXPECT_EQ(p.partial_head_stride, 128);
  EXPECT_EQ(p.lses_rank_stride, 100 * 32);
  EXPECT_EQ(p.lses_token_stride, 32);
  EXPECT_EQ(p.lses_head_stride, 1);
  EXPECT_EQ(p.heads_per_chunk, 16);
  EXPECT_EQ(p.world_size, 2);
  EXPECT_EQ(p.rank, 1);
  EXPECT_EQ(p.lse_base2, 0);
  EXPECT_EQ(l.grid.x, (100u * 16 + 127) / 128);
  EXPECT_EQ(l.grid.y, 32u);
  EXPECT_EQ(l.block.x, 128u);
}

TEST(LseCorrectArgs, GivenStridesInPlaceAndEmptyCalls) {
  LseCorrectArgs a = good();
  a.heads_per_chunk = 0;  // one chunk: the plain layout, so in place works
  a.output = const_cast<void*>(a.partial);
  a.lses_rank_stride = 1;  // vLLM's FlashAttention LSE gathered as [H, T, N]... any strides
  a.lses_token_stride = 2;
  a.lses_head_stride = 200;
  a.output_lse = fake<float>(0x400000);
  a.lse_base = LseBase::two;
  const LseCorrectParams p = prepare_lse_correct(plan_for(context_layer()), a).params;
  EXPECT_EQ(p.heads_per_chunk, 32);
  EXPECT_EQ(p.out_row_stride, 32 * 128);
  EXPECT_EQ(p.lses_head_stride, 200);
  EXPECT_EQ(p.out_lse_token_stride, 1);  // [num_heads, num_tokens] by default
  EXPECT_EQ(p.out_lse_head_stride, 100);
  EXPECT_EQ(p.lse_base2, 1);

  a = good();
  a.num_tokens = 0;
  a.output = nullptr;
  EXPECT_TRUE(prepare_lse_correct(plan_for(context_layer()), a).empty);
}

// DeepSeek's MLA context layer of 2 ranks: the absorbed decode's partials are rows of the latent V
// (kv_lora_rank 512), which the correction takes beside head_dim_v (128); nothing else.
TEST(LseCorrectArgs, MlaTakesTheLatentRows) {
  const Spec s = parse_spec("version: 1\nnum_q_heads: 32\nmask: none\nlse: {layout: head_major, base: e}\n"
                            "mla: {kv_lora_rank: 512, qk_rope_head_dim: 64, qk_nope_head_dim: 128, v_head_dim: 128}\n"
                            "kernels: [decode]\n", "mla-dcp2.yaml");
  LseCorrectArgs a = good();
  a.head_size = 512;
  const LseCorrectParams p = prepare_lse_correct(plan_for(s), a).params;
  EXPECT_EQ(p.head_size, 512);
  EXPECT_EQ(p.out_chunk_stride, 100LL * 16 * 512);  // [2 chunks, 100 tokens, 16 heads, 512]
  EXPECT_EQ(p.out_row_stride, 16 * 512);
  EXPECT_EQ(p.partial_row_stride, 32 * 512);
  a.head_size = 576;  // q's width, not an output's
  try {
    prepare_lse_correct(plan_for(s), a);
    ADD_FAILURE() << "head_size 576 accepted";
  } catch (const BadCall& e) {
    EXPECT_NE(std::string(e.what()).find("head_size 576 is neither the spec's head_dim_v 128 nor its kv_lora_rank 512"),
              std::string::npos)
        << e.what();
  }
  a.head_size = 512;  // a layer without MLA
  EXPECT_THROW(prepare_lse_correct(plan_for(context_layer()), a), BadCall);
}

TEST(LseCorrectArgs, BadCallsNameTheProblem) {
  const KernelPlan plan = plan_for(context_layer());
  auto bad = [&](void (*edit)(LseCorrectArgs&), const std::string& what) {
    LseCorrectArgs a = good();
    edit(a);
    try {
      prepare_lse_correct(plan, a);
      ADD_FAILURE() << "accepted; expected an error containing: " << what;
    } catch (const BadCall& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  bad([](LseCorrectArgs& a) { a.world_size = 0; }, "lse_correct: world_size must be >= 1");
  bad([](LseCorrectArgs& a) { a.rank = 2; }, "rank must be in [0, world_size = 2), got 2");
  bad([](LseCorrectArgs& a) { a.rank = -1; }, "rank must be in [0, world_size = 2), got -1");
  bad([](LseCorrectArgs& a) { a.heads_per_chunk = 12; }, "heads_per_chunk 12 must divide num_heads 32");
  bad([](LseCorrectArgs& a) { a.num_heads = 16; }, "num_heads 16 does not match the spec's num_q_heads 32");
  bad([](LseCorrectArgs& a) { a.head_size = 60; }, "head_size must be a multiple of 8");
  bad([](LseCorrectArgs& a) { a.partial = nullptr; }, "partial is null");
  bad([](LseCorrectArgs& a) { a.lses = fake<const float>(0x300002); }, "lses must be 4-byte aligned");
  bad([](LseCorrectArgs& a) { a.output = fake(0x100008); }, "output must be 16-byte aligned");
  bad([](LseCorrectArgs& a) { a.lses_token_stride = 32; }, "lses strides must all be positive");
  bad([](LseCorrectArgs& a) { a.output_chunk_stride = 16 * 128; }, "output overlaps itself");
  bad([](LseCorrectArgs& a) { a.output = const_cast<void*>(a.partial); }, "output aliases partial with a different layout");
  bad([](LseCorrectArgs& a) { a.output_lse_head_stride = 1; }, "output_lse strides given but output_lse is null");
  bad([](LseCorrectArgs& a) {
        a.output_lse = fake<float>(0x400000);
        a.output_lse_token_stride = 1;
        a.output_lse_head_stride = 50;
      },
      "output_lse overlaps itself");
}

}  // namespace
}  // namespace attnc
