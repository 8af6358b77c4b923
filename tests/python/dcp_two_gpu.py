"""Decode context parallelism over NCCL (one process per GPU): attnc.dcp.DcpAttention against
single-GPU attnc attention over the whole cache and a float64 reference, for interleave sizes 1 and
16, with and without the merge of the new tokens' pass:
  - two FlashAttention-style layers (bf16 d128 GQA, LSE head-major base e; fp16 d64 MQA with
    softcap, LSE token-major base 2), one new token per request, DcpAttention.decode;
  - DeepSeek's MLA (sm_90a: mla_decode), 16 heads a rank over the 576-wide latent cache, two query
    tokens per request (multi-token prediction, causal between them), DcpAttention.mla_decode
    (q whole at interleave 1, q_nope and q_pe apart at 16);
  - a CUDA graph: one step of each kind (new tokens merged) captured after an eager step, then
    replayed on fresh inputs (other lengths, queries and cache rows written into the captured
    buffers) and checked against float64 and against an eager step.
Fresh random inputs (rank 0 draws the seed), caches poisoned with NaN past every length, outputs
poisoned with NaN. Then (unless --no-bench) a timing of one larger decode step beside one GPU.
    python3 dcp_two_gpu.py [--world N] [--no-bench]    or    python3 dcp_two_gpu.py --simulate N
N ranks on N GPUs (default 2; --world 1 runs the same cases on one GPU over a one-rank group);
--simulate N runs N ranks as threads of one process on GPU 0 (DcpAttention's `collectives`: a
barrier and copies instead of NCCL), every case but the CUDA graphs.
Prints RESULT lines (PASS or FAIL, one per case and rank) and exits 1 on a failure.
"""
import datetime
import math
import os
import socket
import sys
import tempfile
import threading
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

LAYERS = [
    dict(name="bf16_d128_g2", dtype="bf16", d=128, hkv=2, extra="lse: {layout: head_major, base: e}\n", softcap=0.0),
    dict(name="fp16_d64_mqa_softcap_base2", dtype="fp16", d=64, hkv=1, softcap=30.0,
         extra="softcap: 30\nlse: {layout: token_major, base: 2}\n"),
]
H_LOCAL, PAGE = 4, 16
MLA_H_LOCAL, MLA_PAGE, MLA_TOKENS, MLA_SCALE = 16, 64, 2, 1 / math.sqrt(192)  # DeepSeek's scale (nope + rope)
MLA_FP8_SCALE = 0.05  # the fp8 latent cache's k_scale: N(0, 1) rows stored as e4m3 of x / 0.05
CONTEXT_LENS = [1, 5, 17, 300, 1000, 4097, 2500, 33]  # 5 and 1: rank 1 holds nothing at I = 16
GRAPH_LENS = [3, 1, 16, 290, 999, 4000, 2499, 7]      # the replay's: each within the captured bound


def spec(layer, heads):
    return (f"version: 1\nname: dcp-{layer['name']}-{heads}\nhead_dim: {layer['d']}\nnum_q_heads: {heads}\n"
            f"num_kv_heads: {layer['hkv']}\ndtype: {layer['dtype']}\nkv_cache: {{dtype: same, layout: NHD, "
            f"page_size: {PAGE}}}\nmask: causal\nkernels: [decode, merge]\n" + layer["extra"])


def mla_spec(heads, cache="same"):
    return (f"version: 1\nname: dcp-mla-{cache}-{heads}\nnum_q_heads: {heads}\ndtype: bf16\n"
            f"kv_cache: {{dtype: {cache}, layout: NHD, page_size: {MLA_PAGE}}}\nmask: causal\n"
            "lse: {layout: head_major, base: e}\n"
            "mla: {kv_lora_rank: 512, qk_rope_head_dim: 64, qk_nope_head_dim: 128, v_head_dim: 128}\n"
            "kernels: [decode]\n")


