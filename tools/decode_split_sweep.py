#!/usr/bin/env python3
# decode_bw's time by split count over a grid of decode shapes, on the GPU machine: the data the
# split model (generator/decode_model.cpp) is fitted to (docs/kernels-decode.md, "Split counts
# measured"). Inputs are made on the GPU (torch), once per layer and KV length; each split count is
# timed in two passes (ascending, then descending) with L2 flushed before every launch (as triton's
# do_bench does), and the median of both passes is kept beside each pass's own median (their spread
# is the noise). Prints one line per shape; writes the table as JSON to --out.
#   ATTNC_LIB=.device-build/lib/libattnc.so PYTHONPATH=.device-build/python \
#     python3 tools/decode_split_sweep.py [--quick] [--out FILE]
# --quick: only the splits near the heuristic's pick and the per-SM wave boundaries (the second call).
"""decode_bw time by split count over (layer, B, L)."""
import argparse
import json
import os
import tempfile
import time

SMS = 132
# (label, D, Hq, Hkv) and the (B, L) each is swept at.
LAYERS = {
    "d128": (128, 32, 8, [(b, l) for l in (8192, 32768, 131072) for b in (1, 2, 4, 8, 16)]),
    "d128-hq64": (128, 64, 8, [(1, 131072), (4, 32768), (16, 8192)]),
    "d64": (64, 32, 8, [(1, 131072), (4, 32768), (8, 8192), (16, 32768)]),
}
SPLITS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 14, 16, 17, 18, 20, 22, 24, 28, 32, 33, 40, 48, 64]
MAX_BLOCKS = 4 * 2 * SMS  # four waves of two blocks a SM: more splits than this never won


def spec_file(workdir, label, d, hq, hkv):
    path = os.path.join(workdir, f"sweep-{label}.yaml")
    with open(path, "w") as f:
        f.write("\n".join(["version: 1", f"name: sweep-{label}", f"head_dim: {d}", f"num_q_heads: {hq}",
                           f"num_kv_heads: {hkv}", "dtype: bf16",
                           "kv_cache: {dtype: same, layout: NHD, page_size: 16}", "mask: none",
                           "kernels: [decode]", ""]))
    return path


def candidates(b, hkv, heuristic, quick, only):
    if only:
        return sorted(set(only) | {heuristic})
    if quick:  # whole waves of one and two blocks a SM, and their neighbours
        near = set()
        for per_sm in (1, 2, 3, 4):
            s = per_sm * SMS // (b * hkv)
            near |= {s - 1, s, s + 1}
        return sorted({1, heuristic} | {s for s in near if 1 <= s <= 128})
    return sorted({s for s in SPLITS if b * hkv * s <= MAX_BLOCKS} | {1, heuristic})


def timed(fn, flush, reps):
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        flush.zero_()  # the previous launch's K/V out of L2; it also keeps the GPU ahead of the host
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in zip(starts, ends)]


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--layers", default=",".join(LAYERS))
    ap.add_argument("--shapes", default="", help="B:L,B:L (default: each layer's grid)")
    ap.add_argument("--splits", default="", help="N,N,... (default: the grid's list)")
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "decode_split_sweep.json"))
    args = ap.parse_args()
    bad = [x for x in args.layers.split(",") if x not in LAYERS]
    if bad:
        ap.error(f"--layers: unknown {', '.join(bad)} (allowed: {', '.join(LAYERS)})")
    try:
        only = [int(x) for x in args.splits.split(",") if x]
        shapes_arg = [tuple(int(x) for x in s.split(":")) for s in args.shapes.split(",") if s]
    except ValueError:
        ap.error("--splits takes N,N,... and --shapes B:L,B:L,... (integers)")
    if any(len(s) != 2 for s in shapes_arg):
        ap.error("--shapes takes B:L pairs, e.g. 1:131072,8:32768")
    global torch, attnc  # after the arguments: a bad one is refused without the GPU machine's packages
    import torch
    import attnc
    workdir = tempfile.mkdtemp()
    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    rows = []
    t0 = time.time()
    for label in args.layers.split(","):
        d, hq, hkv, shapes = LAYERS[label]
        if shapes_arg:
            shapes = shapes_arg
        a = attnc.Attention(spec_file(workdir, label, d, hq, hkv), db="none", use_tuning=False)
        for L in sorted({l for _, l in shapes}):
            bmax = max(b for b, l in shapes if l == L)
            per = L // 16
            pages = bmax * per + 64
            torch.manual_seed(0)
            kc = torch.randn(pages, 16, hkv, d, dtype=torch.bfloat16, device="cuda")
            vc = torch.randn_like(kc)
            table = torch.randperm(pages, device="cuda")[: bmax * per].reshape(bmax, per).to(torch.int32)
            for b in sorted(b for b, l in shapes if l == L):
                q = torch.randn(b, hq, d, dtype=torch.bfloat16, device="cuda")
                o = torch.empty_like(q)
                bt = table[:b].contiguous()
                used = torch.full((b,), L, dtype=torch.int32, device="cuda")
                a.reserve(b, L)  # every count a call may force
                stream = torch.cuda.current_stream().cuda_stream
                a.decode(q, kc, vc, bt, used, L, out=o, stream=stream)  # loads the kernel before timing
                heuristic = a.select("decode", b, 1, L)["num_splits"]
                splits = candidates(b, hkv, heuristic, args.quick, only)
                call = {s: (lambda s=s: a.decode(q, kc, vc, bt, used, L, out=o, num_splits=s, stream=stream))
                        for s in splits}
                call[heuristic]()
                est = median(timed(call[heuristic], flush, 5))
                reps = max(8, min(40, int(8.0 / est)))
                times = {s: [] for s in splits}
                passes = {s: [] for s in splits}
                for order in (splits, splits[::-1]):
                    for s in order:
                        call[s]()
                        t = timed(call[s], flush, reps)
                        times[s] += t
                        passes[s].append(median(t))
                ms = {s: median(times[s]) for s in splits}
                best = min(ms, key=ms.get)
                row = dict(layer=label, D=d, hq=hq, hkv=hkv, B=b, L=L, heuristic=heuristic, best=best,
                           ms=ms, passes=passes, bytes=2 * b * L * hkv * d * 2)
                rows.append(row)
                print(f"{label} B{b} L{L} heur {heuristic} {ms[heuristic] * 1e3:.1f}us best {best} "
                      f"{ms[best] * 1e3:.1f}us ({ms[heuristic] / ms[best]:.3f}) | " +
                      " ".join(f"{s}:{ms[s] * 1e3:.1f}" for s in splits), flush=True)
            del kc, vc, table
            torch.cuda.empty_cache()
    with open(args.out, "w") as f:
        json.dump(rows, f, indent=1)
    print(f"{len(rows)} shapes in {time.time() - t0:.0f} s -> {args.out}")


if __name__ == "__main__":
    main()
