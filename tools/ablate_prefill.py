#!/usr/bin/env python3
"""What each prefill technique gains, measured one step at a time (issue 10's per-technique table).

Runs `attnc run --config ... --no-check --reps N` on the bench's prefill shapes (B=4 S=4096 Hq=32
Hkv=8 bf16; B=2 at d256) for a ladder of configs, each step adding one technique to the one
before, and prints a markdown table: time, TFLOP/s and the gain over the previous step. The
method is `attnc run`'s (median of back-to-back launches after warm-up), not tools/bench's
do_bench, so read the ratios between rows, not the absolute figures against the bench table.

  tools/ablate_prefill.py [--reps 20] [--attnc PATH]      (on the GPU machine; carry .device-build)
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

B, S, HQ, HKV = 4, 4096, 32, 8

# (label, config override, index of the step it is measured against). Each step changes one thing
# from its base; the last two are alternatives to the ping-pong step, not additions.
SM90 = {"family": "prefill_sm90", "block_m": 128, "warps": 12}
LADDER = [
    ("prefill_sm80: mma.sync, cp.async (its default tile)", {"family": "prefill_sm80"}, None),
    ("prefill_sm90: wgmma + TMA, warp-specialised producer, 2 consumer warpgroups, softmax overlapped "
     "with the next Q·Kᵀ, no ping-pong", dict(SM90, pingpong=False), 0),
    ("+ ping-pong between the consumer warpgroups", dict(SM90, pingpong=True), 1),
    ("ping-pong, 3 K/V stages instead of 2", dict(SM90, pingpong=True, stages=3), 2),
    ("ping-pong, 3 consumer warpgroups (block_m 192) instead of 2", dict(SM90, pingpong=True, block_m=192, warps=16), 2),
]


def spec_text(d, causal):
    return "\n".join([
        "version: 1", f"name: ablate-d{d}-{'causal' if causal else 'none'}", f"head_dim: {d}",
        f"num_q_heads: {HQ}", f"num_kv_heads: {HKV}", "dtype: bf16", f"mask: {'causal' if causal else 'none'}",
        "kernels: [prefill]", ""])


def run(attnc, spec, cfg, batch, reps):
    cmd = [attnc, "run", spec, "--seqlens", ",".join([str(S)] * batch), "--no-check", "--reps", str(reps),
           "--config", json.dumps(cfg), "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:  # a config the planner refuses (shared memory, tile limits): say why, go on
        return None, (p.stderr.strip().splitlines() or ["failed"])[-1]
    j = json.loads(p.stdout)
    return j, j["entry"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--attnc", default=None, help="the attnc binary (default: .device-build, then build-portable)")
    ap.add_argument("--shapes", default="64:causal,128:causal,128:none,256:causal",
                    help="head_dim:mask pairs, comma-separated")
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    attnc = a.attnc or next((p for p in (os.path.join(root, ".device-build/tools/attnc"),
                                         os.path.join(root, "build-portable/tools/attnc")) if os.access(p, os.X_OK)),
                            None)
    if not attnc:
        sys.exit("ablate_prefill: no attnc binary (carry .device-build or pass --attnc)")
    work = tempfile.mkdtemp(prefix="attnc-ablate-")
    os.environ.setdefault("ATTNC_CACHE_DIR", os.path.join(work, "cache"))
    print("| shape | step | kernel | ms | TFLOP/s | × its base step |")
    print("|---|---|---|---|---|---|")
    shapes = []
    for shape in a.shapes.split(","):
        d, _, mask = shape.partition(":")
        if not d.isdigit() or mask not in ("causal", "none"):
            ap.error(f"--shapes: '{shape}' is not head_dim:mask (mask causal or none), e.g. 128:causal")
        shapes.append((int(d), mask))
    for d, mask in shapes:
        causal = mask == "causal"
        spec = os.path.join(work, f"d{d}-{mask}.yaml")
        with open(spec, "w") as f:
            f.write(spec_text(d, causal))
        batch = 2 if d >= 256 else B
        times = []
        for label, cfg, base in LADDER:
            j, entry = run(attnc, spec, cfg, batch, a.reps)
            times.append(j["time_ms"] if j else None)
            name = f"d{d} {mask} B{batch} S{S}"
            if j is None:
                print(f"| {name} | {label} | refused: {entry} | - | - | - |", flush=True)
                continue
            gain = f"{times[base] / j['time_ms']:.2f}" if base is not None and times[base] else "-"
            print(f"| {name} | {label} | {entry} | {j['time_ms']:.3f} | {j['tflops']:.0f} | {gain} |", flush=True)

if __name__ == "__main__":
    main()