def paged(torch, row_lists, dtype, dev, gen, page, total=None, width=None):
    """Paged caches holding each request's rows (one cache per list in row_lists; rows [len, ...])
    on shuffled pages, NaN everywhere else (a read past a length shows). total / width: the
    cache's pages and the table's width when they must match earlier buffers. Returns
    (caches..., block_table)."""
    first = row_lists[0]
    pages = [max(1, math.ceil(r.shape[0] / page)) for r in first]
    total = total or sum(pages) + 3
    width = width or max(pages)
    assert sum(pages) <= total and max(pages) <= width
    perm = torch.randperm(total, generator=gen).tolist()
    shape = (total, page) + tuple(first[0].shape[1:])
    if dtype == torch.float8_e4m3fn:  # NaN is 0x7f
        caches = [torch.full(shape, 0x7F, dtype=torch.uint8, device=dev).view(dtype) for _ in row_lists]
    else:
        caches = [torch.full(shape, float("nan"), dtype=dtype, device=dev) for _ in row_lists]
    table = torch.zeros((len(first), width), dtype=torch.int32)
    at = 0
    for b in range(len(first)):
        for p in range(pages[b]):
            table[b, p] = perm[at]
            for cache, rows in zip(caches, row_lists):
                n = rows[b][p * page:(p + 1) * page].shape[0]
                cache[perm[at], :n] = rows[b][p * page:p * page + n].to(dev, dtype)
            at += 1
    return tuple(caches) + (table.to(dev),)


def shard(torch, D, rows, lens, rank, world, interleave):
    """This rank's rows of every request's first lens[b] rows, by the documented arithmetic."""
    out = []
    for b, n in enumerate(lens):
        local = D.local_seq_lens(n, world, rank, interleave)
        pos = [D.global_position(j, rank, world, interleave) for j in range(local)]
        assert all(D.rank_of(p, world, interleave) == rank and p < n for p in pos)
        out.append(rows[b][torch.tensor(pos, dtype=torch.long)])
    return out


def check(torch, name, got, want, atol, rtol):
    bad = ~torch.isclose(got.double(), want.double(), atol=atol, rtol=rtol)
    err = (got.double() - want.double()).abs().nan_to_num(float("inf")).max().item()
    if bad.any():
        raise AssertionError(f"{name}: {int(bad.sum())} of {bad.numel()} elements off (max abs err {err:.3g})")
    return err


