// attnc run: one spec and shape on the GPU against the float64 reference; prints the error and
// the time. Runs the spec's prefill kernel, its paged prefill or its decode kernel (--kind).
// Exit 1 when the check fails.
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "generator/generate.h"
#include "generator/spec/spec_parse.h"
#include "check/attention_check.h"
#include "runtime/launch/attention_args.h"
#include "runtime/driver/cuda_driver.h"
#include "runtime/driver/device.h"
#include "runtime/compiler/kernel_builder.h"
#include "runtime/driver/module.h"
#include "attnc/params/split_combine_shape.h"
#include "tools/cli/cli_common.h"

namespace attnc::cli {
namespace {

struct RunOptions {
  std::string spec, kind = "prefill", seqlens, seqlens_k, config, db, layout, page_table = "seqused_k";
  int reps = 20, page_size = 0, splits = -1, num_blocks = 32768;
  bool check = true, json = false;
  unsigned long long seed = 0;
};

std::vector<int> parse_lengths(const std::string& text, const char* flag) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      const int v = std::stoi(item, &used);
      if (used != item.size() || v < 0) throw std::invalid_argument(item);
      out.push_back(v);
    } catch (const std::exception&) {
      throw Failed(std::string(flag) + ": '" + item + "' is not a length; expected non-negative integers, e.g. 4096,1024");
    }
  }
  if (out.empty()) throw Failed(std::string(flag) + ": expected at least one length");
  return out;
}

KernelKind parse_kind(const std::string& k) {
  for (KernelKind kind : {KernelKind::prefill, KernelKind::prefill_paged, KernelKind::decode})
    if (k == to_string(kind)) return kind;
  throw Failed("--kind: '" + k + "' is not a kernel kind; allowed: prefill, prefill_paged, decode");
}

// The case the options describe, checked without a GPU so that a bad call reads the same anywhere.
AttentionCase case_from(const RunOptions& o, const Spec& s, KernelKind kind) {
  AttentionCase c;
  const bool decode = kind == KernelKind::decode, paged = kind != KernelKind::prefill;
  if (!o.seqlens.empty()) c.seqlens_q = parse_lengths(o.seqlens, "--seqlens");
  if (!o.seqlens_k.empty()) c.seqlens_k = parse_lengths(o.seqlens_k, "--seqlens-k");
  if (!decode && c.seqlens_q.empty()) throw Failed("--seqlens is required for --kind " + o.kind);
  if (decode && c.seqlens_k.empty())
    throw Failed("--kind decode needs --seqlens-k (the KV length of each request, new tokens included)");
  if (!c.seqlens_q.empty() && !c.seqlens_k.empty() && c.seqlens_k.size() != c.seqlens_q.size())
    throw Failed("--seqlens-k must list as many lengths as --seqlens");
  if (!paged && (o.page_size || !o.layout.empty() || o.page_table != "seqused_k"))
    throw Failed("--page-size, --layout and --page-table need a paged kind (--kind prefill_paged or decode)");
  c.page_size = o.page_size ? o.page_size : s.kv_cache.page_size;
  if (c.page_size < 16 || c.page_size % 16)
    throw Failed("--page-size must be a positive multiple of 16, got " + std::to_string(c.page_size));
  try {
    c.layout = !o.layout.empty() ? parse_kv_cache_layout(o.layout)
               : s.kv_cache.layout == KvLayout::HND ? KvCacheLayout::fork_hnd : KvCacheLayout::vllm;
  } catch (const std::invalid_argument& e) {
    throw Failed(std::string("--layout: ") + e.what());
  }
  try {
    c.page_table = parse_page_table_form(o.page_table);
  } catch (const std::invalid_argument& e) {
    throw Failed(std::string("--page-table: ") + e.what());
  }
  if (o.num_blocks < 1) throw Failed("--num-blocks must be >= 1");
  c.num_blocks = o.num_blocks;
  c.num_splits = o.splits >= 0 ? o.splits : decode ? 0 : 1;
  if (o.splits < -1 || c.num_splits > kMaxSplits) throw Failed("--splits must be in 0.." + std::to_string(kMaxSplits));
  if (!decode && c.num_splits != 1) throw Failed("--splits needs --kind decode (prefill kernels do not split KV)");
  return c;
}

