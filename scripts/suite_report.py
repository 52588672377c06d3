#!/usr/bin/env python3
"""Summarizes a scripts/race-suites.sh run: per case, the median ops/sec
of each engine over the rounds and the ratio Strata / RocksDB; for
--histogram cases also the median P99.99 and max latency (micros).
Standard library only.

usage: suite_report.py OUT_DIR ROUNDS SUITE VERSION...
"""
import re
import statistics
import sys

LINE = re.compile(r"^(\S+)\s+:\s+([\d.]+) micros/op (\d+) ops/sec")
P9999 = re.compile(r"P99\.99: ([\d.]+)")
MAX = re.compile(r"Max: ([\d.]+)")


def figures(path):
    """(ops/sec of the last result line, P99.99, max) of one output."""
    ops = p = mx = None
    try:
        with open(path) as f:
            for line in f:
                m = LINE.match(line)
                if m:
                    ops = int(m.group(3))
                    # One long operation (backup, restore): 0 ops/sec
                    # printed; the rate from its duration instead.
                    if ops == 0 and float(m.group(2)) > 0:
                        ops = 1e6 / float(m.group(2))
                m = P9999.search(line)
                if m and p is None:
                    p = float(m.group(1))
                m = MAX.search(line)
                if m and mx is None:
                    mx = float(m.group(1))
    except FileNotFoundError:
        pass
    return ops, p, mx


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, digits=0):
    if x is None:
        return "-"
    return f"{x:,.{digits}f}"


def main():
    out, rounds, suite = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    versions = sys.argv[4:]
    with open(f"{out}/cases.txt") as f:
        cases = [line.rstrip("\n").split("|") for line in f if line.strip()]
    for v in versions:
        try:
            with open(f"{out}/rocksdb-{v}.binary") as f:
                binary = " ".join(f.read().split())
        except FileNotFoundError:
            binary = v
        print(f"SUITE={suite}: Strata vs RocksDB {v}, median of {rounds} round(s)")
        print(f"RocksDB binary: {binary}")
        print()
        print(f"| case | flags | RocksDB {v} ops/sec | Strata ops/sec | ratio |")
        print("|---|---|---:|---:|---:|")
        lat = []
        for i, (name, _prep, meas) in enumerate(cases):
            per = {}
            for e in ("rocksdb", "strata"):
                fs = [figures(f"{out}/{e}-{v}.c{i}.r{r}.txt") for r in range(1, rounds + 1)]
                per[e] = (
                    median([x[0] for x in fs]),
                    median([x[1] for x in fs]),
                    median([x[2] for x in fs]),
                )
            r_ops, s_ops = per["rocksdb"][0], per["strata"][0]
            ratio = f"{s_ops / r_ops:.2f}" if r_ops and s_ops else "-"
            digits = 3 if r_ops is not None and r_ops < 10 else 0
            print(f"| {name} | `{meas}` | {fmt(r_ops, digits)} | {fmt(s_ops, digits)} | {ratio} |")
            if "--histogram" in meas:
                lat.append((name, per))
        if lat:
            print()
            print("| case | RocksDB P99.99 (us) | Strata P99.99 (us) | RocksDB max (us) | Strata max (us) |")
            print("|---|---:|---:|---:|---:|")
            for name, per in lat:
                print(
                    f"| {name} | {fmt(per['rocksdb'][1], 1)} | {fmt(per['strata'][1], 1)} "
                    f"| {fmt(per['rocksdb'][2])} | {fmt(per['strata'][2])} |"
                )
        print()


if __name__ == "__main__":
    main()