class FlashLayer:
    """A FlashAttention-style layer: K and V caches, one new token per request."""

    def __init__(self, torch, layer, world):
        self.torch, self.layer, self.world = torch, layer, world
        self.name = layer["name"]
        self.dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[layer["dtype"]]
        self.h_local, self.h, self.page = H_LOCAL, H_LOCAL * world, PAGE
        self.base2 = "base: 2" in layer["extra"]
        self.token_major = "token_major" in layer["extra"]
        self.scale = 1 / math.sqrt(layer["d"])

    def spec(self, heads):
        return spec(self.layer, heads)

    def problem(self, gen, dev, lens):
        """The whole problem, the same on every rank: context + one new token per request."""
        t, d, hkv = self.torch, self.layer["d"], self.layer["hkv"]
        return dict(lens=lens, k=[t.randn(n + 1, hkv, d, generator=gen).to(self.dt) for n in lens],
                    v=[t.randn(n + 1, hkv, d, generator=gen).to(self.dt) for n in lens],
                    q=t.randn(len(lens), self.h, d, generator=gen).to(self.dt).to(dev))

    def tokens(self, pb):
        return len(pb["lens"])

    def caches(self, D, pb, rank, interleave, gen, dev, like=None):
        rows = [shard(self.torch, D, pb[x], pb["lens"], rank, self.world, interleave) for x in ("k", "v")]
        return paged(self.torch, rows, self.dt, dev, gen, self.page, *self._like(like))

    def new_caches(self, pb, gen, dev, like=None):
        return paged(self.torch, [[x[-1:] for x in pb["k"]], [x[-1:] for x in pb["v"]]], self.dt, dev, gen,
                     self.page, *self._like(like))

    def whole_caches(self, pb, gen, dev):
        return paged(self.torch, [pb["k"], pb["v"]], self.dt, dev, gen, self.page)

    @staticmethod
    def _like(like):
        return (like[0].shape[0], like[-1].shape[1]) if like else (None, None)

    def extra(self, pb, dev):
        return {}

    def new_pass(self, dcp, pb, q_local, caches, dev):
        """The new tokens' pass (one key each, their own causal pass), this rank's heads of it. On
        the context layer (all N * H_local heads), not the rank's own: with GQA its query head j
        must read the KV head that gathered head rank * H_local + j reads in the context pass."""
        mine = slice(dcp.rank * self.h_local, (dcp.rank + 1) * self.h_local)
        ones = self.torch.ones(len(pb["lens"]), dtype=self.torch.int32, device=dev)
        n_out, n_lse = dcp.context.decode(pb["q"], caches[0], caches[1], caches[2], ones, 1)
        return n_out[:, mine].contiguous(), (n_lse[:, mine].t() if self.token_major else n_lse[mine]).contiguous()

    def step(self, dcp, q_local, caches, lens, max_len, split_q=False, **kw):
        return dcp.decode(q_local, caches[0], caches[1], caches[2], lens, max_len, **kw)

    def whole(self, att, pb, caches, lens_dev, out):
        o, lse = att.decode(pb["q"], caches[0], caches[1], caches[2], lens_dev + 1, max(pb["lens"]) + 1, out=out)
        return o, (lse.t() if self.token_major else lse)

    def reference(self, pb, with_new):
        """float64 over the context (and the new token): out [B, H, D], lse (base e) [B, H]."""
        t = self.torch
        outs, lses = [], []
        for b, n in enumerate(pb["lens"]):
            keys = n + 1 if with_new else n
            g = self.h // self.layer["hkv"]
            kk = pb["k"][b][:keys].double().repeat_interleave(g, dim=1)
            vv = pb["v"][b][:keys].double().repeat_interleave(g, dim=1)
            s = t.einsum("hd,khd->hk", pb["q"][b].cpu().double(), kk) * self.scale
            if self.layer["softcap"]:
                s = self.layer["softcap"] * t.tanh(s / self.layer["softcap"])
            lses.append(t.logsumexp(s, dim=-1))
            outs.append(t.einsum("hk,khd->hd", t.softmax(s, dim=-1), vv))
        return t.stack(outs), t.stack(lses)


