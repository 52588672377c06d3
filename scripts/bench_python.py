#!/usr/bin/env python3
"""Races strata's Python package against rocksdict (PyPI) in the same run,
same options, fresh databases: single puts, batched puts, gets, and
iteration over the whole database. Prints a Markdown table (medians of
--rounds runs, operations per second, ratio strata/rocksdict) and writes a
bar chart as SVG.

    python3 scripts/bench_python.py --num 200000 --rounds 3 --svg target/bench_python.svg

Needs both packages importable (scripts/bench-python.sh sets up a venv).
"""

import argparse
import os
import shutil
import statistics
import tempfile
import time

import rocksdict
import strata


def workload(mod, path, num, batch):
    results = {}
    keys = [f"key{i:012}" for i in range(num)]
    value = "v" * 100
    db = mod.Rdict(path)
    t = time.perf_counter()
    for k in keys:
        db[k] = value
    results["put (single)"] = num / (time.perf_counter() - t)
    t = time.perf_counter()
    for k in keys:
        db[k]
    results["get"] = num / (time.perf_counter() - t)
    t = time.perf_counter()
    n = 0
    for _k, _v in db.items():
        n += 1
    assert n == num, n
    results["iterate (items)"] = num / (time.perf_counter() - t)
    db.close()
    shutil.rmtree(path)
    db = mod.Rdict(path)
    t = time.perf_counter()
    for start in range(0, num, batch):
        wb = mod.WriteBatch()
        for k in keys[start:start + batch]:
            wb[k] = value
        db.write(wb)
    results[f"put (batches of {batch})"] = num / (time.perf_counter() - t)
    db.close()
    shutil.rmtree(path)
    return results


def svg(rows, path):
    width, bar, gap = 640, 18, 10
    height = 40 + len(rows) * (2 * bar + gap)
    top = max(max(r[1], r[2]) for r in rows)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
           '<text x="10" y="20">ops/s (median): strata (blue) vs rocksdict (grey)</text>']
    y = 35
    for name, s, r in rows:
        for val, color in ((s, "#3060c0"), (r, "#999999")):
            w = int((width - 260) * val / top)
            out.append(f'<rect x="180" y="{y}" width="{w}" height="{bar - 2}" fill="{color}"/>')
            out.append(f'<text x="{185 + w}" y="{y + bar - 6}">{val:,.0f}</text>')
            y += bar
        out.append(f'<text x="10" y="{y - bar + 4}">{name}</text>')
        y += gap
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--num", type=int, default=200000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--svg", default="target/bench_python.svg")
    args = ap.parse_args()
    runs = {"strata": [], "rocksdict": []}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.rounds):
            for name, mod in (("strata", strata), ("rocksdict", rocksdict)):
                runs[name].append(workload(mod, os.path.join(tmp, name), args.num, args.batch))
    rows = []
    print(f"| workload ({args.num} keys, 100-byte values) | strata | rocksdict | ratio |")
    print("|---|---:|---:|---:|")
    for w in runs["strata"][0]:
        s = statistics.median(r[w] for r in runs["strata"])
        r = statistics.median(r[w] for r in runs["rocksdict"])
        rows.append((w, s, r))
        print(f"| {w} | {s:,.0f} | {r:,.0f} | {s / r:.2f} |")
    os.makedirs(os.path.dirname(args.svg) or ".", exist_ok=True)
    svg(rows, args.svg)
    print(f"\nchart: {args.svg}")


if __name__ == "__main__":
    main()