void run_run(const RunOptions& o) {
  const Spec s = load_spec(o.spec);
  const KernelKind kind = parse_kind(o.kind);
  // Arguments first, so a bad call is reported the same with or without a GPU.
  AttentionCase c = case_from(o, s, kind);
  if (Device::count() == 0) throw Failed("attnc run needs a GPU: " + Driver::get().error());
  Device dev(0);
  dev.make_current();
  const auto kinds = kernels_of(s);
  if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end())
    throw Failed(o.spec + ": the spec has no " + o.kind + " kernel (see its kernels: list)");
  const SpecKernel chosen = generate_kernel(s, kind, dev.arch(), o.config);
  if (!chosen.source) throw Failed(o.spec + ": " + o.kind + ": " + chosen.skipped);
  const KernelPlan& plan = *chosen.plan;

  KernelBuilder builder(resolve_db(o.db), CompileOptions{dev.arch()});
  const BuiltKernel built = builder.build(*chosen.source);
  Module module(built.record.cubin);
  Kernel kernel = module.kernel(built.record.entry);
  kernel.reserve_dynamic_smem(plan.smem_bytes);
  std::optional<Kernel> combine;
  if (const char* suffix = companion_suffix(plan)) combine = module.kernel(built.record.entry + suffix);

  c.seed = o.seed;
  c.check = o.check;
  c.timing_reps = o.reps;
  c.num_sms = dev.sm_count();
  const AttentionReport rep = check_attention(plan, kernel, combine ? &*combine : nullptr, c);

  const bool paged = kind != KernelKind::prefill;
  if (o.json) {
    nlohmann::ordered_json j = {{"spec", s.name}, {"kind", o.kind}, {"entry", built.record.entry},
                                {"origin", to_string(built.origin)}, {"device", dev.name()},
                                {"passed", rep.passed}, {"max_abs_err", rep.max_abs_err},
                                {"rel_l2_err", rep.rel_l2_err}, {"lse_max_abs_err", rep.lse_max_abs_err},
                                {"bad_elements", rep.bad_elements}, {"stray_writes", rep.stray_writes},
                                {"num_splits", rep.num_splits}, {"time_ms", rep.time_ms}, {"tflops", rep.tflops},
                                {"seed", rep.seed}};
    if (paged) {
      j["layout"] = to_string(c.layout);
      j["page_table"] = to_string(c.page_table);
      j["page_size"] = c.page_size;
    }
    print_json(j);
  } else {
    std::printf("spec    %s (%s)\nkernel  %s (%s)\ndevice  %s\n", s.name.c_str(), o.spec.c_str(),
                built.record.entry.c_str(), to_string(built.origin), dev.name().c_str());
    std::printf("seqlens %s%s%s\n", o.seqlens.empty() ? "1 per request" : o.seqlens.c_str(),
                o.seqlens_k.empty() ? "" : " / kv ", o.seqlens_k.c_str());
    if (paged)
      std::printf("paged   %s cache, %s table, page %d, %d pages, splits %d\n", to_string(c.layout),
                  to_string(c.page_table), c.page_size, c.num_blocks, rep.num_splits);
    std::printf("RESULT %s %s %s\n", s.name.c_str(), o.kind.c_str(), rep.summary().c_str());
  }
  if (!rep.passed) throw Failed("the kernel's output does not match the float64 reference");
}

}  // namespace

void add_run(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand("run", "Run a spec's attention kernel on the GPU against the float64 reference");
  cmd->add_option("spec", o->spec, "spec file")->required();
  cmd->add_option("--kind", o->kind, "kernel: prefill (default), prefill_paged or decode");
  cmd->add_option("--seqlens", o->seqlens,
                  "query lengths of the batch, comma-separated (decode: default one token per request)");
  cmd->add_option("--seqlens-k", o->seqlens_k,
                  "KV lengths (prefill: default the query lengths; decode: required, the context of each request)");
  cmd->add_option("--page-size", o->page_size, "tokens per page, a multiple of 16 (default: the spec's)");
  cmd->add_option("--layout", o->layout,
                  "KV cache layout: vllm, fork_hnd, flashinfer_nhd, flashinfer_hnd (default: from the spec)");
  cmd->add_option("--page-table", o->page_table, "page-table form: seqused_k (default), cu_seqlens_k, flashinfer");
  cmd->add_option("--num-blocks", o->num_blocks, "pages in the cache (default 32768)");
  cmd->add_option("--splits", o->splits, "decode split-KV parts: 0 heuristic (default), 1 off, or N");
  cmd->add_option("--config", o->config, "override fields of the default config, as JSON");
  cmd->add_option("--reps", o->reps, "timed launches after warm-up (0: none)");
  cmd->add_option("--seed", o->seed, "input seed (default: fresh each run)");
  cmd->add_option("--db", o->db, "cache database");
  cmd->add_flag("--check,!--no-check", o->check, "compare against the float64 reference (default: on)");
  cmd->add_flag("--json", o->json, "machine-readable");
  cmd->final_callback([o] { run_run(*o); });
}

}  // namespace attnc::cli