class MlaLayer:
    """DeepSeek's MLA: one 576-wide latent cache, V its first 512 columns, MLA_TOKENS query tokens
    per request (causal between them). fp8: the cache holds e4m3 rows with one scale (k_scale)."""

    def __init__(self, torch, world, fp8=False):
        self.torch, self.world, self.fp8 = torch, world, fp8
        self.name = "mla_fp8e4m3_h16_mtp2" if fp8 else "mla_bf16_h16_mtp2"
        self.dt = torch.bfloat16
        self.cache_dt = torch.float8_e4m3fn if fp8 else torch.bfloat16
        self.h_local, self.h, self.page = MLA_H_LOCAL, MLA_H_LOCAL * world, MLA_PAGE
        self.base2, self.token_major, self.scale = False, False, MLA_SCALE

    def spec(self, heads):
        return mla_spec(heads, "fp8_e4m3" if self.fp8 else "same")

    def problem(self, gen, dev, lens):
        t = self.torch
        rows = [t.randn(n + MLA_TOKENS, 576, generator=gen) for n in lens]
        # fp8: float32 rows holding e4m3 values exactly (indexing float8 tensors on the host is not a given).
        rows = [(r / MLA_FP8_SCALE).to(self.cache_dt).float() if self.fp8 else r.to(self.dt) for r in rows]
        return dict(lens=lens, rows=rows,
                    q=t.randn(len(lens) * MLA_TOKENS, self.h, 576, generator=gen).to(self.dt).to(dev))

    def tokens(self, pb):
        return len(pb["lens"]) * MLA_TOKENS

    def caches(self, D, pb, rank, interleave, gen, dev, like=None):
        rows = shard(self.torch, D, pb["rows"], pb["lens"], rank, self.world, interleave)
        return paged(self.torch, [rows], self.cache_dt, dev, gen, self.page, *FlashLayer._like(like))

    def new_caches(self, pb, gen, dev, like=None):
        return paged(self.torch, [[x[-MLA_TOKENS:] for x in pb["rows"]]], self.cache_dt, dev, gen, self.page,
                     *FlashLayer._like(like))

    def whole_caches(self, pb, gen, dev):
        return paged(self.torch, [pb["rows"]], self.cache_dt, dev, gen, self.page)

    def extra(self, pb, dev):
        cu = self.torch.arange(0, self.tokens(pb) + 1, MLA_TOKENS, dtype=self.torch.int32, device=dev)
        more = dict(k_scale=self.torch.tensor([MLA_FP8_SCALE], device=dev)) if self.fp8 else {}
        return dict(cu_seqlens_q=cu, max_seqlen_q=MLA_TOKENS, **more)

    def new_pass(self, dcp, pb, q_local, caches, dev):
        lens = self.torch.full((len(pb["lens"]),), MLA_TOKENS, dtype=self.torch.int32, device=dev)
        return dcp.layer.mla_decode(q_local, caches[0], caches[1], lens, MLA_TOKENS, self.scale,
                                    **self.extra(pb, dev))

    def step(self, dcp, q_local, caches, lens, max_len, split_q=False, **kw):
        if split_q:  # q_nope and q_pe apart
            return dcp.mla_decode(q_local[..., :512].contiguous(), caches[0], caches[1], lens, max_len, self.scale,
                                  q_pe=q_local[..., 512:].contiguous(), **kw)
        return dcp.mla_decode(q_local, caches[0], caches[1], lens, max_len, self.scale, **kw)

    def whole(self, att, pb, caches, lens_dev, out):
        return att.mla_decode(pb["q"], caches[0], caches[1], lens_dev + MLA_TOKENS, max(pb["lens"]) + MLA_TOKENS,
                              self.scale, out=out, **self.extra(pb, out.device))

    def reference(self, pb, with_new):
        """float64: token i of a request sees its context and, with_new, the new rows 0..i."""
        t = self.torch
        outs, lses = [], []
        q = pb["q"].cpu().double()
        for b, n in enumerate(pb["lens"]):
            for i in range(MLA_TOKENS):
                keys = pb["rows"][b][:n + i + 1 if with_new else n].float().double()
                if self.fp8:
                    keys = keys * MLA_FP8_SCALE  # the dequantised rows
                s = q[b * MLA_TOKENS + i] @ keys.t() * self.scale
                lses.append(t.logsumexp(s, dim=-1))
                outs.append(t.softmax(s, dim=-1) @ keys[:, :512])
        return t.stack(outs), t.stack(lses)


def poisoned(torch, kind, tokens, dev):
    out = torch.full((tokens, kind.h_local, 512 if isinstance(kind, MlaLayer) else kind.layer["d"]), float("nan"),
                     dtype=kind.dt, device=dev)
    return out, torch.full((kind.h_local, tokens), float("nan"), dtype=torch.float32, device=dev)


def expect(torch, kind, pb, mine, out, out_lse, with_new, label):
    """out [tokens, H_local, Dv] and out_lse [H_local, tokens] of this rank's heads against float64."""
    ref, ref_lse = kind.reference(pb, with_new)
    to_base = 1 / math.log(2) if kind.base2 else 1.0
    return (check(torch, label + " vs float64", out.cpu(), ref[:, mine], 2e-2, 2e-2),
            check(torch, label + " lse vs float64", out_lse.cpu(), ref_lse[:, mine].t() * to_base, 2e-3, 1e-3))


