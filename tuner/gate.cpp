#include "tuner/gate.h"

#include <algorithm>

namespace attnc {

AttentionCase gate_case(KernelKind kind, const ShapeBucket& b, int page_size, KvCacheLayout layout, int num_splits,
                        int num_sms) {
  AttentionCase c;
  if (kind == KernelKind::decode) {
    c.seqlens_k = {4093, 1000, 33, 1};
    const int q = std::min(b.seqlen_q, 8);
    if (q > 1) c.seqlens_q = {q, std::max(1, q - 1), q, 1};  // cu_query_lens form
  } else {
    const int q0 = std::max(1, std::min(b.seqlen_q, 256) - 3);
    c.seqlens_q = {q0, 61, 1};
    const int k0 = std::max(q0, std::min(b.seqlen_k, 512) - 5);
    c.seqlens_k = kind == KernelKind::prefill_paged || b.seqlen_k != b.seqlen_q ? std::vector<int>{k0, 93, 17}
                                                                                : std::vector<int>{};
  }
  c.layout = layout;
  c.page_table = PageTableForm::seqused_k;
  c.page_size = page_size;
  int pages = 0;
  for (int k : c.seqlens_k) pages += (k + page_size - 1) / page_size;
  c.num_blocks = pages + 16;  // the decoy page and spares; the top page is always used
  c.column_offset = 0;
  c.num_splits = kind == KernelKind::decode ? num_splits : 1;
  c.num_sms = num_sms;
  c.timeout_ms = 10000;
  return c;
}

GateResult run_gate(const KernelPlan& plan, const Kernel& kernel, const Kernel* combine, const AttentionCase& c) {
  const AttentionReport rep = check_attention(plan, kernel, combine, c);
  return {rep.passed, rep.summary()};
}

}  // namespace attnc
