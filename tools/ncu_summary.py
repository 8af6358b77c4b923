#!/usr/bin/env python3
"""Compact text from one Nsight Compute report's exports, for reading a kernel's limit in a device
call's output: PREFIX.details.txt (`ncu --import R --page details`), PREFIX.raw.csv (`--page raw
--csv`) and PREFIX.src.csv (`--page source --csv --print-source sass`), as tools/ncu-kernel writes
them. Prints the headline metrics, the pipes' utilisation, the stall reasons, where the samples of
the loop body go (instructions executed LOOP times: `--loop-count`, default the most common count
above 100 000), and the N hottest SASS lines with their top stall reasons."""
import argparse
import collections
import csv
import re
import sys

DETAILS = ("Duration", "SM Frequency", "Compute (SM) Throughput", "Issue Slots Busy", "No Eligible",
           "Active Warps Per Scheduler", "Eligible Warps Per Scheduler", "Warp Cycles Per Issued Instruction",
           "Registers Per Thread")


def number(text):
    try:
        return float(str(text).replace(",", ""))
    except ValueError:
        return None


def details(prefix):
    for line in open(prefix + ".details.txt", errors="replace"):
        if any(k in line for k in DETAILS) and len(line) < 160:
            print("  " + " ".join(line.split()))


def raw(prefix):
    rows = list(csv.reader(open(prefix + ".raw.csv", errors="replace")))
    head = next(i for i, r in enumerate(rows) if "ID" in r or "Kernel Name" in r)
    m = dict(zip(rows[head], rows[head + 2]))  # names, units, values
    pipes = sorted(((k, number(v)) for k, v in m.items() if k.endswith(".avg.pct_of_peak_sustained_active")
                    and "pipe" in k and number(v) is not None), key=lambda kv: -kv[1])
    print("  pipes (% of peak, active): " + ", ".join(
        f"{k.removeprefix('sm__').removesuffix('.avg.pct_of_peak_sustained_active')} {v:.1f}" for k, v in pipes[:10]))
    stalls = sorted(((re.sub(r".*issue_stalled_", "", k).removesuffix("_per_issue_active.ratio"), number(v))
                     for k, v in m.items() if k.startswith("smsp__average_warp") and "issue_stalled" in k
                     and k.endswith("_per_issue_active.ratio") and "not_issued" not in k and number(v)), key=lambda kv: -kv[1])
    if not stalls:  # older reports: the sampled counts
        stalls = sorted(((re.sub(r".*issue_stalled_", "", k), number(v)) for k, v in m.items()
                         if k.startswith("smsp__pcsamp_warps_issue_stalled") and not k.endswith("not_issued")
                         and number(v)), key=lambda kv: -kv[1])
    print("  stalls (warps per issue): " + ", ".join(f"{k} {v:.3g}" for k, v in stalls[:10]))


def source(prefix, loop_count, hottest):
    rows = list(csv.reader(open(prefix + ".src.csv", errors="replace")))
    start = next(i for i, r in enumerate(rows) if r and r[0] == "Address")
    head, data = rows[start], [r for r in rows[start + 1:] if len(r) == len(rows[start])]
    col = {name: head.index(name) for name in ("Address", "Source", "Warp Stall Sampling (All Samples)",
                                                 "Instructions Executed")}
    reasons = [i for i, h in enumerate(head) if h.startswith("stall_") and "Not Issued" not in h]
    samples = lambda r: number(r[col["Warp Stall Sampling (All Samples)"]]) or 0
    executed = lambda r: int(number(r[col["Instructions Executed"]]) or 0)
    total = sum(samples(r) for r in data) or 1
    base = int(data[0][col["Address"]], 16)
    counts = collections.Counter(executed(r) for r in data)
    loop = loop_count or max((n for n in counts if n > 100000), key=lambda n: (counts[n], n), default=0)
    body = [r for r in data if executed(r) == loop]
    by_reason = collections.Counter()
    for r in body:
        for i in reasons:
            by_reason[head[i].removeprefix("stall_")] += number(r[i]) or 0
    share = sum(samples(r) for r in body)
    print(f"  loop body: {len(body)} instructions executed {loop} times, {100 * share / total:.1f} % of the samples: "
          + ", ".join(f"{k} {100 * v / total:.1f}" for k, v in by_reason.most_common(8) if v))
    print(f"  hottest {hottest} SASS lines (offset, % of samples, executions, instruction, top stalls):")
    for r in sorted(data, key=lambda r: -samples(r))[:hottest]:
        top = sorted(((head[i].removeprefix("stall_"), number(r[i]) or 0) for i in reasons), key=lambda kv: -kv[1])
        print(f"  {int(r[col['Address']], 16) - base:6x} {100 * samples(r) / total:5.1f} {executed(r):>9} "
              f"{' '.join(r[col['Source']].split())[:56]:56s} " + ", ".join(f"{k} {v:.0f}" for k, v in top[:2] if v))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("prefix", help="the exports' common path, without .details.txt / .raw.csv / .src.csv")
    ap.add_argument("--loop-count", type=int, default=0, help="executions of the loop body's instructions")
    ap.add_argument("--hottest", type=int, default=30)
    a = ap.parse_args()
    print(a.prefix)
    failed = 0
    for part in (details, raw):
        try:
            part(a.prefix)
        except (OSError, StopIteration, IndexError) as e:
            print(f"  ({part.__name__}: {e})")
            failed += 1
    try:
        source(a.prefix, a.loop_count, a.hottest)
    except (OSError, StopIteration, IndexError, ValueError) as e:
        print(f"  (source: {e})")
        failed += 1
    if failed == 3:  # a part may be missing; none readable is a wrong prefix
        sys.stdout.flush()
        print(f"ncu_summary: nothing readable at {a.prefix}: expected {a.prefix}.details.txt, .raw.csv and .src.csv "
              "(what tools/ncu-kernel writes)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