def run_case(torch, attnc, kind, interleave, rank, world, db, seed, gpu=None, collectives=None):
    from attnc import dcp as D
    dev = torch.device("cuda", rank if gpu is None else gpu)
    gen = torch.Generator().manual_seed(seed)
    pb = kind.problem(gen, dev, CONTEXT_LENS)
    tokens, mine = kind.tokens(pb), slice(rank * kind.h_local, (rank + 1) * kind.h_local)
    lens_dev = torch.tensor(CONTEXT_LENS, dtype=torch.int32, device=dev)
    extra = kind.extra(pb, dev)
    q_local = pb["q"][:, mine].contiguous()
    dcp = D.DcpAttention(kind.spec(kind.h_local), interleave_size=interleave, collectives=collectives, db=db,
                         device=dev.index)
    whole = attnc.Attention(kind.spec(kind.h), db=db, device=dev.index)
    # Workspace for split-KV (the split decode and its combine write the LSEs DCP corrects).
    q_len = extra.get("max_seqlen_q", 1)
    dcp.reserve(len(CONTEXT_LENS), max(CONTEXT_LENS), max_seqlen_q=q_len)
    whole.reserve(batch=len(CONTEXT_LENS), max_seqlen_k=max(CONTEXT_LENS) + q_len, max_seqlen_q=q_len)
    try:
        caches = kind.caches(D, pb, rank, interleave, gen, dev)
        new_out, new_lse = kind.new_pass(dcp, pb, q_local, kind.new_caches(pb, gen, dev), dev)
        out, out_lse = poisoned(torch, kind, tokens, dev)
        split_q = interleave == 16
        out, out_lse = kind.step(dcp, q_local, caches, lens_dev, max(CONTEXT_LENS), split_q, new_out=new_out,
                                 new_lse=new_lse, out=out, out_lse=out_lse, **extra)
        ctx, ctx_lse = kind.step(dcp, q_local, caches, lens_dev, max(CONTEXT_LENS), split_q, **extra)

        # Single-GPU attnc over the whole cache (context + new tokens, causal), this rank's heads.
        w_out, w_lse = kind.whole(whole, pb, kind.whole_caches(pb, gen, dev), lens_dev,
                                  torch.full((tokens, kind.h) + tuple(out.shape[2:]), float("nan"), dtype=kind.dt,
                                             device=dev))
        torch.cuda.synchronize(dev)
        e_out, e_lse = expect(torch, kind, pb, mine, out, out_lse, True, "dcp+merge")
        e_ctx, _ = expect(torch, kind, pb, mine, ctx, ctx_lse, False, "dcp context")
        e_one = check(torch, "dcp+merge vs single-GPU attnc", out.cpu(), w_out[:, mine].cpu(), 2e-2, 2e-2)
        check(torch, "dcp+merge lse vs single-GPU attnc", out_lse.cpu(), w_lse[mine].cpu(), 2e-3, 1e-3)
        return (f"max_abs_err out={e_out:.3g} lse={e_lse:.3g} ctx={e_ctx:.3g} vs_single_gpu={e_one:.3g}"
                + (" (q_nope + q_pe)" if split_q and isinstance(kind, MlaLayer) else ""))
    finally:
        dcp.close()
        whole.close()


