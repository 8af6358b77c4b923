#!/usr/bin/env python3
# attnc side by side with the anchors, in one process on one GPU: attnc tuned (records from
# `attnc tune`), attnc untuned (the dispatcher's heuristic), torch SDPA (cuDNN and flash backends)
# and FlexAttention, on the shapes of shared/reference/h200-anchors.md. Every figure is a median of
# triton's do_bench (the anchors' method); ratios are to cuDNN measured in this same run. Also the
# JIT figures: cold compile per variant, first call of a new spec, warm load from SQLite. And the
# block-sparse row: Phi-3-small's pattern beside attnc dense causal and FlexAttention with the same
# block mask (docs/kernels-block-sparse.md). And the paged row: the serving varlen batch read
# through a block_table over a page-16 cache (vLLM's prefill is paged), beside the same call on
# contiguous K/V.
# Run through tools/bench (which tunes first); writes bench.json and bench.md to --out.
"""attnc side by side with cuDNN, FlashAttention-2 and FlexAttention on the anchor shapes."""
import argparse
import json
import os
import subprocess
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from triton.testing import do_bench

import attnc

HQ, HKV = 32, 8
PREFILL = [(64, False, 4), (64, True, 4), (128, False, 4), (128, True, 4), (256, False, 2), (256, True, 2)]
PREFILL_S = 4096
DECODE = [(64, 8192), (16, 32768), (128, 2048)]
DECODE_D = 128
# Issue 11's decode layers (one spec each) and rows: (layer, B, L), or (layer, [lens]) for a ragged
# batch. tokens > 1 is speculative decode (causal inside the block); softcap rows have only
# FlexAttention with the softcap (cuDNN and FA2 run the same shape without it: same bytes).
DECODE_LAYERS = {
    "d128": dict(D=128, hq=HQ, hkv=HKV),
    "d128-gqa8": dict(D=128, hq=64, hkv=8, label="GQA 8:1 Hq64"),
    "d128-mha": dict(D=128, hq=32, hkv=32, label="MHA Hq32"),
    "d256-softcap": dict(D=256, hq=16, hkv=8, softcap=50.0, label="softcap50 Hq16 Hkv8"),
    "d128-spec4": dict(D=128, hq=HQ, hkv=HKV, causal=True, tokens=4, label="4-token spec"),
    "d128-fp8e4m3": dict(D=128, hq=HQ, hkv=HKV, kv_dtype="fp8_e4m3"),
}
DECODE_ROWS = [("d128", b, l) for b, l in DECODE] + [
    ("d128", 8, 131072), ("d128", 1, 131072), ("d128-gqa8", 32, 4096), ("d128-mha", 32, 4096),
    ("d256-softcap", 16, 8192), ("d128-spec4", 64, 8192), ("d128", [131072] + [2048] * 63),
    ("d128-fp8e4m3", 64, 8192)]
# MLA absorbed decode (issue 13): (B, L, H, unit); FlashMLA's published H800 figures beside them
# (shared/reference/anchors.md §4.1: 660 TFLOP/s compute-bound, 3000 GB/s memory-bound).
MLA = [(128, 4096, 128, "TFLOP/s"), (64, 8192, 16, "TB/s")]
FLASHMLA_H800 = {"TFLOP/s": 660.0, "TB/s": 3.0}
MLA_CACHES = ["same", "fp8_e4m3"]  # the latent cache: bf16, and fp8 with a per-tensor scale
MLA_SCALE = 0.1352  # DeepSeek-V3's layer scale ((128 + 64) ** -0.5 with its YaRN mscale), not 1/sqrt(576)


# Phi-3-small's local + vertical-stride pattern (specs/phi-3-small.yaml), step 1, all heads on one rank.
SPARSE = dict(block_size=64, local_blocks=16, vert_stride=8)
SPARSE_S, SPARSE_B = 8192, 1


def spec_yaml(name, head_dim, causal, kernel, page_size, tuning=None, hq=HQ, hkv=HKV, mask=None, sinks=False,
              kv_dtype="same", sparse=None, softcap=None):
    return "\n".join(([f"tuning: {tuning}"] if tuning else []) + (
        ["block_sparse: {" + ", ".join(f"{k}: {v}" for k, v in sparse.items()) + "}"] if sparse else []) + [
        "version: 1",
        f"name: {name}",
        f"head_dim: {head_dim}",
        f"num_q_heads: {hq}",
        f"num_kv_heads: {hkv}",
        "dtype: bf16",
        f"kv_cache: {{dtype: {kv_dtype}, layout: NHD, page_size: {page_size}}}",
        f"mask: {mask or ('causal' if causal else 'none')}",
    ] + (["sinks: true"] if sinks else []) + ([f"softcap: {softcap}"] if softcap else []) + [
        f"kernels: [{kernel}]",
        "",
    ])


def mla_spec_yaml(name, heads, cache="same"):
    return "\n".join([
        "version: 1", f"name: {name}", f"num_q_heads: {heads}", "dtype: bf16",
        f"kv_cache: {{dtype: {cache}, layout: NHD, page_size: 64}}", "mask: causal",
        "lse: {layout: head_major, base: e}",
        "mla: {kv_lora_rank: 512, qk_rope_head_dim: 64, qk_nope_head_dim: 128, v_head_dim: 128}",
        "kernels: [decode]", ""])


def serving_specs():
    """Issue 10's serving rows: a varlen batch of mixed lengths, one long request with 64 query
    heads, and gpt-oss's sliding-window layer (window 128 + sinks) where FlexAttention is the anchor."""
    lens = torch.randint(130, 7001, (12,), generator=torch.Generator().manual_seed(10)).tolist()
    return [
        dict(name="bench-serving-varlen-d128", kind="serving", D=128, causal=True, hq=32, hkv=8, lens=lens),
        dict(name="bench-serving-long-d128", kind="serving", D=128, causal=True, hq=64, hkv=8, lens=[16384]),
        dict(name="bench-serving-gptoss-window-sinks", kind="serving", D=64, causal=True, hq=64, hkv=8,
             lens=[8192], window=128, sinks=True),
    ]


def paged_specs():
    """The varlen serving batch again, K/V in a page-16 cache read through a block_table (vLLM's
    flash_attn_varlen_func with block_table)."""
    varlen = serving_specs()[0]
    return [dict(varlen, name="bench-paged-varlen-d128", kind="paged", page_size=16)]


