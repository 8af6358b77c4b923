"""Host cost of attnc.vllm's drop-ins on the GPU machine: the first call of a new variant (JIT into
an empty cache, then from SQLite in a fresh variant table) and a warm call (through attnc._fast, the
C warm path, and through the pure-Python one), beside the C API's attnc_attention_run on the same
prepared call (ctypes, the floor any Python caller pays).

    python3 tools/bench_vllm.py [--calls 200]      (prints one JSON object)

Host time per call = wall time of `calls` back-to-back calls (no synchronisation inside) / calls,
the best of 7 rounds; the decode is tiny (batch 8, 256 keys) so the GPU keeps up with the host.
"""
import argparse
import ctypes
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import torch  # noqa: E402

from attnc import _memo, _variants, vllm  # noqa: E402


def per_call(fn, calls, rounds=7):
    best = float("inf")
    for _ in range(rounds):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        best = min(best, (t1 - t0) / calls)
    return best * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=200)
    args = ap.parse_args()
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

    res = {"device": torch.cuda.get_device_name(), "shape": f"decode b{batch} hq{hq} hkv{hkv} d{d} k{kv_len}"}
    with tempfile.TemporaryDirectory() as tmp:
        _variants.set_options(db=os.path.join(tmp, "attnc.db"))
        for label in ("first_call_jit_ms", "first_call_sqlite_ms"):
            _variants.clear()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            dropin()
            torch.cuda.synchronize()
            res[label] = round((time.perf_counter() - t0) * 1e3, 2)
        res["fast_path"] = _memo.set_fast(True)
        dropin()
        res["dropin_us"] = round(per_call(dropin, args.calls), 2)
        _memo.set_fast(False)
        dropin()
        res["dropin_python_path_us"] = round(per_call(dropin, args.calls), 2)
        _memo.set_fast(True)
        descale = torch.ones(1, device=dev).expand(batch, hkv)  # vLLM passes q/k/v_descale views on every call

        def dropin_descales():
            vllm.flash_attn_varlen_func(q, kc, vc, 1, cu, kv_len, seqused_k=su, block_table=bt, causal=True, out=out,
                                        q_descale=descale, k_descale=descale, v_descale=descale)

        dropin_descales()
        res["dropin_with_descales_us"] = round(per_call(dropin_descales, args.calls), 2)

        def kvcache():
            vllm.flash_attn_with_kvcache(q.view(batch, 1, hq, d), kc, vc, cache_seqlens=su, block_table=bt,
                                         causal=True, out=out.view(batch, 1, hq, d), max_seqlen_k=kv_len)

        kvcache()
        res["with_kvcache_us"] = round(per_call(kvcache, args.calls), 2)
        var, c, _, _, _ = vllm.varlen_call(q, kc, vc, 1, cu, kv_len, None, su, None, "causal", 0.0, None, bt, False,
                                           out, 0, None, None)
        run, handle, call = vllm._capi.lib().attnc_attention_run, var.handle, ctypes.byref(c)
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        res["c_api_us"] = round(per_call(lambda: run(handle, call, stream), args.calls), 2)

        def alloc_out():
            vllm.flash_attn_varlen_func(q, kc, vc, 1, cu, kv_len, seqused_k=su, block_table=bt, causal=True)

        res["dropin_alloc_out_us"] = round(per_call(alloc_out, args.calls), 2)
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            dropin()
        torch.cuda.current_stream().wait_stream(s)
        with torch.cuda.graph(g):
            dropin()
        res["graph_replay_us"] = round(per_call(g.replay, args.calls), 2)
        _variants._options.clear()
        _variants.clear()
    res["overhead_vs_c_api_us"] = round(res["dropin_us"] - res["c_api_us"], 2)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