def run_graph_case(torch, attnc, kind, interleave, rank, world, db, seed, gpu=None, collectives=None):
    """One step (new tokens merged) captured in a CUDA graph after an eager step on CONTEXT_LENS,
    then replayed on a fresh problem (GRAPH_LENS, new queries and rows) copied into the captured
    buffers; checked against float64 and against the same step run eagerly."""
    from attnc import dcp as D
    dev = torch.device("cuda", rank if gpu is None else gpu)
    gen = torch.Generator().manual_seed(seed + 1)
    # Both problems first: the pages' shuffles draw a rank-dependent amount from gen.
    pa, pb = kind.problem(gen, dev, CONTEXT_LENS), kind.problem(gen, dev, GRAPH_LENS)
    mine = slice(rank * kind.h_local, (rank + 1) * kind.h_local)
    bound = max(CONTEXT_LENS)
    dcp = D.DcpAttention(kind.spec(kind.h_local), interleave_size=interleave, collectives=collectives, db=db,
                         device=dev.index)
    try:
        extra = kind.extra(pa, dev)
        dcp.reserve(len(CONTEXT_LENS), bound, max_seqlen_q=extra.get("max_seqlen_q", 1))
        # The captured buffers, filled with problem A.
        caches = kind.caches(D, pa, rank, interleave, gen, dev)
        new_caches = kind.new_caches(pa, gen, dev)
        q_s = pa["q"][:, mine].contiguous()
        lens_s = torch.tensor(CONTEXT_LENS, dtype=torch.int32, device=dev)
        new_out, new_lse = [x.clone() for x in kind.new_pass(dcp, pa, q_s, new_caches, dev)]
        out_s, lse_s = poisoned(torch, kind, kind.tokens(pa), dev)

        def step():
            kind.step(dcp, q_s, caches, lens_s, bound, new_out=new_out, new_lse=new_lse, out=out_s, out_lse=lse_s,
                      **extra)

        side = torch.cuda.Stream(dev)
        side.wait_stream(torch.cuda.current_stream(dev))
        with torch.cuda.stream(side):
            step()  # eager: kernels loaded, NCCL warm
        torch.cuda.current_stream(dev).wait_stream(side)
        torch.cuda.synchronize(dev)
        expect(torch, kind, pa, mine, out_s, lse_s, True, "eager step before capture")
        graph = torch.cuda.CUDAGraph()
        # thread_local: NCCL's watchdog thread may query its events while this thread captures.
        with torch.cuda.graph(graph, capture_error_mode="thread_local"):
            step()

        # Problem B into the same buffers; the new tokens' pass (outside the graph) into new_out / new_lse.
        for dst, src in zip(caches, kind.caches(D, pb, rank, interleave, gen, dev, like=caches)):
            dst.copy_(src)
        q_s.copy_(pb["q"][:, mine])
        lens_s.copy_(torch.tensor(GRAPH_LENS, dtype=torch.int32))
        for dst, src in zip(new_caches, kind.new_caches(pb, gen, dev, like=new_caches)):
            dst.copy_(src)
        for dst, src in zip((new_out, new_lse), kind.new_pass(dcp, pb, q_s, new_caches, dev)):
            dst.copy_(src)
        out_s.fill_(float("nan"))
        lse_s.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize(dev)
        got, got_lse = out_s.clone(), lse_s.clone()
        e_out, e_lse = expect(torch, kind, pb, mine, got, got_lse, True, "graph replay")
        step()  # the same step eagerly, on the same inputs
        torch.cuda.synchronize(dev)
        same = (got.double() - out_s.double()).abs().max().item()
        same_lse = (got_lse - lse_s).abs().max().item()
        check(torch, "graph replay vs eager step", got.cpu(), out_s.cpu(), 1e-2, 1e-2)
        graph.reset()
        return (f"replay max_abs_err out={e_out:.3g} lse={e_lse:.3g}; replay vs eager out={same:.3g} "
                f"lse={same_lse:.3g}")
    finally:
        dcp.close()


