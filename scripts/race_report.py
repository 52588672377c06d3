#!/usr/bin/env python3
"""Summarizes a scripts/compare-rocksdb.sh run: the table (median over
rounds) and an SVG chart (ratios per benchmark; fillrandom throughput
over time). Standard library only.

usage: race_report.py OUT_DIR ROUNDS NUM ENTRY_BYTES FLAGS
"""
import os
import re
import statistics
import sys

ENGINES = ("rocksdb", "strata")
LINE = re.compile(r"^(\S+)\s+:\s+[\d.]+ micros/op (\d+) ops/sec [\d.]+ seconds (\d+) operations;")


def results(path):
    """[(benchmark, ops_per_sec, ops)] of a bench output, in order."""
    out = []
    try:
        with open(path) as f:
            for line in f:
                m = LINE.match(line)
                if m:
                    out.append((m.group(1), int(m.group(2)), int(m.group(3))))
    except FileNotFoundError:
        pass
    return out


def read_time(path):
    """(peak RSS KiB, blocks written) from `/usr/bin/time -f "%M %O"`."""
    try:
        with open(path) as f:
            last = f.read().strip().splitlines()[-1].split()
        return int(last[0]), int(last[1])
    except (FileNotFoundError, IndexError, ValueError):
        return None


def median(xs):
    return statistics.median(xs) if xs else None


def main():
    out_dir, rounds, num, entry = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    flags = sys.argv[5] if len(sys.argv) > 5 else ""
    ops = {e: {} for e in ENGINES}  # engine -> bench -> [ops/sec]
    order = []
    extra = {e: {"wamp": [], "size": [], "rss": []} for e in ENGINES}
    for e in ENGINES:
        for r in range(1, rounds + 1):
            user_bytes = 0
            for phase in ("writes", "reads"):
                for name, rate, n in results(os.path.join(out_dir, f"{e}.r{r}.{phase}.txt")):
                    ops[e].setdefault(name, []).append(rate)
                    if name not in order:
                        order.append(name)
                    if phase == "writes":
                        user_bytes += n * entry
            w = read_time(os.path.join(out_dir, f"{e}.r{r}.writes.time"))
            rd = read_time(os.path.join(out_dir, f"{e}.r{r}.reads.time"))
            if w and user_bytes:
                extra[e]["wamp"].append(w[1] * 512 / user_bytes)
            rss = [t[0] for t in (w, rd) if t]
            if rss:
                extra[e]["rss"].append(max(rss))
            try:
                with open(os.path.join(out_dir, f"{e}.r{r}.size")) as f:
                    extra[e]["size"].append(int(f.read().strip()))
            except (FileNotFoundError, ValueError):
                pass

    rows = []
    print(f"Strata vs RocksDB db_bench (binary above), median of {rounds} round(s), --num={num}")
    print(f"flags: {flags}")
    print()
    print("| benchmark | RocksDB ops/sec | Strata ops/sec | ratio |")
    print("|---|---:|---:|---:|")
    for name in order:
        r, s = median(ops["rocksdb"].get(name, [])), median(ops["strata"].get(name, []))
        ratio = s / r if r and s else None
        rows.append((name, ratio))
        fmt = lambda v: f"{v:,.0f}" if v is not None else "-"
        print(f"| {name} | {fmt(r)} | {fmt(s)} | {ratio:.2f} |" if ratio else f"| {name} | {fmt(r)} | {fmt(s)} | - |")
    print()
    print("| measure | RocksDB | Strata |")
    print("|---|---:|---:|")
    m = {e: {k: median(v) for k, v in extra[e].items()} for e in ENGINES}
    def cell(v, f):
        return f.format(v) if v is not None else "-"
    print(f"| write amplification (disk bytes written by the write phase / user bytes) | {cell(m['rocksdb']['wamp'], '{:.2f}')} | {cell(m['strata']['wamp'], '{:.2f}')} |")
    print(f"| size on disk after the write phase (bytes) | {cell(m['rocksdb']['size'], '{:,.0f}')} | {cell(m['strata']['size'], '{:,.0f}')} |")
    print(f"| peak RSS (MiB) | {cell(m['rocksdb']['rss'] and m['rocksdb']['rss'] / 1024, '{:.1f}')} | {cell(m['strata']['rss'] and m['strata']['rss'] / 1024, '{:.1f}')} |")

    timelines = {}
    for e in ENGINES:
        pts = []
        try:
            with open(os.path.join(out_dir, f"{e}.timeline.csv")) as f:
                next(f, None)
                for line in f:
                    a, b = line.strip().split(",")
                    pts.append((int(a), int(b)))
        except (FileNotFoundError, ValueError):
            pass
        timelines[e] = pts
    with open(os.path.join(out_dir, "race.svg"), "w") as f:
        f.write(svg(rows, timelines, num))


