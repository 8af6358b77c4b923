// prefill_sm80 and prefill_sm90 (every default-tile case on both) on the GPU against the float64
// reference: fresh random inputs every run, poisoned outputs, ragged batches (q = 1 included, kv
// longer than q, kv shorter than q so whole rows are masked), causal and not, 1/4/7 q heads per kv
// head, head dims 64/128/256, bf16 and fp16, sliding windows, softcap, LSE in both layouts and
// bases, several configs of each family; paged prefill (`paged_`) over page sizes below, equal to,
// above and not dividing block_n, every cache layout and page-table form, on both families and on
// prefill_sm90 again with the cp.async gather (`sm90g_`).
// Skips without a GPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <ostream>
#include <map>
#include <memory>

#include "generator/emit/emit.h"
#include "runtime/driver/cuda_driver.h"
#include "runtime/driver/device.h"
#include "runtime/driver/module.h"
#include "runtime/compiler/nvrtc_compiler.h"
#include "check/attention_check.h"

namespace attnc {
namespace {

struct Case {
  std::string name;
  Spec spec;
  std::string config_json;  // overrides of the default config
  std::vector<int> lq, lk;
  KernelKind kind = KernelKind::prefill;
  AttentionCase paging{};  // prefill_paged: layout, page-table form, page size
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

Spec make_spec(DType t, int d, int hq, int hkv, MaskSpec mask) {
  Spec s;
  s.dtype = t;
  s.head_dim = s.head_dim_v = d;
  s.num_q_heads = hq;
  s.num_kv_heads = hkv;
  s.mask = mask;
  s.lse = {LseLayout::token_major, LseBase::e};
  return s;
}

const MaskSpec kCausal{MaskKind::causal, -1, -1};
const MaskSpec kNoMask{MaskKind::none, -1, -1};
const std::vector<int> kRaggedQ{1, 17, 130, 333, 800};
const std::vector<int> kRaggedK{1, 40, 130, 700, 800};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (int d : {64, 128, 256})
    for (int g : {1, 4, 7})
      for (bool causal : {true, false}) {
        Case c{"bf16_d" + std::to_string(d) + "_g" + std::to_string(g) + (causal ? "_causal" : "_nomask"),
               make_spec(DType::bf16, d, 2 * g, 2, causal ? kCausal : kNoMask), "", kRaggedQ, kRaggedK};
        out.push_back(c);
      }
  Case fp16{"fp16_d128_g4_causal", make_spec(DType::fp16, 128, 8, 2, kCausal), "", kRaggedQ, kRaggedK};
  out.push_back(fp16);
  // kv shorter than q: bottom-right causal masks the first rows entirely -> zeros, LSE -inf.
  out.push_back({"bf16_d128_causal_kv_shorter", make_spec(DType::bf16, 128, 4, 4, kCausal), "", {300, 64}, {100, 64}});
  out.push_back({"bf16_d128_window_64_0", make_spec(DType::bf16, 128, 8, 2, {MaskKind::sliding_window, 64, 0}), "",
                 kRaggedQ, kRaggedK});
  out.push_back({"bf16_d64_encoder_window_31_31", make_spec(DType::bf16, 64, 4, 4, {MaskKind::sliding_window, 31, 31}),
                 "", {200, 77}, {200, 77}});
  Case gemma{"bf16_d256_softcap50_window", make_spec(DType::bf16, 256, 4, 2, {MaskKind::sliding_window, 255, 0}), "",
             kRaggedQ, kRaggedK};
  gemma.spec.softcap = 50.f;
  out.push_back(gemma);
  Case lse_hm{"bf16_d128_lse_head_major_e", make_spec(DType::bf16, 128, 8, 2, kCausal), "", kRaggedQ, kRaggedK};
  lse_hm.spec.lse = {LseLayout::head_major, LseBase::e};
  out.push_back(lse_hm);
  Case lse2{"bf16_d128_lse_token_major_2", make_spec(DType::bf16, 128, 8, 2, kNoMask), "", kRaggedQ, kRaggedK};
  lse2.spec.lse = {LseLayout::token_major, LseBase::two};
  out.push_back(lse2);
  Case nolse{"bf16_d128_no_lse", make_spec(DType::bf16, 128, 8, 2, kCausal), "", kRaggedQ, kRaggedK};
  nolse.spec.lse = {LseLayout::none, LseBase::e};
  out.push_back(nolse);
  out.push_back({"bf16_d128_stages3", make_spec(DType::bf16, 128, 8, 2, kCausal), R"({"stages":3})", kRaggedQ, kRaggedK});
  out.push_back({"bf16_d128_m64w4n32", make_spec(DType::bf16, 128, 8, 2, kCausal),
                 R"({"block_m":64,"warps":4,"block_n":32})", kRaggedQ, kRaggedK});
  out.push_back({"bf16_d64_m64w4n64s4", make_spec(DType::bf16, 64, 8, 2, kNoMask),
                 R"({"block_m":64,"warps":4,"block_n":64,"stages":4})", kRaggedQ, kRaggedK});
  out.push_back({"bf16_d128_long_4k", make_spec(DType::bf16, 128, 4, 1, kCausal), "", {2048}, {4096}});
  // Paged (chunked prefill: kv = cached context + the new tokens). prefill_sm90's TMA boxes are
  // gcd(page_size, block_n) rows: 16 (eight per d128 tile), 64, one whole 128 tile, half a 256
  // page, and 48 (16-row boxes, pages straddling tiles); d256 tiles are 80 keys.
  struct Paging {
    int page_size;
    KvCacheLayout layout;
    PageTableForm form;
  };
  const Paging pagings[] = {{16, KvCacheLayout::vllm, PageTableForm::seqused_k},
                            {64, KvCacheLayout::fork_hnd, PageTableForm::cu_seqlens_k},
                            {128, KvCacheLayout::flashinfer_nhd, PageTableForm::flashinfer},
                            {256, KvCacheLayout::flashinfer_hnd, PageTableForm::seqused_k},
                            {48, KvCacheLayout::vllm, PageTableForm::flashinfer}};
  int i = 0;
  for (const Paging& pg : pagings)
    for (int d : {128, 64, 256}) {
      if (d != 128 && pg.page_size != 16 && pg.page_size != 48) continue;
      const bool causal = i % 2 == 0;
      Case c{"paged_bf16_d" + std::to_string(d) + "_bs" + std::to_string(pg.page_size) + "_" + to_string(pg.layout) +
                 "_" + to_string(pg.form) + (causal ? "_causal" : "_nomask"),
             make_spec(DType::bf16, d, 8, 2, causal ? kCausal : kNoMask), "", {1, 17, 130, 333, 800},
             {700, 17, 1500, 333, 1000}};
      c.kind = KernelKind::prefill_paged;
      c.paging.page_size = pg.page_size;
      c.paging.layout = pg.layout;
      c.paging.page_table = pg.form;
      c.paging.num_blocks = 1024;
      out.push_back(c);
      ++i;
    }
  // The cases above are prefill_sm80's (its default tiles, or the knobs they name); every one with
  // the default tiles again on prefill_sm90, then prefill_sm90's own knobs.
  const size_t n = out.size();
  for (size_t i = 0; i < n; ++i) {
    const bool default_tiles = out[i].config_json.empty();
    out[i].config_json = default_tiles ? R"({"family":"prefill_sm80"})"
                                       : R"({"family":"prefill_sm80",)" + out[i].config_json.substr(1);
    if (default_tiles) {
      Case c = out[i];
      c.name = "sm90_" + c.name;
      // paged: TMA boxes here (the default gathers at page 16), and the cp.async gather (`sm90g_`)
      c.config_json = c.kind == KernelKind::prefill_paged ? R"({"family":"prefill_sm90","paged_gather":false})"
                                                          : R"({"family":"prefill_sm90"})";
      out.push_back(c);
      if (c.kind == KernelKind::prefill_paged) {
        c.name = "sm90g_" + out[i].name;
        c.config_json = R"({"family":"prefill_sm90","paged_gather":true})";
        out.push_back(c);
      }
    }
  }
  const Spec d128 = make_spec(DType::bf16, 128, 8, 2, kCausal);
  out.push_back({"sm90_bf16_d128_n96s3", d128, R"({"family":"prefill_sm90","block_n":96,"stages":3})", kRaggedQ,
                 kRaggedK});
  out.push_back({"sm90_bf16_d128_no_pingpong", d128, R"({"family":"prefill_sm90","pingpong":false})", kRaggedQ,
                 kRaggedK});
  out.push_back({"sm90_bf16_d128_m192w16n64", d128, R"({"family":"prefill_sm90","block_m":192,"warps":16,"block_n":64})",
                 kRaggedQ, kRaggedK});
  out.push_back({"sm90_bf16_d64_nomask_m128w12n176", make_spec(DType::bf16, 64, 8, 2, kNoMask),
                 R"({"family":"prefill_sm90","block_m":128,"warps":12,"block_n":176})", kRaggedQ, kRaggedK});
  // Persistent blocks with several items each (4 requests x 8 heads x 20 q tiles of 128 = 640 items
  // on 132 SMs), so the K/V rings and the Q barriers run on across items; the requests shorter than
  // the longest leave items with no rows, and the one with fewer keys than queries (causal) items
  // with no key tiles.
  const std::vector<int> long_q{2500, 1, 900, 700}, long_k{2500, 40, 1300, 300};
  out.push_back({"sm90_bf16_d128_persistent_causal", d128, R"({"family":"prefill_sm90","persistent":true})", long_q,
                 long_k});
  out.push_back({"sm90_fp16_d64_persistent_nomask_m192", make_spec(DType::fp16, 64, 8, 2, kNoMask),
                 R"({"family":"prefill_sm90","block_m":192,"warps":16,"persistent":true})", long_q, long_k});
  out.push_back({"sm90_bf16_d128_persistent_window_no_pingpong", make_spec(DType::bf16, 128, 8, 2, {MaskKind::sliding_window, 200, 0}),
                 R"({"family":"prefill_sm90","persistent":true,"pingpong":false,"block_n":64,"stages":3})", long_q, long_k});
  return out;
}

class GpuPrefill : public ::testing::TestWithParam<Case> {
 protected:
  static void SetUpTestSuite() {
    if (Device::count() > 0) {
      device_ = std::make_unique<Device>(0);
      device_->make_current();
    }
  }
  static void TearDownTestSuite() { device_.reset(); }
  static std::unique_ptr<Device> device_;
};
std::unique_ptr<Device> GpuPrefill::device_;

TEST_P(GpuPrefill, MatchesFloat64Reference) {
  if (!device_) GTEST_SKIP() << "no GPU: " << Driver::get().error();
  const Case& c = GetParam();
  const Config config = config_for(c.spec, c.kind, device_->arch(), c.config_json);
  KernelPlan plan;
  try {
    plan = plan_kernel(c.spec, c.kind, config, device_->arch());
  } catch (const NotSupportedYet& e) {
    GTEST_SKIP() << e.what();  // prefill_sm90 off sm_90a
  }
  const KernelSource src = emit_kernel(plan);
  const CompiledKernel compiled = compile_kernel(src);
  EXPECT_EQ(compiled.report.spill_stores, 0) << src.entry;
  Module module(compiled.cubin);
  const Kernel kernel = module.kernel(src.entry, plan.smem_bytes);

  for (int run = 0; run < 2; ++run) {  // two fresh inputs: a moving error would show a race
    AttentionCase ac = c.paging;
    ac.seqlens_q = c.lq;
    ac.seqlens_k = c.lk;
    const AttentionReport rep = check_attention(plan, kernel, nullptr, ac);
    std::printf("RESULT %-50s %-50s %s\n", c.name.c_str(), src.entry.c_str(), rep.summary().c_str());
    EXPECT_TRUE(rep.passed) << c.name << ": " << rep.summary();
    EXPECT_LT(rep.rel_l2_err, 1e-2) << c.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Grid, GpuPrefill, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace attnc