def bench(torch, dist, attnc, rank, world, db):
    """One decode step, B=16 x 32768 context, 32 heads over 8 KV heads (each rank: 32 / world local
    heads) bf16 d128, interleave 16: DCP on `world` GPUs (shard pass + collectives + correction)
    beside single-GPU decode over the whole cache. CUDA events, median of 20 after 3 warm-ups."""
    from attnc import dcp as D
    dev = torch.device("cuda", rank)
    layer = dict(name="bench", dtype="bf16", d=128, hkv=8, extra="lse: {layout: head_major, base: e}\n")
    B, L, I, hl = 16, 32768, 16, 32 // world
    dcp = D.DcpAttention(spec(layer, hl), interleave_size=I, db=db, device=rank)
    local = D.max_local_seq_len(L, world, I)
    pages = math.ceil(local / PAGE)
    kc = torch.randn(B * pages, PAGE, 8, 128, dtype=torch.bfloat16, device=dev)
    vc = torch.randn_like(kc)
    bt = torch.arange(B * pages, dtype=torch.int32, device=dev).view(B, pages)
    lens = torch.full((B,), L, dtype=torch.int32, device=dev)
    q = torch.randn(B, hl, 128, dtype=torch.bfloat16, device=dev)
    dcp.reserve(B, L)

    def timed(fn):
        for _ in range(3):
            fn()
        times = []
        for _ in range(20):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            dist.barrier()
            a.record()
            fn()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) * 1e3)
        return sorted(times)[len(times) // 2]

    t_dcp = timed(lambda: dcp.decode(q, kc, vc, bt, lens, L))
    q_all = torch.randn(B, 32, 128, dtype=torch.bfloat16, device=dev)
    t_shard = timed(lambda: dcp.context.decode(q_all, kc, vc, bt, D.local_seq_lens(lens, world, rank, I), local))
    dcp.close()
    del kc, vc
    t_single = None
    if rank == 0:  # one GPU over the whole cache, 32 heads
        whole = attnc.Attention(spec(layer, 32), db=db, device=rank)
        wpages = math.ceil(L / PAGE)
        wk = torch.randn(B * wpages, PAGE, 8, 128, dtype=torch.bfloat16, device=dev)
        wv = torch.randn_like(wk)
        wbt = torch.arange(B * wpages, dtype=torch.int32, device=dev).view(B, wpages)
        whole.reserve(batch=B, max_seqlen_k=L)
        for _ in range(3):
            whole.decode(q_all, wk, wv, wbt, lens, L)
        times = []
        for _ in range(20):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            whole.decode(q_all, wk, wv, wbt, lens, L)
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) * 1e3)
        t_single = sorted(times)[10]
        whole.close()
    dist.barrier()
    print(f"BENCH rank {rank}/{world} B={B} L={L} Hq=32 Hkv=8 d128 bf16 I={I}: dcp step {t_dcp:.1f} us "
          f"(shard pass alone {t_shard:.1f} us)" + (f"; one GPU, whole cache: {t_single:.1f} us" if t_single else ""),
          flush=True)


def cases(torch, world, graphs=True):
    """(label, runner, kind, interleave): every case the ranks run, in the same order."""
    kinds = [FlashLayer(torch, layer, world) for layer in LAYERS]
    if torch.cuda.get_device_capability() >= (9, 0):  # mla_decode is sm_90a's
        kinds += [MlaLayer(torch, world), MlaLayer(torch, world, fp8=True)]
    out = [(f"dcp_{k.name}_I{i}", run_case, k, i) for k in kinds for i in (1, 16)]
    if graphs:  # the bf16 GQA layer, and bf16 MLA where it runs
        out += [(f"dcp_graph_{k.name}_I16", run_graph_case, k, 16) for k in (kinds[0], kinds[min(2, len(kinds) - 1)])]
    return out


class ThreadRanks:
    """N ranks as N threads of one process on one GPU (the N-rank path checked where one GPU is
    all there is): a collective meets at a barrier, then each rank copies (all-gather) or sums
    (reduce-scatter) the inputs every rank left in its slot. Every thread enqueues on the device's
    one default stream, so the inputs' kernels, enqueued before the barrier, run before the copies."""

    def __init__(self, n):
        self.n, self.slots = n, [None] * n
        self.barrier = threading.Barrier(n, timeout=120)

    def collectives(self, rank):
        return ThreadCollectives(self, rank)


