#!/usr/bin/env python3
# The 8-bit prefill anchor for issue 12's int8 row: cuDNN's per-tensor fp8 (e4m3) SDPA forward
# beside cuDNN bf16 on the int8 bench's shape (hd128 B4 S4096 Hq32 Hkv8 causal), medians of triton's
# do_bench as tools/bench.py takes them. torch exposes no fp8 SDPA, so the fp8 graph goes through
# the cudnn frontend's Python package (`nvidia-cudnn-frontend`, over the cuDNN torch ships); the
# GPU machine has no network, so carry the wheel and pass its unpacked folder as --frontend.
"""cuDNN fp8 and bf16 SDPA forward, same process, same shape: the 8-bit anchor for int8 prefill."""
import argparse
import json
import math
import sys


def parse():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--frontend", help="folder holding the cudnn frontend package (import cudnn)")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seqlen", type=int, default=4096)
    ap.add_argument("--hq", type=int, default=32)
    ap.add_argument("--hkv", type=int, default=8)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--no-causal", dest="causal", action="store_false")
    ap.add_argument("--profile-launches", type=int, default=0, metavar="N",
                    help="only launch the fp8 graph N times, untimed (for a profiler)")
    a = ap.parse_args()
    if a.profile_launches < 0:
        ap.error(f"--profile-launches must be 0 or more, got {a.profile_launches}")
    for name in ("batch", "seqlen", "hq", "hkv", "dim"):
        if getattr(a, name) <= 0:
            ap.error(f"--{name} must be positive, got {getattr(a, name)}")
    if a.hq % a.hkv:
        ap.error(f"--hq ({a.hq}) must be a multiple of --hkv ({a.hkv})")
    return a


def fp8_graph(cudnn, handle, q, k, v, o, causal):
    """cuDNN's per-tensor fp8 forward over [B, H, S, D]-shaped views (strides of [B, S, H, D])."""
    f32 = cudnn.data_type.FLOAT
    g = cudnn.pygraph(io_data_type=cudnn.data_type.FP8_E4M3, intermediate_data_type=f32,
                      compute_data_type=f32, handle=handle)
    tq, tk, tv = (g.tensor_like(t) for t in (q, k, v))
    scalars = [g.tensor(dim=(1, 1, 1, 1), stride=(1, 1, 1, 1), data_type=f32) for _ in range(6)]
    to, _, amax_s, amax_o = g.sdpa_fp8(q=tq, k=tk, v=tv, descale_q=scalars[0], descale_k=scalars[1],
                                       descale_v=scalars[2], descale_s=scalars[3], scale_s=scalars[4],
                                       scale_o=scalars[5], is_inference=True,
                                       attn_scale=1.0 / math.sqrt(q.shape[-1]), use_causal_mask=causal)
    to.set_output(True).set_dim(list(o.shape)).set_stride(list(o.stride()))  # Hopper: fp8 O
    for t in (amax_s, amax_o):
        t.set_output(True).set_dim([1, 1, 1, 1]).set_stride([1, 1, 1, 1]).set_data_type(f32)
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    g.check_support()
    g.build_plans()
    return g, (tq, tk, tv, to, amax_s, amax_o, scalars)


def measure(frontend, b, s, hq, hkv, d, causal, profile_launches=0):
    """cuDNN bf16 (torch SDPA's cuDNN backend, as tools/bench.py) and cuDNN fp8 on one shape: ms,
    TFLOP/s and the fp8 output's rel L2 error against fp32 attention over the same fp8 inputs. With
    profile_launches, only the fp8 graph, launched that many times and not timed."""
    if frontend:
        sys.path.insert(0, frontend)
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from triton.testing import do_bench
    import cudnn

    dev = "cuda"
    # FLOPs as tools/bench.py counts them: 4 B H S^2 D, halved for causal.
    flops = 4 * b * hq * s * s * d / (2 if causal else 1)
    gen = torch.Generator(device=dev).manual_seed(1)

    def bshd(h, dtype):  # [B, S, H, D] storage, [B, H, S, D] view
        return torch.randn(b, s, h, d, device=dev, generator=gen).to(dtype).transpose(1, 2)

    def median_ms(fn):
        return do_bench(fn, warmup=50, rep=200, return_mode="median")

    out = {"shape": f"hd{d} B{b} S{s} Hq{hq} Hkv{hkv} {'causal' if causal else 'no mask'}",
           "cudnn": cudnn.backend_version(), "torch": torch.__version__}
    q16, k16, v16 = bshd(hq, torch.bfloat16), bshd(hkv, torch.bfloat16), bshd(hkv, torch.bfloat16)
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
        if not profile_launches:
            out["cudnn_bf16_ms"] = median_ms(lambda: F.scaled_dot_product_attention(
                q16, k16, v16, is_causal=causal, enable_gqa=hq != hkv))

    handle = cudnn.create_handle()
    cudnn.set_stream(handle=handle, stream=torch.cuda.current_stream().cuda_stream)
    q8, k8, v8 = (t.to(torch.float8_e4m3fn) for t in (q16, k16, v16))
    o8 = torch.empty(b, s, hq, d, device=dev, dtype=torch.float8_e4m3fn).transpose(1, 2)
    g, (tq, tk, tv, to, amax_s, amax_o, scalars) = fp8_graph(cudnn, handle, q8, k8, v8, o8, causal)
    one = torch.ones(1, 1, 1, 1, device=dev, dtype=torch.float32)
    pack = {tq: q8, tk: k8, tv: v8, to: o8, amax_s: torch.empty_like(one), amax_o: torch.empty_like(one)}
    pack.update({t: one for t in scalars})
    ws = torch.empty(g.get_workspace_size(), device=dev, dtype=torch.uint8)
    if profile_launches:
        for _ in range(profile_launches):
            g.execute(pack, ws, handle=handle)
        torch.cuda.synchronize()
        return dict(out, profile_launches=profile_launches)
    out["cudnn_fp8_ms"] = median_ms(lambda: g.execute(pack, ws, handle=handle))
    # A sanity check that the fp8 graph computed this attention (its error includes the fp8 output).
    ref = F.scaled_dot_product_attention(q8.float(), k8.float(), v8.float(), is_causal=causal, enable_gqa=hq != hkv)
    out["fp8_rel_l2_vs_fp32"] = float((o8.float() - ref).norm() / ref.norm())
    for key in ("bf16", "fp8"):
        out[f"cudnn_{key}_tflops"] = flops / out[f"cudnn_{key}_ms"] / 1e9
    out["fp8_over_bf16"] = out["cudnn_bf16_ms"] / out["cudnn_fp8_ms"]
    return out


def main():
    a = parse()
    print(json.dumps(measure(a.frontend, a.batch, a.seqlen, a.hq, a.hkv, a.dim, a.causal, a.profile_launches),
                     indent=1))


if __name__ == "__main__":
    main()
