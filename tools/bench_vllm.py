"""Host cost of attnc.vllm's drop-ins on the GPU machine: the first call of a new variant (JIT into
an empty cache, then from SQLite in a fresh variant table) and a warm call (through attnc._fast, the
C warm path, and through the pure-Python one), beside the C API's attnc_attention_run on the same
prepared call (ctypes, the floor any Python caller pays).

    python3 tools/bench_vllm.py [--calls 200] [--rounds 41]      (prints one JSON object)

Host time per call = wall time of `calls` back-to-back calls (no synchronisation inside, the GPU
synchronised before each round) / calls; each figure is the median over `rounds` rounds. The
process is pinned to one CPU, and the warm drop-in and the C API call take turns round by round,
so drift (clocks, other processes) moves both: their difference is the median of the per-round
differences. Both sides make the same Python call from a Python function and run the same prepared
decode; the drop-in finds its current stream itself, the C API call is handed it. The decode is
tiny (batch 8, 256 keys) so the GPU keeps up with the host.
"""
import argparse
import ctypes
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import torch  # noqa: E402

from attnc import _memo, _variants, vllm  # noqa: E402


def rounds_of(fns, calls, rounds):
    """Per-call host times (us) of each fn, `rounds` rounds each, the fns taking turns."""
    times = [[] for _ in fns]
    for _ in range(rounds):
        for fn, ts in zip(fns, times):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            ts.append((time.perf_counter() - t0) / calls * 1e6)
    torch.cuda.synchronize()
    return times


def pin_to_one_cpu():
    cpus = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpus[-1]})
    return cpus[-1]


def med(ts):
    return round(statistics.median(ts), 2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=41)
    args = ap.parse_args()

    def per_call(fn):
        return med(rounds_of([fn], args.calls, args.rounds)[0])

    dev = torch.device("cuda")
    batch, hq, hkv, d, page, kv_len = 8, 32, 8, 128, 16, 256
    kc = torch.randn(batch * kv_len // page, page, hkv, d, device=dev, dtype=torch.bfloat16)
    vc = torch.randn_like(kc)
    bt = torch.arange(batch * kv_len // page, dtype=torch.int32, device=dev).view(batch, -1)
    su = torch.full((batch,), kv_len, dtype=torch.int32, device=dev)
    cu = torch.arange(batch + 1, dtype=torch.int32, device=dev)
    q = torch.randn(batch, hq, d, device=dev, dtype=torch.bfloat16)
    out = torch.empty_like(q)

    def dropin():
        vllm.flash_attn_varlen_func(q, kc, vc, 1, cu, kv_len, seqused_k=su, block_table=bt, causal=True, out=out)

    res = {"device": torch.cuda.get_device_name(), "shape": f"decode b{batch} hq{hq} hkv{hkv} d{d} k{kv_len}",
           "pinned_cpu": pin_to_one_cpu(), "calls": args.calls, "rounds": args.rounds}
    with tempfile.TemporaryDirectory() as tmp:
        _variants.set_options(db=os.path.join(tmp, "attnc.db"))
        for label in ("first_call_jit_ms", "first_call_sqlite_ms"):
            _variants.clear()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            dropin()
            torch.cuda.synchronize()
            res[label] = round((time.perf_counter() - t0) * 1e3, 2)
        os.environ["ATTNC_NO_TORCH_SHIM"] = "1"  # the C path reading torch through its Python API
        _memo.set_fast(True)
        dropin()
        res["dropin_no_torch_shim_us"] = per_call(dropin)
        del os.environ["ATTNC_NO_TORCH_SHIM"]
        _memo.set_fast(False)
        dropin()
        res["dropin_python_path_us"] = per_call(dropin)
        res["fast_path"] = _memo.set_fast(True)
        res["torch_shim"] = list(_memo.shim)  # (tensors, stream) read through torch's C shim
        dropin()
        var, c, _, _, _ = vllm.varlen_call(q, kc, vc, 1, cu, kv_len, None, su, None, "causal", 0.0, None, bt, False,
                                           out, 0, None, None)
        run, handle, call = vllm._capi.lib().attnc_attention_run, var.handle, ctypes.byref(c)
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)

        def c_api():
            run(handle, call, stream)

        def c_api_current_stream():  # a Python caller following torch's current stream
            run(handle, call, _memo.stream(dev_index))

        dev_index = torch.cuda.current_device()
        c_api()
        c_api_current_stream()
        dropin_ts, c_api_ts, c_api_cs_ts = rounds_of([dropin, c_api, c_api_current_stream], args.calls, args.rounds)
        res["c_api_current_stream_us"] = med(c_api_cs_ts)
        res["dropin_us"], res["c_api_us"] = med(dropin_ts), med(c_api_ts)
        res["overhead_vs_c_api_us"] = med([a - b for a, b in zip(dropin_ts, c_api_ts)])
        res["overhead_quartiles_us"] = [round(x, 2) for x in statistics.quantiles(
            [a - b for a, b in zip(dropin_ts, c_api_ts)], n=4)]
        descale = torch.ones(1, device=dev).expand(batch, hkv)  # vLLM passes q/k/v_descale views on every call

        def dropin_descales():
            vllm.flash_attn_varlen_func(q, kc, vc, 1, cu, kv_len, seqused_k=su, block_table=bt, causal=True, out=out,
                                        q_descale=descale, k_descale=descale, v_descale=descale)

        dropin_descales()
        res["dropin_with_descales_us"] = per_call(dropin_descales)

        def kvcache():
            vllm.flash_attn_with_kvcache(q.view(batch, 1, hq, d), kc, vc, cache_seqlens=su, block_table=bt,
                                         causal=True, out=out.view(batch, 1, hq, d), max_seqlen_k=kv_len)

        kvcache()
        res["with_kvcache_us"] = per_call(kvcache)

        def alloc_out():
            vllm.flash_attn_varlen_func(q, kc, vc, 1, cu, kv_len, seqused_k=su, block_table=bt, causal=True)

        res["dropin_alloc_out_us"] = per_call(alloc_out)
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            dropin()
        torch.cuda.current_stream().wait_stream(s)
        with torch.cuda.graph(g):
            dropin()
        res["graph_replay_us"] = per_call(g.replay)
        _variants._options.clear()
        _variants.clear()
    print(json.dumps(res))


if __name__ == "__main__":
    main()
