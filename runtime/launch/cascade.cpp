#include "runtime/launch/cascade.h"

#include <cstdint>

#include "runtime/launch/arg_checks.h"
#include "runtime/launch/attention_launch.h"
#include "runtime/driver/module.h"

namespace attnc {
namespace {

constexpr size_t kAlign = 256;
size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Workspace pieces: prefix output, suffix output ([T, Hq, Dv] 16-bit), prefix LSE, suffix LSE
// ([Hq, T] fp32), each a multiple of 256 bytes long.
struct Workspace {
  size_t out_bytes, lse_bytes;
  size_t total() const { return 2 * out_bytes + 2 * lse_bytes; }
};
Workspace workspace_layout(const KernelPlan& plan, int num_tokens) {
  const size_t rows = size_t(num_tokens) * plan.spec.num_q_heads;
  return {align_up(rows * plan.head_dim_v * 2), align_up(rows * sizeof(float))};
}

bool windowed(const MaskSpec& m) {
  if (m.kind != MaskKind::sliding_window) return false;
  const bool causal = m.window_left < 0 && m.window_right == 0, none = m.window_left < 0 && m.window_right < 0;
  return !causal && !none;
}

}  // namespace

Spec cascade_pass_spec(const Spec& s, CascadePass pass) {
  const ArgCheck c("cascade");
  c.require(s.alibi == Alibi::none, "ALiBi (", to_string(s.alibi),
            ") is not supported: the prefix pass does not know each query's position in its request");
  c.require(!windowed(s.mask), "sliding window (", s.mask.window_left, ", ", s.mask.window_right,
            ") is not supported: the prefix pass would need each query's window");
  Spec p = s;
  p.kernels = KernelSet{};
  p.kernels.prefill = true;
  p.lse = {LseLayout::head_major, LseBase::e};
  if (pass == CascadePass::prefix) {
    p.mask = {MaskKind::none, -1, -1};  // every query sees the whole shared prefix
    p.sinks = false;                    // the suffix pass adds the sink, once
  }
  return p;
}

CascadePlans plan_cascade(const Spec& s, const std::string& arch) {
  auto attention = [&](CascadePass pass) {
    const Spec p = cascade_pass_spec(s, pass);
    return plan_kernel(p, KernelKind::prefill_paged, default_config(p, KernelKind::prefill_paged, arch), arch);
  };
  return {attention(CascadePass::prefix), attention(CascadePass::suffix),
          plan_kernel(s, KernelKind::merge, default_config(s, KernelKind::merge, arch), arch)};
}

size_t cascade_workspace_bytes(const CascadePlans& plans, int num_tokens) {
  return workspace_layout(plans.suffix, num_tokens).total();
}

CascadeLaunch prepare_cascade(const CascadePlans& plans, const CascadeArgs& a) {
  const ArgCheck c("cascade");
  const int T = a.num_tokens, P = a.common_prefix_len, ps = a.page_size;
  c.require(T >= 1, "num_tokens must be >= 1, got ", T);
  c.require(a.num_reqs >= 1, "num_reqs must be >= 1, got ", a.num_reqs);
  c.require(P > 0, "common_prefix_len must be > 0 (without a shared prefix call the attention kernel directly), got ",
            P);
  c.require(ps > 0 && P % ps == 0, "common_prefix_len ", P, " is not a multiple of page_size ", ps,
            " (the prefix pass reads whole shared pages)");
  const int shared_pages = P / ps;
  c.require(a.max_blocks_per_seq > shared_pages, "max_blocks_per_seq ", a.max_blocks_per_seq,
            " leaves no block-table columns after the ", shared_pages, " shared pages");
  c.require(a.max_kv_len == 0 || a.max_kv_len > P, "max_kv_len ", a.max_kv_len, " must exceed common_prefix_len ", P,
            " (each request's query tokens follow the shared prefix)");
  c.require(a.block_table_stride >= a.max_blocks_per_seq, "block_table_stride ", a.block_table_stride,
            " is smaller than max_blocks_per_seq ", a.max_blocks_per_seq);
  c.pointer("cu_query_lens", a.cu_query_lens, 4);
  c.pointer("cu_prefix_query_lens", a.cu_prefix_query_lens, 4);
  c.pointer("prefix_kv_lens", a.prefix_kv_lens, 4);
  c.pointer("suffix_kv_lens", a.suffix_kv_lens, 4);

  const Workspace ws = workspace_layout(plans.suffix, T);
  c.require(a.workspace != nullptr && a.workspace_bytes >= ws.total(), "the workspace must hold ",
            (long long)ws.total(), " bytes for ", T, " tokens, got ", (long long)a.workspace_bytes);
  c.require(reinterpret_cast<std::uintptr_t>(a.workspace) % 16 == 0, "workspace must be 16-byte aligned (vector access)");
  char* base = static_cast<char*>(a.workspace);
  void* prefix_out = base;
  void* suffix_out = base + ws.out_bytes;
  float* prefix_lse = reinterpret_cast<float*>(base + 2 * ws.out_bytes);
  float* suffix_lse = reinterpret_cast<float*>(base + 2 * ws.out_bytes + ws.lse_bytes);

  if (a.host) {
    const CascadeHostMetadata& h = *a.host;
    c.require(h.cu_query_lens && h.suffix_kv_lens && h.block_table,
              "host metadata needs cu_query_lens, suffix_kv_lens and block_table");
    c.require(h.cu_query_lens[a.num_reqs] == T, "cu_query_lens ends at ", h.cu_query_lens[a.num_reqs],
              ", but num_tokens is ", T);
    for (int b = 0; b < a.num_reqs; ++b) {
      const int q = h.cu_query_lens[b + 1] - h.cu_query_lens[b];
      c.require(h.suffix_kv_lens[b] >= q, "request ", b, " has ", q, " query tokens but ", h.suffix_kv_lens[b],
                " suffix KV tokens: its queries would reach into the shared prefix");
    }
  }

  // Both passes share the query, the cache and the scalars.
  AttentionArgs common;
  common.q = a.query;
  common.k = a.key_cache;
  common.v = a.value_cache;
  common.q_row_stride = a.q_row_stride; common.q_head_stride = a.q_head_stride;
  common.k_row_stride = a.k_row_stride; common.k_head_stride = a.k_head_stride; common.k_block_stride = a.k_block_stride;
  common.v_row_stride = a.v_row_stride; common.v_head_stride = a.v_head_stride; common.v_block_stride = a.v_block_stride;
  common.page_size = ps;
  common.num_blocks = a.num_blocks;
  common.block_table_stride = a.block_table_stride;
  common.total_q = T;
  common.softmax_scale = a.softmax_scale;
  common.softcap = a.softcap;
  common.num_splits = 1;

  // Host mirrors of the prefix pass's own metadata: {0, T} and {P}.
  const int host_cu_prefix[2] = {0, T}, host_prefix_len[1] = {P};
  AttentionHostMetadata host_prefix, host_suffix;
  AttentionArgs pre = common;
  pre.o = prefix_out;
  pre.lse = prefix_lse;
  pre.cu_seqlens_q = a.cu_prefix_query_lens;
  pre.batch = 1;
  pre.max_seqlen_q = T;
  pre.block_table = a.block_table;
  pre.max_blocks_per_seq = shared_pages;
  pre.seqused_k = a.prefix_kv_lens;
  if (a.host) {
    host_prefix.cu_seqlens_q = host_cu_prefix;
    host_prefix.seqused_k = host_prefix_len;
    host_prefix.block_table = a.host->block_table;
    pre.host = &host_prefix;
  }

  AttentionArgs suf = common;
  suf.o = suffix_out;
  suf.lse = suffix_lse;
  suf.cu_seqlens_q = a.cu_query_lens;
  suf.batch = a.num_reqs;
  suf.max_seqlen_q = a.max_query_len;
  suf.block_table = a.block_table ? a.block_table + shared_pages : nullptr;  // the column-offset view
  suf.max_blocks_per_seq = a.max_blocks_per_seq - shared_pages;
  suf.seqused_k = a.suffix_kv_lens;
  suf.sinks = a.sinks;
  if (a.host) {
    host_suffix.cu_seqlens_q = a.host->cu_query_lens;
    host_suffix.seqused_k = a.host->suffix_kv_lens;
    host_suffix.block_table = a.host->block_table + shared_pages;
    suf.host = &host_suffix;
  }

  CascadeLaunch l;
  try {
    l.prefix = prepare_attention(plans.prefix, pre);
  } catch (const BadCall& e) {
    c.fail(std::string("prefix pass: ") + e.what());  // "cascade: prefix pass: attention: ..."
  }
  try {
    l.suffix = prepare_attention(plans.suffix, suf);
  } catch (const BadCall& e) {
    c.fail(std::string("suffix pass: ") + e.what());
  }

  MergeArgs m;
  m.output = a.output;
  m.output_row_stride = a.o_row_stride;
  m.output_head_stride = a.o_head_stride;
  m.prefix_output = prefix_out;
  m.prefix_lse = prefix_lse;
  m.suffix_output = suffix_out;
  m.suffix_lse = suffix_lse;
  m.num_tokens = T;
  m.lse_base = LseBase::e;
  try {
    l.merge = prepare_merge(plans.merge, m);
  } catch (const BadCall& e) {
    c.fail(e.what());  // "cascade: merge: ..."
  }
  return l;
}

void launch_cascade(const CascadeKernels& k, const CascadeLaunch& l, CUstream stream) {
  launch_attention(*k.prefix, nullptr, l.prefix, stream);
  launch_attention(*k.suffix, nullptr, l.suffix, stream);
  launch_merge(*k.merge, l.merge, stream);
}

void cascade_attention(const CascadePlans& plans, const CascadeKernels& k, const CascadeArgs& a, CUstream stream) {
  launch_cascade(k, prepare_cascade(plans, a), stream);
}

}  // namespace attnc
