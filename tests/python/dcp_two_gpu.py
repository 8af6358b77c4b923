"""Decode context parallelism on two GPUs (one process per GPU, NCCL): attnc.dcp.DcpAttention
against single-GPU attnc attention over the whole cache and a float64 reference, for interleave
sizes 1 and 16, two layers (bf16 d128 GQA with the LSE head-major base e; fp16 d64 MQA with
softcap and the LSE token-major base 2), with and without the merge of the new tokens' pass.
Fresh random inputs (rank 0 draws the seed), caches poisoned with NaN past every length, outputs
poisoned with NaN. Then a timing of one larger decode step, DCP on 2 GPUs beside one GPU.
    python3 dcp_two_gpu.py [--no-bench]     (needs 2 GPUs; prints RESULT lines, exits 1 on a failure)
"""
import math
import os
import socket
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

LAYERS = [
    dict(name="bf16_d128_g2", dtype="bf16", d=128, hkv=2, extra="lse: {layout: head_major, base: e}\n", softcap=0.0),
    dict(name="fp16_d64_mqa_softcap_base2", dtype="fp16", d=64, hkv=1, softcap=30.0,
         extra="softcap: 30\nlse: {layout: token_major, base: 2}\n"),
]
H_LOCAL, PAGE = 4, 16
CONTEXT_LENS = [1, 5, 17, 300, 1000, 4097, 2500, 33]  # 5 and 1: rank 1 holds nothing at I = 16


def spec(layer, heads):
    return (f"version: 1\nname: dcp-{layer['name']}-{heads}\nhead_dim: {layer['d']}\nnum_q_heads: {heads}\n"
            f"num_kv_heads: {layer['hkv']}\ndtype: {layer['dtype']}\nkv_cache: {{dtype: same, layout: NHD, "
            f"page_size: {PAGE}}}\nmask: causal\nkernels: [decode, merge]\n" + layer["extra"])


def paged(torch, k_rows, v_rows, dtype, dev, gen):
    """Paged K and V caches holding each request's rows (lists of [len, hkv, d]) on shuffled pages,
    NaN everywhere else (a read past a length shows); returns k_cache, v_cache, block_table."""
    pages = [max(1, math.ceil(r.shape[0] / PAGE)) for r in k_rows]
    total = sum(pages) + 3
    perm = torch.randperm(total, generator=gen).tolist()
    shape = (total, PAGE) + tuple(k_rows[0].shape[1:])
    kc = torch.full(shape, float("nan"), dtype=dtype, device=dev)
    vc = torch.full(shape, float("nan"), dtype=dtype, device=dev)
    table = torch.zeros((len(k_rows), max(pages)), dtype=torch.int32)
    at = 0
    for b in range(len(k_rows)):
        for p in range(pages[b]):
            table[b, p] = perm[at]
            n = k_rows[b][p * PAGE:(p + 1) * PAGE].shape[0]
            kc[perm[at], :n] = k_rows[b][p * PAGE:p * PAGE + n].to(dev, dtype)
            vc[perm[at], :n] = v_rows[b][p * PAGE:p * PAGE + n].to(dev, dtype)
            at += 1
    return kc, vc, table.to(dev)


