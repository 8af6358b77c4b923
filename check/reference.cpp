#include "check/reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "runtime/compiler/thread_pool.h"

namespace attnc {

void reference_attention(const ReferenceOptions& opt, const std::vector<int>& cu_q,
                         const std::vector<int>& cu_k, const std::vector<double>& q,
                         const std::vector<double>& k, const std::vector<double>& v,
                         std::vector<double>& o, std::vector<double>& lse) {
  const int D = opt.head_dim, Dv = opt.head_dim_v, Hq = opt.num_q_heads, Hkv = opt.num_kv_heads;
  const int group = Hq / Hkv;
  const double scale = opt.scale > 0 ? opt.scale : 1.0 / std::sqrt(double(D));
  const double ninf = -std::numeric_limits<double>::infinity();
  const int total_q = cu_q.back();
  const bool all_heads = opt.head_end < 0;
  if (all_heads) {
    o.assign(size_t(total_q) * Hq * Dv, 0.0);
    lse.assign(size_t(total_q) * Hq, ninf);
  }
  const int h_begin = all_heads ? 0 : opt.head_begin, h_end = all_heads ? Hq : opt.head_end;

  std::vector<double> s;
  for (size_t b = 0; b + 1 < cu_q.size(); ++b) {
    const int sq = cu_q[b + 1] - cu_q[b], sk = cu_k[b + 1] - cu_k[b];
    s.resize(std::max(sk, 1));
    for (int h = h_begin; h < h_end; ++h) {
      const int hk = h / group;
      const int i_begin = std::max(0, opt.row_begin), i_end = opt.row_end < 0 ? sq : std::min(sq, opt.row_end);
      for (int i = i_begin; i < i_end; ++i) {
        const long diag = long(i) + sk - sq;  // the key aligned with query i (bottom-right)
        const double* qi = &q[(size_t(cu_q[b] + i) * Hq + h) * D];
        double m = ninf;
        for (int j = 0; j < sk; ++j) {
          bool allowed = true;
          if (opt.causal && j > diag) allowed = false;
          if (opt.window_left >= 0 && j < diag - opt.window_left) allowed = false;
          if (opt.window_right >= 0 && j > diag + opt.window_right) allowed = false;
          if (opt.sparse.enabled && !sparse_visible(opt.sparse, diag, j, h)) allowed = false;
          if (!allowed) { s[j] = ninf; continue; }
          const double* kj = &k[(size_t(cu_k[b] + j) * Hkv + hk) * D];
          double dot = 0;
          for (int d = 0; d < D; ++d) dot += qi[d] * kj[d];
          double x = dot * scale;
          if (opt.softcap > 0) x = opt.softcap * std::tanh(x / opt.softcap);
          if (opt.alibi != Alibi::none) {
            const double dist = std::abs(double(diag - j));
            x -= (*opt.alibi_slopes)[h] * (opt.alibi == Alibi::sqrt ? std::sqrt(dist) : dist);
          }
          s[j] = x;
          m = std::max(m, x);
        }
        const bool sink = opt.sinks != nullptr;
        const double sink_logit = sink ? (*opt.sinks)[h] : ninf;
        double* oi = &o[(size_t(cu_q[b] + i) * Hq + h) * Dv];
        std::fill(oi, oi + Dv, 0.0);
        lse[size_t(cu_q[b] + i) * Hq + h] = ninf;
        if (m == ninf && !sink) continue;  // fully masked: zeros, LSE -inf
        const double mm = std::max(m, sink_logit);
        double l = sink ? std::exp(sink_logit - mm) : 0.0;
        for (int j = 0; j < sk; ++j)
          if (s[j] != ninf) l += std::exp(s[j] - mm);
        for (int j = 0; j < sk; ++j) {
          if (s[j] == ninf) continue;
          const double p = std::exp(s[j] - mm) / l;
          const double* vj = &v[(size_t(cu_k[b] + j) * Hkv + hk) * Dv];
          for (int d = 0; d < Dv; ++d) oi[d] += p * vj[d];
        }
        lse[size_t(cu_q[b] + i) * Hq + h] = mm + std::log(l);
      }
    }
  }
}

void reference_attention_parallel(const ReferenceOptions& opt, const std::vector<int>& cu_q,
                                  const std::vector<int>& cu_k, const std::vector<double>& q,
                                  const std::vector<double>& k, const std::vector<double>& v,
                                  std::vector<double>& o, std::vector<double>& lse, int threads) {
  if (cu_q.size() != cu_k.size() || cu_q.empty())
    throw std::invalid_argument("reference: cu_seqlens_q and cu_seqlens_k must have the same, non-zero size");
  const int Hq = opt.num_q_heads;
  o.assign(size_t(cu_q.back()) * Hq * opt.head_dim_v, 0.0);
  lse.assign(size_t(cu_q.back()) * Hq, -std::numeric_limits<double>::infinity());
  // Pieces of about kWork dot products each, so long requests split into row blocks and short
  // ones stay whole; every piece writes only its own (rows, head) outputs.
  constexpr long long kWork = 1 << 18;
  struct Piece { int b, h, r0, r1; };
  std::vector<Piece> pieces;
  for (size_t b = 0; b + 1 < cu_q.size(); ++b) {
    const int sq = cu_q[b + 1] - cu_q[b], sk = cu_k[b + 1] - cu_k[b];
    const int rows = int(std::max(1LL, std::min<long long>(sq, kWork / std::max(1, sk))));
    for (int h = 0; h < Hq; ++h)
      for (int r = 0; r < sq; r += rows) pieces.push_back({int(b), h, r, std::min(sq, r + rows)});
  }
  ThreadPool pool(threads);
  std::vector<std::future<void>> done;
  done.reserve(pieces.size());
  for (const Piece& p : pieces)
    done.push_back(pool.submit([&, p] {
      ReferenceOptions one = opt;
      one.head_begin = p.h;
      one.head_end = p.h + 1;
      one.row_begin = p.r0;
      one.row_end = p.r1;
      const std::vector<int> cq = {cu_q[p.b], cu_q[p.b + 1]}, ck = {cu_k[p.b], cu_k[p.b + 1]};
      reference_attention(one, cq, ck, q, k, v, o, lse);
    }));
  for (auto& f : done) f.get();
}

}  // namespace attnc