def write_specs(workdir, page_size, only=None, decode_tuning=None):
    """The bench's specs and the one shape each is tuned and measured on."""
    os.makedirs(workdir, exist_ok=True)
    if only == "mla":
        specs = []
        for (b, l, h, unit), cache in [(m, c) for c in MLA_CACHES for m in MLA]:
            name = f"bench-mla-h{h}" + ("" if cache == "same" else "-" + cache.replace("_", ""))
            s = dict(name=name, kind="mla", B=b, L=l, H=h, unit=unit, cache=cache,
                     path=os.path.join(workdir, name + ".yaml"),
                     shapes=[dict(kind="decode", batch=b, seqlen_q=1, seqlen_k=l)])
            with open(s["path"], "w") as f:
                f.write(mla_spec_yaml(name, h, cache))
            s["shapes_path"] = os.path.join(workdir, name + ".shapes.json")
            with open(s["shapes_path"], "w") as f:
                json.dump(s["shapes"], f)
            specs.append(s)
        return specs
    specs = []
    for d, causal, b in PREFILL:
        name = f"bench-prefill-d{d}-{'causal' if causal else 'none'}"
        specs.append(dict(name=name, kind="prefill", D=d, causal=causal, B=b, S=PREFILL_S,
                          shapes=[dict(kind="prefill", batch=b, seqlen_q=PREFILL_S, seqlen_k=PREFILL_S)]))
    for layer, lay in DECODE_LAYERS.items():
        rows = [r[1:] for r in DECODE_ROWS if r[0] == layer]
        t = lay.get("tokens", 1)  # (a ragged row is not a tuning shape: its bucket's record serves it)
        specs.append(dict(name=f"bench-decode-{layer}", kind="decode", causal=lay.get("causal", False),
                          kv_dtype=lay.get("kv_dtype", "same"), rows=rows, **{k: lay[k] for k in ("D", "hq", "hkv")},
                          softcap=lay.get("softcap"), tokens=t, label=lay.get("label"),
                          shapes=[dict(kind="decode", batch=r[0], seqlen_q=t, seqlen_k=r[1])
                                  for r in rows if len(r) == 2]))
    for s in serving_specs() + paged_specs():
        kind = "prefill_paged" if s["kind"] == "paged" else "prefill"
        s["shapes"] = [dict(kind=kind, batch=len(s["lens"]), seqlen_q=max(s["lens"]), seqlen_k=max(s["lens"]))]
        specs.append(s)
    specs.append(dict(name="bench-sparse-phi3-d128", kind="sparse", D=128, causal=True, B=SPARSE_B, S=SPARSE_S,
                      shapes=[dict(kind="prefill", batch=SPARSE_B, seqlen_q=SPARSE_S, seqlen_k=SPARSE_S)]))
    specs = [s for s in specs if not only or s["kind"] == only]
    for s in specs:
        kernel = "decode" if s["kind"] == "decode" else "prefill"
        mask = f"{{kind: sliding_window, left: {s['window'] - 1}, right: 0}}" if s.get("window") else None
        layer = dict(hq=s.get("hq", HQ), hkv=s.get("hkv", HKV), mask=mask, sinks=s.get("sinks", False))
        s["path"] = os.path.join(workdir, s["name"] + ".yaml")
        kernel = "decode" if s["kind"] == "decode" else "prefill"
        with open(s["path"], "w") as f:
            f.write(spec_yaml(s["name"], s["D"], s["causal"], kernel, page_size,
                              decode_tuning if s["kind"] == "decode" else None, kv_dtype=s.get("kv_dtype", "same"),
                              sparse=SPARSE if s["kind"] == "sparse" else None, softcap=s.get("softcap"), **layer))
        if s["kind"] == "sparse":  # the same layer dense (Phi-3-small's every other layer)
            s["dense_path"] = os.path.join(workdir, s["name"] + "-dense.yaml")
            with open(s["dense_path"], "w") as f:
                f.write(spec_yaml(s["name"] + "-dense", s["D"], True, "prefill", page_size))
        if s["kind"] in ("prefill", "serving", "paged"):  # the same layer held to prefill_sm80 (its heuristic): one column per family
            s["sm80_path"] = os.path.join(workdir, s["name"] + "-sm80.yaml")
            with open(s["sm80_path"], "w") as f:
                f.write(spec_yaml(s["name"] + "-sm80", s["D"], s["causal"], kernel, page_size,
                                  "{families: [prefill_sm80]}", **layer))
        s["shapes_path"] = os.path.join(workdir, s["name"] + ".shapes.yaml")
        with open(s["shapes_path"], "w") as f:
            for sh in s["shapes"]:
                f.write("- {" + ", ".join(f"{k}: {v}" for k, v in sh.items()) + "}\n")
    return specs


def bench_ms(fn):
    fn()
    torch.cuda.synchronize()
    return do_bench(fn, warmup=50, rep=200, return_mode="median")


def graph_ms(fn):
    """bench_ms of one call captured in a CUDA graph and replayed: the kernels' time without the
    Python call's overhead in the figure (do_bench still flushes L2 between replays). None when the
    call cannot be captured."""
    fn()
    torch.cuda.synchronize()
    try:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
    except Exception as e:
        print(f"  CUDA graph capture failed: {str(e)[:120]}", flush=True)
        return None
    return bench_ms(g.replay)


def sdpa_ms(backend, fn):
    try:
        with sdpa_kernel([backend]):
            return bench_ms(fn)
    except Exception as e:  # a backend that does not take this shape: say so, keep going
        print(f"  {backend.name}: not available here: {str(e)[:120]}", flush=True)
        return None


def flex_fn():
    try:
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
        # Every bench shape is its own compile (dynamic=False); the default limit of 8 would send
        # the last shapes to the unfused fallback and measure that instead.
        torch._dynamo.config.recompile_limit = 64
        return torch.compile(flex_attention, dynamic=False), create_block_mask
    except Exception as e:
        print("FlexAttention not available:", str(e)[:120])
        return None, None


def stream():
    return torch.cuda.current_stream().cuda_stream


def run_attnc(row, spec, db, call, qa, ref, unit_of_ms, select):
    """attnc's prefill columns: tuned (when there is a db), heuristic, and the prefill_sm80 family;
    each with its config and its largest difference from `ref`."""
    runs = (("attnc_tuned", spec["path"], True), ("attnc_heuristic", spec["path"], False)) if db else \
        (("attnc_heuristic", spec["path"], False),)
    for label, path, tuned in runs + (("attnc_sm80", spec["sm80_path"], False),):
        a = attnc.Attention(path, db=db or "none", use_tuning=tuned)
        o = torch.empty_like(qa)
        row[label] = unit_of_ms(bench_ms(lambda: call(a, o)))
        row[label + "_config"] = a.select(*select)
        if ref is not None:
            row[label + "_max_diff"] = (o.float() - ref.float()).abs().max().item()