def svg(rows, timelines, num):
    w, h = 900, 720
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
             f'<rect width="{w}" height="{h}" fill="white"/>',
             f'<text x="20" y="24" font-size="16">Strata / RocksDB throughput ratio (median), --num={num}</text>']
    # Panel 1: horizontal bars of ratios.
    top, left, bar_w = 40, 170, 660
    max_ratio = max([r for _, r in rows if r] + [2.0])
    scale = bar_w / max_ratio
    for i, (name, ratio) in enumerate(rows):
        y = top + i * 28
        parts.append(f'<text x="{left - 8}" y="{y + 15}" text-anchor="end">{name}</text>')
        if ratio:
            color = "#2e7d32" if ratio >= 1.0 else "#c62828"
            parts.append(f'<rect x="{left}" y="{y + 3}" width="{ratio * scale:.1f}" height="18" fill="{color}"/>')
            parts.append(f'<text x="{left + ratio * scale + 6:.1f}" y="{y + 16}">{ratio:.2f}</text>')
    y_end = top + max(len(rows), 1) * 28
    for mark, dash in ((1.0, ""), (1.5, ' stroke-dasharray="4 3"')):
        x = left + mark * scale
        parts.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{y_end}" stroke="black"{dash}/>')
        parts.append(f'<text x="{x:.1f}" y="{y_end + 14}" text-anchor="middle">{mark}</text>')
    # Panel 2: fillrandom ops per second over time.
    ptop = y_end + 60
    pl, pw, ph = 80, 760, h - ptop - 60
    parts.append(f'<text x="20" y="{ptop - 16}" font-size="16">fillrandom throughput over time (ops per second)</text>')
    allpts = [p for pts in timelines.values() for p in pts]
    if allpts:
        tmax = max(t for t, _ in allpts) or 1
        vmax = max(v for _, v in allpts) or 1
        parts.append(f'<line x1="{pl}" y1="{ptop + ph}" x2="{pl + pw}" y2="{ptop + ph}" stroke="black"/>')
        parts.append(f'<line x1="{pl}" y1="{ptop}" x2="{pl}" y2="{ptop + ph}" stroke="black"/>')
        parts.append(f'<text x="{pl - 6}" y="{ptop + 10}" text-anchor="end">{vmax:,}</text>')
        parts.append(f'<text x="{pl - 6}" y="{ptop + ph}" text-anchor="end">0</text>')
        parts.append(f'<text x="{pl + pw}" y="{ptop + ph + 16}" text-anchor="end">{tmax} s</text>')
        colors = {"rocksdb": "#1565c0", "strata": "#ef6c00"}
        for i, (e, pts) in enumerate(timelines.items()):
            if not pts:
                continue
            path = " ".join(f"{pl + t / tmax * pw:.1f},{ptop + ph - v / vmax * ph:.1f}" for t, v in pts)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{colors[e]}" stroke-width="2"/>')
            parts.append(f'<text x="{pl + 10 + i * 120}" y="{ptop + ph + 36}" fill="{colors[e]}">{e}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    main()