def reference(torch, q, k, v, lens, scale, softcap):
    """float64: q [B, H, D], k/v lists of [len, hkv, D] -> out [B, H, D], lse (base e) [B, H]."""
    outs, lses = [], []
    for b, n in enumerate(lens):
        h = q.shape[1]
        kk = k[b][:n].double().repeat_interleave(h // k[b].shape[1], dim=1)
        vv = v[b][:n].double().repeat_interleave(h // k[b].shape[1], dim=1)
        s = torch.einsum("hd,khd->hk", q[b].double(), kk) * scale
        if softcap:
            s = softcap * torch.tanh(s / softcap)
        lses.append(torch.logsumexp(s, dim=-1))
        outs.append(torch.einsum("hk,khd->hd", torch.softmax(s, dim=-1), vv))
    return torch.stack(outs), torch.stack(lses)


def check(torch, name, got, want, atol, rtol):
    bad = ~torch.isclose(got.double(), want.double(), atol=atol, rtol=rtol)
    err = (got.double() - want.double()).abs().nan_to_num(float("inf")).max().item()
    if bad.any():
        raise AssertionError(f"{name}: {int(bad.sum())} of {bad.numel()} elements off (max abs err {err:.3g})")
    return err


def run_case(torch, dist, attnc, layer, interleave, rank, world, db, seed):
    from attnc import dcp as D
    dev = torch.device("cuda", rank)
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[layer["dtype"]]
    gen = torch.Generator().manual_seed(seed)
    h, hkv, d = H_LOCAL * world, layer["hkv"], layer["d"]
    base2 = "base: 2" in layer["extra"]
    token_major = "token_major" in layer["extra"]
    B = len(CONTEXT_LENS)
    # The whole problem, the same on every rank: context + one new token per request.
    k = [torch.randn(n + 1, hkv, d, generator=gen).to(dt) for n in CONTEXT_LENS]
    v = [torch.randn(n + 1, hkv, d, generator=gen).to(dt) for n in CONTEXT_LENS]
    q = torch.randn(B, h, d, generator=gen).to(dt).to(dev)
    mine = slice(rank * H_LOCAL, (rank + 1) * H_LOCAL)
    lens_dev = torch.tensor(CONTEXT_LENS, dtype=torch.int32, device=dev)

    dcp = D.DcpAttention(spec(layer, H_LOCAL), interleave_size=interleave, db=db, device=rank)
    whole = attnc.Attention(spec(layer, h), db=db, device=rank)
    # Workspace for split-KV (the split decode and its combine write the LSEs DCP corrects).
    dcp.context.reserve(batch=B, max_seqlen_k=D.max_local_seq_len(max(CONTEXT_LENS), world, interleave))
    whole.reserve(batch=B, max_seqlen_k=max(CONTEXT_LENS) + 1)
    try:
        # This rank's shard of every request's context, by the documented arithmetic.
        shard_k, shard_v = [], []
        for b, n in enumerate(CONTEXT_LENS):
            local = D.local_seq_lens(n, world, rank, interleave)
            pos = [D.global_position(j, rank, world, interleave) for j in range(local)]
            assert all(D.rank_of(p, world, interleave) == rank and p < n for p in pos)
            idx = torch.tensor(pos, dtype=torch.long)
            shard_k.append(k[b][idx])
            shard_v.append(v[b][idx])
        kc, vc, bt = paged(torch, shard_k, shard_v, dt, dev, gen)

        # The new tokens' pass (one key each) on the context layer, this rank's heads of it.
        nk, nv, nbt = paged(torch, [x[-1:] for x in k], [x[-1:] for x in v], dt, dev, gen)
        ones = torch.ones(B, dtype=torch.int32, device=dev)
        n_out, n_lse = dcp.context.decode(q, nk, nv, nbt, ones, 1)
        new_out = n_out[:, mine].contiguous()
        new_lse = (n_lse[:, mine].t() if token_major else n_lse[mine]).contiguous()

        out = torch.full((B, H_LOCAL, d), float("nan"), dtype=dt, device=dev)
        out_lse = torch.full((H_LOCAL, B), float("nan"), dtype=torch.float32, device=dev)
        out, out_lse = dcp.decode(q[:, mine], kc, vc, bt, lens_dev, max(CONTEXT_LENS), new_out=new_out,
                                  new_lse=new_lse, out=out, out_lse=out_lse)
        ctx, ctx_lse = dcp.decode(q[:, mine], kc, vc, bt, lens_dev, max(CONTEXT_LENS))

        # Single-GPU attnc over the whole cache (context + new token, causal), this rank's heads.
        wk, wv, wbt = paged(torch, k, v, dt, dev, gen)
        w_out = torch.full((B, h, d), float("nan"), dtype=dt, device=dev)
        w_out, w_lse = whole.decode(q, wk, wv, wbt, lens_dev + 1, max(CONTEXT_LENS) + 1, out=w_out)
        w_lse = (w_lse.t() if token_major else w_lse)[mine]
        torch.cuda.synchronize(dev)

        scale = 1 / math.sqrt(d)
        ref, ref_lse = reference(torch, q.cpu(), k, v, [n + 1 for n in CONTEXT_LENS], scale, layer["softcap"])
        cref, cref_lse = reference(torch, q.cpu(), k, v, CONTEXT_LENS, scale, layer["softcap"])
        to_base = 1 / math.log(2) if base2 else 1.0
        errs = [
            check(torch, "dcp+merge vs float64", out.cpu(), ref[:, mine], 2e-2, 2e-2),
            check(torch, "dcp+merge lse vs float64", out_lse.cpu(), ref_lse[:, mine].t() * to_base, 2e-3, 1e-3),
            check(torch, "dcp context vs float64", ctx.cpu(), cref[:, mine], 2e-2, 2e-2),
            check(torch, "dcp context lse vs float64", ctx_lse.cpu(), cref_lse[:, mine].t() * to_base, 2e-3, 1e-3),
            check(torch, "dcp+merge vs single-GPU attnc", out.cpu(), w_out[:, mine].cpu(), 2e-2, 2e-2),
            check(torch, "dcp+merge lse vs single-GPU attnc", out_lse.cpu(), w_lse.cpu(), 2e-3, 1e-3),
        ]
        print(f"RESULT dcp_{layer['name']}_I{interleave} rank {rank}/{world} PASS max_abs_err "
              f"out={errs[0]:.3g} lse={errs[1]:.3g} ctx={errs[2]:.3g} vs_single_gpu={errs[4]:.3g} seed={seed}",
              flush=True)
    finally:
        dcp.close()
        whole.close()


def bench(torch, dist, attnc, rank, world, db):
    """One decode step, B=16 x 32768 context, 32 heads over 8 KV heads (each rank: 16 local heads)
    bf16 d128, interleave 16: DCP on `world` GPUs (shard pass + collectives + correction) beside
    single-GPU decode over the whole cache. CUDA events, median of 20 after 3 warm-ups."""
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
    dcp.context.reserve(batch=B, max_seqlen_k=local)

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


def rank_main(rank, world, port, do_bench):
    import torch
    import torch.distributed as dist
    import attnc
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            device_id=torch.device("cuda", rank))
    try:
        seed = torch.tensor([int.from_bytes(os.urandom(4), "little") if rank == 0 else 0], device="cuda")
        dist.broadcast(seed, 0)
        with tempfile.TemporaryDirectory() as tmp:
            db = os.path.join(tmp, f"attnc-{rank}.db")
            for layer in LAYERS:
                for interleave in (1, 16):
                    run_case(torch, dist, attnc, layer, interleave, rank, world, db, int(seed.item()))
            if do_bench:
                bench(torch, dist, attnc, rank, world, db)
        dist.barrier()
    finally:
        dist.destroy_process_group()


def main():
    import torch
    import torch.multiprocessing as mp
    world = 2
    if torch.cuda.device_count() < world:
        print(f"dcp_two_gpu: needs {world} GPUs, found {torch.cuda.device_count()}")
        return 2
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # the lent machines: no NVLink multicast
    os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(rank_main, args=(world, port, "--no-bench" not in sys.argv), nprocs=world, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