def prefill_rows(spec, db, flex, block_mask_fn):
    B, S, D, causal = spec["B"], spec["S"], spec["D"], spec["causal"]
    g = torch.Generator(device="cuda").manual_seed(0)
    q = torch.randn(B, HQ, S, D, dtype=torch.bfloat16, device="cuda", generator=g)
    k = torch.randn(B, HKV, S, D, dtype=torch.bfloat16, device="cuda", generator=g)
    v = torch.randn(B, HKV, S, D, dtype=torch.bfloat16, device="cuda", generator=g)
    kr, vr = k.repeat_interleave(HQ // HKV, 1), v.repeat_interleave(HQ // HKV, 1)
    flops = 4 * B * HQ * S * S * D / (2 if causal else 1)
    tf = lambda ms: flops / ms / 1e9 if ms else None

    # attnc's layout: varlen [tokens, heads, dim]
    qa = q.transpose(1, 2).reshape(B * S, HQ, D).contiguous()
    ka = k.transpose(1, 2).reshape(B * S, HKV, D).contiguous()
    va = v.transpose(1, 2).reshape(B * S, HKV, D).contiguous()
    cu = torch.arange(0, (B + 1) * S, S, dtype=torch.int32, device="cuda")
    row = dict(shape=f"prefill d{D} {'causal' if causal else 'none'} B{B} S{S}", unit="TFLOP/s")
    ref = None
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
        ref = F.scaled_dot_product_attention(q, kr, vr, is_causal=causal)
    ref = ref.transpose(1, 2).reshape(B * S, HQ, D)
    run_attnc(row, spec, db, lambda a, o: a.prefill(qa, ka, va, cu, cu, S, S, out=o, stream=stream()),
              qa, ref, tf, ("prefill", B, S, S))
    row["cudnn"] = tf(sdpa_ms(SDPBackend.CUDNN_ATTENTION,
                              lambda: F.scaled_dot_product_attention(q, kr, vr, is_causal=causal)))
    row["flash"] = tf(sdpa_ms(SDPBackend.FLASH_ATTENTION,
                              lambda: F.scaled_dot_product_attention(q, kr, vr, is_causal=causal)))
    if flex:
        t0 = time.time()
        bm = block_mask_fn(lambda b, h, i, j: i >= j, None, None, S, S) if causal else None
        fn = lambda: flex(q, k, v, block_mask=bm, enable_gqa=True)
        fn()
        torch.cuda.synchronize()
        row["flex_compile_s"] = time.time() - t0
        row["flex"] = tf(bench_ms(fn))
    return row


def visited_keys(lens, causal, window=None):
    """Sum over query rows of the keys each attends to (the FLOP count's S^2 term)."""
    total = 0
    for n in lens:
        if window:
            w = min(window, n)
            total += w * (w + 1) // 2 + (n - w) * w
        else:
            total += n * (n + 1) // 2 if causal else n * n
    return total


def serving_rows(spec, db, flex, block_mask_fn):
    """A serving row: varlen [tokens, heads, dim] inputs, attnc's columns as in prefill_rows; cuDNN
    and FA2 through SDPA one request at a time (SDPA has no varlen), FlexAttention with a document
    mask over the packed batch; for window + sinks only FlexAttention (sinks applied from its LSE)."""
    lens, D, hq, hkv = spec["lens"], spec["D"], spec["hq"], spec["hkv"]
    page = spec.get("page_size")
    window, sinks = spec.get("window"), spec.get("sinks", False)
    total = sum(lens)
    g = torch.Generator(device="cuda").manual_seed(0)
    qa = torch.randn(total, hq, D, dtype=torch.bfloat16, device="cuda", generator=g)
    ka = torch.randn(total, hkv, D, dtype=torch.bfloat16, device="cuda", generator=g)
    va = torch.randn(total, hkv, D, dtype=torch.bfloat16, device="cuda", generator=g)
    sink = torch.randn(hq, dtype=torch.float32, device="cuda", generator=g) if sinks else None
    cu = torch.tensor([0] + lens, dtype=torch.int32, device="cuda").cumsum(0, dtype=torch.int32)
    flops = 4 * hq * D * visited_keys(lens, spec["causal"], window)
    tf = lambda ms: flops / ms / 1e9 if ms else None
    name = spec["name"].replace("bench-serving-", "").replace("bench-", "")
    row = dict(shape=f"serving {name} d{D} Hq{hq} Hkv{hkv} " + (f"page{page} " if page else "") +
               (f"B{len(lens)} lens {min(lens)}..{max(lens)}" if len(lens) > 1 else f"B1 S{lens[0]}"),
               unit="TFLOP/s")
    # [1, H, total, D] views for SDPA / Flex; per request: slices along the sequence axis.
    q4, k4, v4 = (x.transpose(0, 1).unsqueeze(0) for x in (qa, ka, va))
    starts = [0] + list(torch.tensor(lens).cumsum(0).tolist())
    def sdpa_all(out=None):
        for i, n in enumerate(lens):
            a, b = starts[i], starts[i] + n
            o = F.scaled_dot_product_attention(q4[:, :, a:b], k4[:, :, a:b], v4[:, :, a:b], is_causal=True,
                                               enable_gqa=True)
            if out is not None:
                out[a:b] = o[0].transpose(0, 1)
    ref = None
    if not window:
        ref = torch.empty_like(qa)
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
            sdpa_all(ref)
        row["cudnn"] = tf(sdpa_ms(SDPBackend.CUDNN_ATTENTION, sdpa_all))
        row["flash"] = tf(sdpa_ms(SDPBackend.FLASH_ATTENTION, sdpa_all))
    if flex:
        doc = torch.repeat_interleave(torch.arange(len(lens), device="cuda"), torch.tensor(lens, device="cuda"))
        def mask(b, h, i, j):
            m = (doc[i] == doc[j]) & (i >= j)
            return m & (i - j < window) if window else m
        t0 = time.time()
        bm = block_mask_fn(mask, None, None, total, total)
        def flex_call():
            if not sinks:
                return flex(q4, k4, v4, block_mask=bm, enable_gqa=True)
            o, lse = flex(q4, k4, v4, block_mask=bm, enable_gqa=True, return_lse=True)
            return o * torch.sigmoid(lse - sink[None, :, None])[..., None].to(o.dtype)
        o = flex_call()
        torch.cuda.synchronize()
        row["flex_compile_s"] = time.time() - t0
        row["flex"] = tf(bench_ms(flex_call))
        if ref is None:
            ref = o[0].transpose(0, 1).contiguous()
    extra = dict(sinks=sink) if sinks else {}
    contiguous = lambda a, o: a.prefill(qa, ka, va, cu, cu, max(lens), max(lens), out=o, stream=stream(), **extra)
    if not page:
        run_attnc(row, spec, db, contiguous, qa, ref, tf, ("prefill", len(lens), max(lens), max(lens)))
        return row
    # Paged: each request's pages scattered over the cache; attnc's columns read it through the
    # block_table, and attnc_contiguous is the heuristic's kernel on the contiguous tensors.
    kc, vc, bt = paged_varlen_cache(ka, va, lens, page)
    used = torch.tensor(lens, dtype=torch.int32, device="cuda")
    run_attnc(row, spec, db, lambda a, o: a.prefill_paged(qa, kc, vc, cu, bt, used, max(lens), max(lens), out=o,
                                                             stream=stream()),
              qa, ref, tf, ("prefill_paged", len(lens), max(lens), max(lens)))
    a = attnc.Attention(spec["path"], db="none", use_tuning=False)
    o = torch.empty_like(qa)
    row["attnc_contiguous"] = tf(bench_ms(lambda: contiguous(a, o)))
    row["attnc_contiguous_config"] = a.select("prefill", len(lens), max(lens), max(lens))
    return row


def paged_varlen_cache(ka, va, lens, page_size, extra_pages=64):
    """Varlen K/V [total, Hkv, D] -> vLLM-layout caches [num_blocks, page, Hkv, D] and block_table
    [B, max pages], every request's pages scattered at random over the cache."""
    pages = [(n + page_size - 1) // page_size for n in lens]
    n = sum(pages) + extra_pages
    perm = torch.randperm(n, device="cuda", dtype=torch.int64)
    H, D = ka.shape[1], ka.shape[2]
    kc = torch.zeros(n, page_size, H, D, dtype=ka.dtype, device="cuda")
    vc = torch.zeros_like(kc)
    bt = torch.zeros(len(lens), max(pages), dtype=torch.int32, device="cuda")
    start, first = 0, 0
    for i, (m, p) in enumerate(zip(lens, pages)):
        ids = perm[first:first + p]
        bt[i, :p] = ids.to(torch.int32)
        for kv, c in ((ka, kc), (va, vc)):
            padded = torch.zeros(p * page_size, H, D, dtype=ka.dtype, device="cuda")
            padded[:m] = kv[start:start + m]
            c[ids] = padded.view(p, page_size, H, D)
        start, first = start + m, first + p
    return kc, vc, bt


def sparse_mask_mod(b, h, q_idx, kv_idx):
    """Phi-3-small's pattern at token level (attention-semantics.md §7.4), head sliding step 1."""
    qb, kb = q_idx // SPARSE["block_size"], kv_idx // SPARSE["block_size"]
    return (q_idx >= kv_idx) & ((qb - kb < SPARSE["local_blocks"]) | ((kb + h + 1) % SPARSE["vert_stride"] == 0))


def sparse_pairs(S):
    """Visible (query, key) pairs per head, averaged over the q heads."""
    bs, nb = SPARSE["block_size"], S // SPARSE["block_size"]
    total = 0
    for h in range(HQ):
        for qb in range(nb):
            for kb in range(qb + 1):
                if qb - kb < SPARSE["local_blocks"] or (kb + h + 1) % SPARSE["vert_stride"] == 0:
                    total += bs * (bs + 1) // 2 if kb == qb else bs * bs
    return total / HQ


def sparse_rows(spec, db, flex, block_mask_fn):
    """attnc block-sparse, attnc dense causal and FlexAttention with the same block mask, in ms."""
    B, S, D = spec["B"], spec["S"], spec["D"]
    g = torch.Generator(device="cuda").manual_seed(0)
    q = torch.randn(B, HQ, S, D, dtype=torch.bfloat16, device="cuda", generator=g)
    k = torch.randn(B, HKV, S, D, dtype=torch.bfloat16, device="cuda", generator=g)
    v = torch.randn(B, HKV, S, D, dtype=torch.bfloat16, device="cuda", generator=g)
    qa = q.transpose(1, 2).reshape(B * S, HQ, D).contiguous()
    ka = k.transpose(1, 2).reshape(B * S, HKV, D).contiguous()
    va = v.transpose(1, 2).reshape(B * S, HKV, D).contiguous()
    cu = torch.arange(0, (B + 1) * S, S, dtype=torch.int32, device="cuda")
    row = dict(shape=f"block-sparse {SPARSE['block_size']}/{SPARSE['local_blocks']}/{SPARSE['vert_stride']} "
                     f"d{D} causal B{B} S{S}", unit="ms",
               sparse_tflop=4 * B * HQ * D * sparse_pairs(S) / 1e12)
    outs = {}
    runs = [("attnc_sparse_heuristic", spec["path"], False), ("attnc_dense_causal", spec["dense_path"], False)]
    if db:
        runs.insert(0, ("attnc_sparse_tuned", spec["path"], True))
    for label, path, tuned in runs:
        a = attnc.Attention(path, db=db or "none", use_tuning=tuned)
        o = torch.empty_like(qa)
        row[label] = bench_ms(lambda: a.prefill(qa, ka, va, cu, cu, S, S, out=o, stream=stream()))
        row[label + "_config"] = a.select("prefill", B, S, S)
        outs[label] = o.view(B, S, HQ, D).transpose(1, 2)
    if flex:
        t0 = time.time()
        bm = None
        for block in ((128, 64), 128):  # the sparse block as Flex's KV block where it takes it
            try:
                bm = block_mask_fn(sparse_mask_mod, None, HQ, S, S, BLOCK_SIZE=block)
                fn = lambda: flex(q, k, v, block_mask=bm, enable_gqa=True)
                ref = fn()
                row["flex_block_size"] = str(block)
                break
            except Exception as e:
                print(f"  Flex BLOCK_SIZE={block}: {str(e)[:160]}", flush=True)
        if "flex_block_size" in row:
            torch.cuda.synchronize()
            row["flex_compile_s"] = time.time() - t0
            row["flex"] = bench_ms(fn)
            for label, o in outs.items():  # attnc sparse against Flex: the same pattern, two implementations
                row[label + "_vs_flex_max_diff"] = (o.float() - ref.float()).abs().max().item()
    for label in ("attnc_sparse_tuned", "attnc_sparse_heuristic"):
        if row.get(label):
            row[label + "_tflops"] = row["sparse_tflop"] / (row[label] / 1e3)
    return row


def paged_cache(k, page_size, num_blocks_extra=64):
    """k: [B, L, Hkv, D] dense -> (cache [num_blocks, page, Hkv, D], block_table [B, L/page]) with
    the pages of every request scattered over the cache."""
    B, L, H, D = k.shape
    per = L // page_size
    n = B * per + num_blocks_extra
    perm = torch.randperm(n, device="cuda", dtype=torch.int64)[: B * per]
    cache = torch.zeros(n, page_size, H, D, dtype=k.dtype, device="cuda")
    cache[perm] = k.reshape(B * per, page_size, H, D)
    return cache, perm.reshape(B, per).to(torch.int32).contiguous()


def paged_cache_lens(ks, vs, page_size, num_blocks_extra=64):
    """ks, vs: per request [L_i, Hkv, D] (L_i multiples of the page) -> (k cache, v cache
    [num_blocks, page, Hkv, D], block_table [B, max pages] padded with page 0) with every request's
    pages scattered over the caches."""
    per = [k.shape[0] // page_size for k in ks]
    n = sum(per) + num_blocks_extra
    perm = torch.randperm(n, device="cuda", dtype=torch.int64)[: sum(per)]
    kc = torch.zeros(n, page_size, *ks[0].shape[1:], dtype=ks[0].dtype, device="cuda")
    vc = torch.zeros_like(kc)
    bt = torch.zeros(len(ks), max(per), dtype=torch.int32, device="cuda")
    at = 0
    for b, p in enumerate(per):
        idx = perm[at:at + p]
        kc[idx] = ks[b].reshape(p, page_size, *ks[b].shape[1:])
        vc[idx] = vs[b].reshape(p, page_size, *vs[b].shape[1:])
        bt[b, :p] = idx.to(torch.int32)
        at += p
    return kc, vc, bt


def decode_reference(q, ks, vs, scale, softcap, tokens, requests):
    """float32 attention of `requests` (indices): q [B * tokens, Hq, D], ks[b]/vs[b] [L, Hkv, D];
    the last `tokens` positions are the queries (causal inside them). -> {request: [tokens, Hq, D]}."""
    out = {}
    for b in requests:
        qb = q[b * tokens:(b + 1) * tokens].float()  # [T, Hq, D]
        k, v = ks[b].float(), vs[b].float()           # [L, Hkv, D]
        L, hkv = k.shape[0], k.shape[1]
        g = qb.shape[1] // hkv
        s = torch.einsum("tkgd,lkd->kgtl", qb.reshape(tokens, hkv, g, -1), k) * scale
        if softcap:
            s = softcap * torch.tanh(s / softcap)
        i = torch.arange(tokens, device="cuda")[:, None]
        j = torch.arange(L, device="cuda")[None, :]
        s = s.masked_fill(j > L - tokens + i, float("-inf"))
        o = torch.einsum("kgtl,lkd->tkgd", torch.softmax(s, -1), v)
        out[b] = o.reshape(tokens, hkv * g, -1)
    return out


def decode_rows(spec, db, page_size, flex):
    """One row per (B, L) or ragged [lens] of a decode spec. attnc reads a vLLM paged cache (pages
    shuffled); cuDNN, FA2 and FlexAttention read dense K/V of the same shape (a ragged batch: one call
    for the long request plus one for the short ones; speculative rows: cuDNN and FA2 without the
    causal part, same bytes; softcap rows: only Flex applies it). An fp8 spec's cache holds
    fp8(x / scale) (reshape_and_cache_flash's rounding) read with that per-tensor scale; its TB/s
    counts fp8 bytes, and `ms` keeps the times. max_diff: against a float32 reference of a few requests."""
    rows = []
    D, hq, hkv, T, softcap = spec["D"], spec["hq"], spec["hkv"], spec["tokens"], spec.get("softcap")
    fp8 = spec.get("kv_dtype", "same") != "same"
    scale = D ** -0.5
    a_h = attnc.Attention(spec["path"], db=db or "none", use_tuning=False)
    runs = [("attnc_heuristic", a_h)]
    if db:
        runs.insert(0, ("attnc_tuned", attnc.Attention(spec["path"], db=db, use_tuning=True)))
    for r in spec["rows"]:
        lens = r[0] if len(r) == 1 else [r[1]] * r[0]
        B, L = len(lens), max(lens)
        torch.manual_seed(0)
        q = torch.randn(B * T, hq, D, dtype=torch.bfloat16, device="cuda")
        if len(set(lens)) == 1:
            kd = torch.randn(B, L, hkv, D, dtype=torch.bfloat16, device="cuda")
            vd = torch.randn_like(kd)
            ks, vs = list(kd), list(vd)
        else:
            ks = [torch.randn(n, hkv, D, dtype=torch.bfloat16, device="cuda") for n in lens]
            vs = [torch.randn_like(k) for k in ks]
        byt = 2 * sum(lens) * hkv * D * (1 if fp8 else 2)
        ms_of = {}
        tb = lambda ms: byt / ms / 1e9 if ms else None
        what = f"decode d{D}" + (f" {spec['label']}" if spec.get("label") else "")
        shape = f"B{B} L{L}" if len(set(lens)) == 1 else \
            f"ragged 1x{lens[0]}+{B - 1}x{lens[1]}"
        row = dict(shape=f"{what} {shape} page{page_size}" + (" fp8 e4m3" if fp8 else ""), unit="TB/s", ms=ms_of)
        kc, vc, bt = paged_cache_lens(ks, vs, page_size)
        check = sorted({0, B - 1})  # the requests the reference computes
        kw = {}
        ref_k, ref_v = ks, vs
        if fp8:
            scales = [(c.abs().max().float() / 448).reshape(1) for c in (kc, vc)]
            kc, vc = [(c.float() / s).to(torch.float8_e4m3fn) for c, s in zip((kc, vc), scales)]
            kw = dict(k_scale=scales[0], v_scale=scales[1])
            dq = lambda x, s: (x.float() / s).to(torch.float8_e4m3fn).float() * s  # what the cache holds
            ref_k = {b: dq(ks[b], scales[0]) for b in check}
            ref_v = {b: dq(vs[b], scales[1]) for b in check}
        ref = decode_reference(q, ref_k, ref_v, scale, softcap, T, check)
        used = torch.tensor(lens, dtype=torch.int32, device="cuda")
        multi = dict(cu_seqlens_q=torch.arange(0, (B + 1) * T, T, dtype=torch.int32, device="cuda"),
                     max_seqlen_q=T) if T > 1 else {}
        for label, a in runs:
            a.reserve(B, L, max_seqlen_q=T)
            o = torch.empty_like(q)
            fn = lambda: a.decode(q, kc, vc, bt, used, L, out=o, stream=stream(), seqlen_k_sum=sum(lens), **multi, **kw)
            ms_of[label] = bench_ms(fn)
            row[label] = tb(ms_of[label])
            row[label + "_config"] = a.select("decode", B, T, L)
            row[label + "_max_diff"] = max((o[b * T:(b + 1) * T].float() - ref[b]).abs().max().item() for b in check)
        del kc, vc
        # The anchors on dense [B, H, L, D] K/V: uniform batches in one call; a ragged one as two.
        groups = [(0, B)] if len(set(lens)) == 1 else [(0, 1), (1, B)]
        dense = []
        for b0, b1 in groups:
            kd = torch.stack(ks[b0:b1]).transpose(1, 2).contiguous()
            vd = torch.stack(vs[b0:b1]).transpose(1, 2).contiguous()
            qd = q[b0 * T:b1 * T].reshape(b1 - b0, T, hq, D).transpose(1, 2).contiguous()
            dense.append((qd, kd, vd))
        sdpa = lambda: [F.scaled_dot_product_attention(qd, kd, vd, enable_gqa=True) for qd, kd, vd in dense]
        ms_of["cudnn"] = sdpa_ms(SDPBackend.CUDNN_ATTENTION, sdpa)
        row["cudnn"] = None if fp8 else tb(ms_of["cudnn"])  # (cuDNN reads bf16: its time is in `ms`)
        row["flash"] = None if fp8 else tb(sdpa_ms(SDPBackend.FLASH_ATTENTION, sdpa))
        if flex and not fp8 and len(dense) == 1:
            qd, kd, vd = dense[0]
            mod = (lambda s, b, h, i, j: softcap * torch.tanh(s / softcap)) if softcap else None
            bm = None
            if T > 1:
                from torch.nn.attention.flex_attention import create_block_mask
                bm = create_block_mask(lambda b, h, i, j: j <= L - T + i, None, None, T, L)
            try:
                row["flex"] = tb(bench_ms(lambda: flex(qd, kd, vd, score_mod=mod, block_mask=bm, enable_gqa=True)))
            except Exception as e:  # keep going without this column
                print(f"  flex: {str(e)[:160]}", flush=True)
        del dense
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


# int8 decode (issue 12): the int8 fork's two modes beside attnc bf16 and fp8 e4m3 on one shape.
INT8_DECODE = dict(B=64, L=8192, D=128, hq=HQ, hkv=HKV)
INT8_DECODE_CACHES = [  # (label, kv_cache dtype, layout, quant, bytes per K element, per V element)
    ("bf16", "same", "NHD", None, 2, 2), ("fp8 e4m3", "fp8_e4m3", "NHD", None, 1, 1),
    ("int8_qkv", "int8", "HND", "int8_qkv", 1, 1), ("int8_qk", "int8", "HND", "int8_qk", 1, 2)]


def bench_int8_decode(attnc_bin, workdir, page_size, db):
    """attnc's decode on one paged shape with a bf16, an fp8 e4m3 and the two int8 caches (int8_qkv:
    int8 K and V; int8_qk: int8 K, 16-bit V; the fork's HND pages), each through `attnc run` (the
    dispatcher's default config and split heuristic, median of 50 single launches, no reference check:
    the GPU grid checks these kernels). TB/s counts the K/V bytes of each cache (int8 rows: the int8
    bytes, not the [num_blocks, Hkv, page] fp32 key scales, 1/64 of int8_qkv's bytes at d128)."""
    B, L, D, hq, hkv = (INT8_DECODE[k] for k in ("B", "L", "D", "hq", "hkv"))
    rows = []
    for label, cache, layout, quant, kb, vb in INT8_DECODE_CACHES:
        name = f"bench-int8-decode-{label.replace(' ', '')}"
        path = os.path.join(workdir, name + ".yaml")
        with open(path, "w") as f:
            f.write(spec_yaml(name, D, False, "decode", page_size, hq=hq, hkv=hkv, kv_dtype=cache)
                    .replace(f"layout: NHD", f"layout: {layout}") + (f"quant: {quant}\n" if quant else ""))
        cmd = [attnc_bin, "run", path, "--kind", "decode", "--seqlens-k", ",".join([str(L)] * B),
               "--page-size", str(page_size), "--num-blocks", str(B * L // page_size + 64), "--no-check",
               "--reps", "50", "--json"] + (["--db", db] if db else [])
        res = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        byt = B * L * hkv * D * (kb + vb)
        row = dict(shape=f"decode d{D} B{B} L{L} page{page_size}", cache=label, unit="TB/s", int8_decode=True,
                   attnc_heuristic=byt / res["time_ms"] / 1e9, time_ms=res["time_ms"], gbytes=byt / 1e9,
                   entry=res["entry"], num_splits=res["num_splits"])
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def int8_decode_markdown(rows):
    rows = [r for r in rows if r.get("int8_decode")]
    if not rows:
        return []
    bf16 = next((r for r in rows if r["cache"] == "bf16"), None)
    lines = ["", "int8 decode: `attnc run`, the dispatcher's default config, median of 50 single launches.", "",
             "| int8 decode shape | KV cache | K/V bytes (GB) | time (us) | TB/s of its bytes | tokens/s vs bf16 "
             "| kernel (splits) |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['shape']} | {r['cache']} | {r['gbytes']:.3f} | {r['time_ms'] * 1e3:.1f} "
                     f"| {fmt(r['attnc_heuristic'])} | {ratio(bf16 and bf16['time_ms'], r['time_ms'])} "
                     f"| {r['entry']} ({r['num_splits']}) |")
    return lines


def first_call_s(spec_path, db):
    """One fresh process: create the Attention and run one small prefill; the seconds that took."""
    code = f"""
import time, torch, attnc
q = torch.randn(256, {HQ}, 128, dtype=torch.bfloat16, device='cuda'); k = torch.randn(256, {HKV}, 128, dtype=torch.bfloat16, device='cuda')
cu = torch.tensor([0, 256], dtype=torch.int32, device='cuda'); torch.cuda.synchronize()
t0 = time.perf_counter(); a = attnc.Attention({spec_path!r}, db={db!r}); o = a.prefill(q, k, k, cu, cu, 256, 256)
torch.cuda.synchronize(); print(time.perf_counter() - t0)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def jit_rows(attnc_bin, workdir):
    """Cold compile per variant (attnc compile, no cache), the first call of a new spec in a fresh
    process on an empty cache (compile + load + launch), then the same call on the warm cache
    (module loaded from SQLite)."""
    rows = []
    spec = os.path.join(workdir, "jit-d128-causal.yaml")
    with open(spec, "w") as f:
        f.write(spec_yaml("jit-d128-causal", 128, True, "prefill", 16))
    out = subprocess.run([attnc_bin, "compile", spec, "--no-cache", "--json"], capture_output=True, text=True,
                         check=True)
    for k in json.loads(out.stdout)["kernels"]:
        if "compile_ms" in k:
            rows.append(dict(what=f"cold compile ({k['kernel']}, NVRTC -> cubin)", seconds=k["compile_ms"] / 1e3))
    db = os.path.join(workdir, "jit.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)
    rows.append(dict(what="first call of a new spec, empty cache (new process)", seconds=first_call_s(spec, db)))
    rows.append(dict(what="first call, warm cache: module from SQLite (new process)", seconds=first_call_s(spec, db)))
    return rows


def fmt(v, d=2):
    return "-" if v is None else f"{v:.{d}f}"


def mla_rows(spec, db):
    """attnc's mla_decode on one MLA bench shape (dispatcher heuristic) beside FlashMLA's published
    H800 figure; max_diff against an fp32 torch reference of the same call. An fp8 cache holds
    fp8(x / scale), read with that per-tensor scale (k_scale); its TB/s counts fp8 bytes and the
    reference reads the dequantised cache."""
    B, L, H, unit, fp8 = spec["B"], spec["L"], spec["H"], spec["unit"], spec.get("cache", "same") != "same"
    torch.manual_seed(0)
    q = torch.randn(B, H, 576, dtype=torch.bfloat16, device="cuda")
    kv = torch.randn(B, L, 1, 576, dtype=torch.bfloat16, device="cuda")
    cache, bt = paged_cache(kv, 64)
    cache = cache.reshape(cache.shape[0], 64, 576)
    scales = {}
    if fp8:
        k_scale = (kv.abs().amax().float() / 448.0).reshape(1)
        cache = (cache.float() / k_scale).to(torch.float8_e4m3fn)
        kv = (kv.float() / k_scale).to(torch.float8_e4m3fn).float() * k_scale  # what the kernel reads
        scales = dict(k_scale=k_scale)
    used = torch.full((B,), L, dtype=torch.int32, device="cuda")
    a = attnc.Attention(spec["path"], db=db or "none", use_tuning=False)
    a.reserve(B, L)
    o = torch.empty(B, H, 512, dtype=torch.bfloat16, device="cuda")
    lse = torch.empty(H, B, dtype=torch.float32, device="cuda")
    fn = lambda: a.mla_decode(q, cache, bt, used, L, MLA_SCALE, out=o, lse=lse, stream=stream(), **scales)
    # The figure is the kernels' (a CUDA graph replayed, as FlashMLA's own figures are kernel times);
    # the direct Python call's, overhead included, is beside it.
    call_ms = bench_ms(fn)
    ms = graph_ms(fn) or call_ms
    flops = 2.0 * B * H * L * (576 + 512)
    per = lambda t: flops / t / 1e9 if unit == "TFLOP/s" else B * L * 576 * (1 if fp8 else 2) / t / 1e9
    value = per(ms)
    diff = 0.0
    for b in range(0, B, max(1, B // 8)):  # a reference of every eighth request keeps memory small
        s = torch.einsum("hd,ld->hl", q[b].float(), kv[b, :, 0].float()) * MLA_SCALE
        ref = torch.softmax(s, -1) @ kv[b, :, 0, :512].float()
        diff = max(diff, (o[b].float() - ref).abs().max().item())
    label = "fp8e4m3 cache " if fp8 else ""
    row = dict(shape=f"mla_decode bf16 {label}B{B} L{L} H{H} page64", unit=unit, attnc_heuristic=value, time_ms=ms,
               timing="cuda graph replay" if ms != call_ms else "python call", python_call=per(call_ms),
               python_call_ms=call_ms,
               attnc_heuristic_config=a.select("decode", B, 1, L), attnc_heuristic_max_diff=diff,
               flashmla_h800_published=FLASHMLA_H800[unit])
    print(json.dumps(row), flush=True)
    return [row]


INT8_PREFILL = dict(D=128, B=4, S=4096)  # the int8 prefill shape (Hq 32, Hkv 8, causal)


def bench_int8_prefill(attnc_bin, workdir):
    """int8 prefill in both modes beside attnc's bf16 on the same shape, through `attnc run` (the
    Python wrapper takes 16-bit q/k/v only): medians of 50 launches, and each int8 mode's error
    against the float64 reference at a smaller shape (B1 S1024) in the same run. The paged rows read
    the same shape from the fork's HND cache of 16-token pages (the prompt prefilled whole, pages
    scattered by `attnc run`): bf16 and int8 on prefill_sm90 (the default), and paged int8_qk on
    prefill_sm80 (named by its config) for the comparison."""
    d, b, S = INT8_PREFILL["D"], INT8_PREFILL["B"], INT8_PREFILL["S"]
    sm90, sm80 = '{"family":"prefill_sm90"}', '{"family":"prefill_sm80"}'
    variants = [("bf16", "", None, None), ("int8_qk", "int8_qk", None, None), ("int8_qkv", "int8_qkv", None, None),
                ("int8_qk prefill_sm80", "int8_qk", "{families: [prefill_sm80]}", None),
                ("bf16 paged", "", None, ""), ("int8_qk paged prefill_sm90", "int8_qk", None, sm90),
                ("int8_qkv paged prefill_sm90", "int8_qkv", None, sm90), ("int8_qk paged prefill_sm80", "int8_qk", None, sm80)]
    flops = 4 * b * HQ * S * S * d / 2
    rows = []
    for label, quant, tuning, paged in variants:
        path = os.path.join(workdir, "bench-int8-" + label.replace(" ", "-") + ".yaml")
        with open(path, "w") as f:
            f.write(spec_yaml("bench-int8-" + label.replace(" ", "-"), d, True, "prefill", 16, tuning,
                              kv_dtype="int8" if quant else "same"))
            if quant:
                f.write(f"quant: {quant}\n")

        extra_args = [] if paged is None else (["--kind", "prefill_paged", "--layout", "fork_hnd", "--page-size", "16"] +
                                               (["--config", paged] if paged else []))

        def run(seqlens, extra):
            out = subprocess.run([attnc_bin, "run", path, "--seqlens", ",".join([str(seqlens[1])] * seqlens[0]),
                                  "--json", "--seed", "1"] + extra_args + extra, capture_output=True, text=True)
            if out.returncode != 0:
                print(f"  {label}: attnc run failed: {out.stderr.strip()[:300]}", flush=True)
                return None
            return json.loads(out.stdout)

        timed = run((b, S), ["--no-check", "--reps", "50"])
        checked = run((1, 1024), ["--reps", "0"]) if quant else None
        row = dict(shape=f"int8 prefill d{d} causal B{b} S{S} Hq{HQ} Hkv{HKV}", unit="ms", variant=label)
        if timed:
            row.update(ms=timed["time_ms"], tflops=flops / timed["time_ms"] / 1e9, kernel=timed["entry"])
        if checked:
            row.update(check_passed=checked["passed"], max_abs_err=checked["max_abs_err"],
                       rel_l2_err=checked["rel_l2_err"])
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def cudnn_int8_anchor_rows(frontend):
    """cuDNN on the int8 prefill shape: bf16 (SDPA) and per-tensor fp8 e4m3 (the frontend's graph), the
    8-bit anchor beside attnc's int8 rows (tools/anchor_cudnn_fp8.py)."""
    import anchor_cudnn_fp8
    d, b, S = INT8_PREFILL["D"], INT8_PREFILL["B"], INT8_PREFILL["S"]
    m = anchor_cudnn_fp8.measure(frontend, b, S, HQ, HKV, d, True)
    rows = []
    for key, label in (("bf16", "cuDNN bf16"), ("fp8", "cuDNN fp8 e4m3 (per-tensor scales)")):
        rows.append(dict(shape=f"int8 prefill d{d} causal B{b} S{S} Hq{HQ} Hkv{HKV}", unit="ms", variant=label,
                         ms=m[f"cudnn_{key}_ms"], tflops=m[f"cudnn_{key}_tflops"], kernel=f"cuDNN {m['cudnn']}"))
    rows[-1]["fp8_rel_l2"] = m["fp8_rel_l2_vs_fp32"]
    print(json.dumps(rows), flush=True)
    return rows


def int8_markdown(rows):
    int8 = [r for r in rows if r.get("variant")]
    if not int8:
        return []
    bf16 = {r["variant"]: r.get("ms") for r in int8 if r["variant"] in ("bf16", "bf16 paged")}
    lines = ["", f"| {int8[0]['shape']} | kernel | ms | TFLOP/s | bf16 / this (paged: bf16 paged) | "
             "error at B1 S1024 (max abs, rel L2) |", "|---|---|---|---|---|---|"]
    for r in int8:
        base = bf16.get("bf16 paged" if "paged" in r["variant"] else "bf16")
        err = f"{r['max_abs_err']:.4f}, {r['rel_l2_err']:.4f}" if "max_abs_err" in r else "-"
        if "fp8_rel_l2" in r:
            err = f"rel L2 {r['fp8_rel_l2']:.4f} at this shape (fp8 O against fp32 over its fp8 inputs)"
        lines.append(f"| {r['variant']} | `{r.get('kernel', '-')}` | {fmt(r.get('ms'), 3)} | {fmt(r.get('tflops'))} "
                     f"| {ratio(base, r.get('ms'))} | {err} |")
    return lines


def ratio(a, b):
    return "-" if not a or not b else f"{a / b:.2f}"


def markdown(rows, jit, env):
    lines = [f"Measured {time.strftime('%Y-%m-%d')} on {env['name']} ({env['sms']} SMs), torch {env['torch']}, "
             f"cuDNN {env['cudnn']}; medians of triton do_bench (warm-up 50 ms, 200 ms of repeats).", "",
             "| shape | unit | attnc tuned | attnc heuristic | attnc prefill_sm80 | cuDNN | FA2 (SDPA flash) | "
             "FlexAttention | tuned / cuDNN | heuristic / cuDNN | tuned / heuristic | tuned / Flex |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in (r for r in rows if r["unit"] != "ms" and not r.get("int8_decode")):
        lines.append(f"| {r['shape']} | {r['unit']} | {fmt(r.get('attnc_tuned'))} | {fmt(r.get('attnc_heuristic'))} "
                     f"| {fmt(r.get('attnc_sm80'))} | {fmt(r.get('cudnn'))} | {fmt(r.get('flash'))} | {fmt(r.get('flex'))} "
                     f"| {ratio(r.get('attnc_tuned'), r.get('cudnn'))} "
                     f"| {ratio(r.get('attnc_heuristic'), r.get('cudnn'))} "
                     f"| {ratio(r.get('attnc_tuned'), r.get('attnc_heuristic'))} "
                     f"| {ratio(r.get('attnc_tuned'), r.get('flex'))} |")
    for r in rows:  # fp8 rows: the time against the bf16 row of the same shape
        base = next((b for b in rows if r["shape"].endswith(" fp8 e4m3") and b["shape"] == r["shape"][:-9]), None)
        if base:
            lines.append("")
            for label in ("attnc_tuned", "attnc_heuristic"):
                f8, b16 = r["ms"].get(label), base["ms"].get(label)
                if f8 and b16:
                    lines.append(f"- {r['shape']}, {label}: {f8 * 1e3:.1f} us against bf16 {b16 * 1e3:.1f} us: "
                                 f"{b16 / f8:.2f}x the tokens per second (cuDNN bf16: {r['ms']['cudnn'] * 1e3:.1f} us)")
    if any(r["shape"].startswith("serving") for r in rows):
        lines += ["", "Serving rows: cuDNN and FA2 run one SDPA call per request (SDPA has no varlen form); "
                  "FlexAttention takes the packed batch with a document mask; the window + sinks row has only "
                  "FlexAttention (sinks applied from its LSE): its anchor is the last column. The paged row's "
                  "anchors read contiguous K/V (theirs have no block_table form here)."]
    for r in (r for r in rows if r.get("attnc_contiguous")):
        lines.append(f"- {r['shape']}: attnc paged {fmt(r.get('attnc_heuristic'))} TFLOP/s against contiguous "
                     f"{fmt(r['attnc_contiguous'])} ({ratio(r.get('attnc_heuristic'), r['attnc_contiguous'])}x; "
                     f"{r.get('attnc_heuristic_config')} / {r.get('attnc_contiguous_config')})")
    sparse = [r for r in rows if r["shape"].startswith("block-sparse")]
    if sparse:
        lines += ["", "| block-sparse shape | attnc sparse tuned (ms) | attnc sparse heuristic (ms) | attnc dense causal "
                  "(ms) | FlexAttention, same block mask (ms) | dense / sparse | Flex / sparse | sparse TFLOP/s (visible) |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in sparse:
            best = min(x for x in (r.get("attnc_sparse_tuned"), r.get("attnc_sparse_heuristic")) if x)
            lines.append(f"| {r['shape']} | {fmt(r.get('attnc_sparse_tuned'), 3)} | "
                         f"{fmt(r.get('attnc_sparse_heuristic'), 3)} | {fmt(r.get('attnc_dense_causal'), 3)} | "
                         f"{fmt(r.get('flex'), 3)} | {ratio(r.get('attnc_dense_causal'), best)} | "
                         f"{ratio(r.get('flex'), best)} | {fmt(r['sparse_tflop'] / (best / 1e3))} |")
    lines += int8_markdown(rows)
    lines += int8_decode_markdown(rows)
    if jit:
        lines += ["", "| JIT | seconds |", "|---|---|"] + [f"| {j['what']} | {j['seconds']:.3f} |" for j in jit]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--attnc", help="the attnc binary")
    ap.add_argument("--db", help="cache with the tuning records (from tools/bench's tune step)")
    ap.add_argument("--workdir", required=True, help="where the bench specs are (tools/bench writes them)")
    ap.add_argument("--out", default=os.environ.get("OUT", "."), help="bench.json and bench.md go here")
    ap.add_argument("--page-size", type=int, default=16)
    ap.add_argument("--write-specs", action="store_true", help="only write the specs and shapes, print their paths")
    ap.add_argument("--only", choices=["prefill", "decode", "serving", "paged", "mla", "sparse", "int8"],
                    help="one kind of rows, without the JIT figures (mla: MLA absorbed decode; paged: the "
                         "serving varlen batch over a page-16 cache; int8: int8 prefill and decode beside bf16)")
    ap.add_argument("--no-flex", action="store_true", help="leave FlexAttention out (its compiles take minutes)")
    ap.add_argument("--decode-tuning", help="the decode spec's `tuning:` map, e.g. '{warps: [4, 8]}'")
    ap.add_argument("--cudnn-frontend", help="folder holding the cudnn frontend package (nvidia-cudnn-frontend): "
                                             "the int8 rows gain cuDNN's fp8 and bf16 SDPA on the same shape")
    args = ap.parse_args()
    if args.cudnn_frontend and not os.path.isdir(os.path.join(args.cudnn_frontend, "cudnn")):
        ap.error(f"--cudnn-frontend {args.cudnn_frontend}: no cudnn/ package folder there (unpack the "
                 "nvidia-cudnn-frontend wheel and give the folder holding cudnn/)")
    if args.write_specs:
        for s in write_specs(args.workdir, args.page_size, args.only, args.decode_tuning):
            print(s["path"], s["shapes_path"])
        return
    if not args.only and (not args.attnc or not args.db):
        ap.error("--attnc and --db are required to run the bench (only --write-specs and --only go without; "
                 "without --db there is no tuned column)")
    specs = write_specs(args.workdir, args.page_size, args.only, args.decode_tuning)
    dev = torch.cuda.get_device_properties(0)
    env = dict(name=dev.name, sms=dev.multi_processor_count, torch=torch.__version__,
               cudnn=torch.backends.cudnn.version(), attnc=attnc.version())
    print(env, flush=True)
    flex, block_mask_fn = (None, None) if args.no_flex or args.only in ("mla", "int8") else flex_fn()
    rows = []
    if args.only == "int8":
        if not args.attnc:
            ap.error("--only int8 runs `attnc run`: give --attnc")
        rows += bench_int8_decode(args.attnc, args.workdir, args.page_size, args.db)
        rows += bench_int8_prefill(args.attnc, args.workdir)
        if args.cudnn_frontend:
            rows += cudnn_int8_anchor_rows(args.cudnn_frontend)
    for s in specs:
        if s["kind"] in ("prefill", "serving", "paged"):
            rows.append((prefill_rows if s["kind"] == "prefill" else serving_rows)(s, args.db, flex, block_mask_fn))
            print(json.dumps(rows[-1]), flush=True)
        elif s["kind"] == "mla":
            rows += mla_rows(s, args.db)
        elif s["kind"] == "sparse":
            rows.append(sparse_rows(s, args.db, flex, block_mask_fn))
            print(json.dumps(rows[-1]), flush=True)
        else:
            rows += decode_rows(s, args.db, args.page_size, flex)
        torch.cuda.empty_cache()
    jit = [] if args.only else jit_rows(args.attnc, args.workdir)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "bench.json"), "w") as f:
        json.dump(dict(env=env, rows=rows, jit=jit), f, indent=1)
    md = markdown(rows, jit, env)
    with open(os.path.join(args.out, "bench.md"), "w") as f:
        f.write(md)
    print(md)


if __name__ == "__main__":
    main()