class ThreadCollectives:
    def __init__(self, ranks, rank):
        self.ranks, self.rank, self.world_size = ranks, rank, ranks.n

    def _meet(self, inp, use):
        """use(every rank's input) between two barriers: every read of the inputs is enqueued
        before any rank can free and reuse its input's memory."""
        self.ranks.slots[self.rank] = inp
        self.ranks.barrier.wait()
        use(list(self.ranks.slots))
        self.ranks.barrier.wait()

    def all_gather_into_tensor(self, out, inp):
        def gather(parts):
            for r, x in enumerate(parts):
                out[r].copy_(x)
        self._meet(inp, gather)

    def reduce_scatter_tensor(self, out, inp):
        self._meet(inp, lambda parts: out.copy_(sum(p[self.rank].float() for p in parts)))


def simulate(world):
    """world ranks as threads on GPU 0 (no CUDA graphs: a capture cannot read another thread's
    buffers); returns the number of failed cases."""
    import torch
    import attnc
    torch.cuda.set_device(0)
    ranks = ThreadRanks(world)
    seed = int.from_bytes(os.urandom(4), "little")
    failed = []

    def rank_thread(rank, db):
        torch.cuda.set_device(0)
        for label, runner, kind, interleave in cases(torch, world, graphs=False):
            try:
                what = runner(torch, attnc, kind, interleave, rank, world, db, seed, gpu=0,
                              collectives=ranks.collectives(rank))
                print(f"RESULT sim_{label} rank {rank}/{world} PASS {what} seed={seed}", flush=True)
            except Exception:
                failed.append(label)
                print(f"RESULT sim_{label} rank {rank}/{world} FAIL seed={seed}\n{traceback.format_exc()}", flush=True)
                ranks.barrier.abort()  # the other ranks stop waiting for this one
                return

    with tempfile.TemporaryDirectory() as tmp:
        threads = [threading.Thread(target=rank_thread, args=(r, os.path.join(tmp, f"attnc-{r}.db")))
                   for r in range(world)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    return len(failed)


def rank_main(rank, world, port, do_bench):
    import torch
    import torch.distributed as dist
    import attnc
    torch.cuda.set_device(rank)
    # A bounded wait: a rank stuck in a collective its peer never joins is ended, not left hanging.
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            device_id=torch.device("cuda", rank), timeout=datetime.timedelta(seconds=120))
    failed = 0
    try:
        seed = torch.tensor([int.from_bytes(os.urandom(4), "little") if rank == 0 else 0], device="cuda")
        dist.broadcast(seed, 0)
        seed = int(seed.item())
        with tempfile.TemporaryDirectory() as tmp:
            db = os.path.join(tmp, f"attnc-{rank}.db")
            for label, runner, kind, interleave in cases(torch, world):
                try:
                    what = runner(torch, attnc, kind, interleave, rank, world, db, seed)
                    print(f"RESULT {label} rank {rank}/{world} PASS {what} seed={seed}", flush=True)
                except Exception:  # a failing case is reported; the ranks stay in step for the next
                    failed += 1
                    print(f"RESULT {label} rank {rank}/{world} FAIL seed={seed}\n{traceback.format_exc()}", flush=True)
                    torch.cuda.synchronize()  # a sticky CUDA error ends the rank here
                dist.barrier()
            if do_bench:
                bench(torch, dist, attnc, rank, world, db)
        dist.barrier()
    finally:
        dist.destroy_process_group()
    if failed:
        sys.exit(1)


def main():
    import torch
    import torch.multiprocessing as mp
    if "--simulate" in sys.argv:
        return 1 if simulate(int(sys.argv[sys.argv.index("--simulate") + 1])) else 0
    world = int(sys.argv[sys.argv.index("--world") + 1]) if "--world" in sys.argv else 2
    if torch.cuda.device_count() < world:
        print(f"dcp_two_gpu: needs {world} GPUs, found {torch.cuda.device_count()}")
        return 2
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # the lent machines: no NVLink multicast
    os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    try:
        mp.spawn(rank_main, args=(world, port, "--no-bench" not in sys.argv), nprocs=world, join=True)
    except Exception as e:  # a rank exited non-zero (its failures are printed above)
        print(f"dcp_two_gpu: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
