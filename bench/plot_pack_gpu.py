#!/usr/bin/env python3
"""Plot bench_pack_gpu results: one panel per case, gcomm against the peer measured in the same run.

Cases with several sizes (vectors, triangles, transposes) are lines of GB/s against packed bytes
(gcomm solid, peers dashed, cudaMemcpy dotted; pack and unpack as separate gcomm lines); cases with
one size per shape (subarrays, structs, pinned host memory, small packs) are bars; case 10 is GB/s
against the thread-block limit. GB/s count 2 x packed bytes (read + write) for device copies and the
packed bytes once over the host link (case 8); small packs are in microseconds.

usage: python3 bench/plot_pack_gpu.py [--csv docs/data/pack_gpu.csv] [--out docs/img/pack_gpu.png]
                                      [--title TEXT]
Needs matplotlib (Debian: python3-matplotlib).
"""
import argparse
import csv
import math
import os
from collections import OrderedDict, defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

CASE_TITLES = {
    1: "1: vector, device to device",
    2: "2: vector of 8-B blocks",
    3: "3: lower triangle (indexed)",
    4: "4: stair-256 triangle",
    5: "5: 4-D subarrays of 64^4",
    6: "6: array of struct {d,i,i,c}",
    7: "7: small packs (<= 4 KB), blocking",
    8: "8: pack into pinned host memory",
    9: "9: transpose (gcomm_copy)",
    10: "10: thread-block limit, vector 2 KB blocks",
}
LINE_CASES = (1, 2, 3, 4, 9)
BAR_CASES = (5, 6, 7, 8)


def size_label(b):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if b >= 1 << shift:
            v = b / (1 << shift)
            return f"{v:.0f}{unit}" if abs(v - round(v)) < 0.05 else f"{v:.1f}{unit}"
    return str(b)


def load(path):
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            for k in ("case", "bytes", "param"):
                r[k] = int(r[k])
            for k in ("gcomm_s", "peer_s", "memcpy_s", "gcomm_GBps", "peer_GBps", "memcpy_GBps",
                      "ratio", "target"):
                r[k] = float(r[k])
            rows.append(r)
    return rows


def mean(v):
    return sum(v) / len(v)


def log_bytes_axis(ax, xs):
    lo, hi = min(xs), max(xs)
    ticks = [1 << k for k in range(10, 36) if lo / 2 <= (1 << k) <= hi * 2]
    ax.set_xscale("log", base=2)
    if ticks:
        ax.set_xticks(ticks)
        ax.set_xticklabels([size_label(t) for t in ticks], fontsize=8)
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_xlabel("packed bytes", fontsize=8)


def log_ticks(ax):
    """Labels at 1, 2, 5 x 10^k on a log y axis."""
    ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0), numticks=30))
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())


def style_gbps(ax):
    ax.set_yscale("log")
    log_ticks(ax)
    ax.tick_params(axis="y", labelsize=8)
    ax.set_ylabel("GB/s", fontsize=8)
    ax.grid(True, which="major", alpha=0.4)
    ax.grid(True, which="minor", alpha=0.15)


def plot_lines(ax, rows):
    """gcomm per (shape, op) solid; each peer (and cudaMemcpy) dashed/dotted, averaged per size."""
    gcomm = OrderedDict()
    peers = OrderedDict()
    has_memcpy_peer = any(r["peer"].startswith("memcpy D2D") for r in rows)
    for r in rows:
        gcomm.setdefault((r["shape"], r["op"]), {})[r["bytes"]] = r["gcomm_GBps"]
        peers.setdefault(r["peer"], defaultdict(list))[r["bytes"]].append(r["peer_GBps"])
        if r["memcpy_s"] > 0 and not has_memcpy_peer:
            peers.setdefault("cudaMemcpy", defaultdict(list))[r["bytes"]].append(r["memcpy_GBps"])
    shapes = list(OrderedDict.fromkeys(s for s, _ in gcomm))
    for (shape, op), pts in gcomm.items():
        x = sorted(pts)
        ax.plot(x, [pts[b] for b in x], "-" if op != "unpack" else "--", marker="o", ms=3,
                color=f"C{shapes.index(shape)}", label=f"gcomm {op} {shape}")
    for i, (peer, pts) in enumerate(peers.items()):
        x = sorted(pts)
        ax.plot(x, [mean(pts[b]) for b in x], ":" if "memcpy" in peer.lower() else "-.",
                marker="s", ms=3, color=str(0.2 + 0.2 * (i % 3)), label=peer)
    log_bytes_axis(ax, [b for pts in gcomm.values() for b in pts])
    style_gbps(ax)


def plot_bars(ax, rows, case):
    """Per shape: gcomm, the peer and (when measured) cudaMemcpy."""
    us = case == 7
    groups = OrderedDict()
    for r in rows:
        key = f"{r['shape']}\n{size_label(r['bytes'])}"
        val = (lambda s, gb: s * 1e6) if us else (lambda s, gb: gb)
        bars = [("gcomm", val(r["gcomm_s"], r["gcomm_GBps"])),
                (r["peer"], val(r["peer_s"], r["peer_GBps"]))]
        if r["memcpy_s"] > 0 and not r["peer"].startswith("memcpy D2D"):
            bars.append(("cudaMemcpy", val(r["memcpy_s"], r["memcpy_GBps"])))
        groups[key] = bars
    width = 0.8 / max(len(b) for b in groups.values())
    for g, (key, bars) in enumerate(groups.items()):
        for i, (name, v) in enumerate(bars):
            ax.bar(g + (i - (len(bars) - 1) / 2) * width, v, width,
                   color="C0" if i == 0 else str(0.35 + 0.25 * (i - 1)),
                   label=name if g == 0 else None)
            ax.annotate(f"{v:.3g}", (g + (i - (len(bars) - 1) / 2) * width, v), ha="center",
                        va="bottom", fontsize=6)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(list(groups), fontsize=7)
    values = [v for bars in groups.values() for _, v in bars if v > 0]
    if values and max(values) / min(values) > 20:  # a slow peer: log scale, bars from below it
        ax.set_yscale("log")
        ax.set_ylim(bottom=min(values) / 3)
        log_ticks(ax)
    ax.set_ylabel("microseconds per call" if us else "GB/s", fontsize=8)
    ax.tick_params(axis="y", labelsize=8)
    ax.grid(True, axis="y", alpha=0.4)


def plot_blocks(ax, rows):
    pts = sorted((r["param"], r["gcomm_GBps"], r["peer_GBps"]) for r in rows)
    x = [p[0] for p in pts]
    ax.plot(x, [p[1] for p in pts], "-", marker="o", ms=3, color="C0", label="gcomm pack")
    ax.plot(x, [p[2] for p in pts], ":", marker="s", ms=3, color="0.3", label="cudaMemcpy")
    ax.set_xscale("log", base=2)
    ax.set_xticks(x)
    ax.set_xticklabels([str(v) for v in x], fontsize=7)
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_xlabel("thread blocks (GCOMM_PACK_MAX_BLOCKS; the default, 0, is 8 per SM)", fontsize=8)
    style_gbps(ax)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", default="docs/data/pack_gpu.csv")
    ap.add_argument("--out", default="docs/img/pack_gpu.png")
    ap.add_argument("--title", default="gcomm GPU datatype engine vs CUDA copies doing the same "
                    "work (bench_pack_gpu)")
    args = ap.parse_args()

    rows = load(args.csv)
    by_case = OrderedDict()
    for r in rows:
        by_case.setdefault(r["case"], []).append(r)
    cases = sorted(by_case)
    cols = 4 if len(cases) > 6 else 3 if len(cases) > 2 else max(len(cases), 1)
    nrows = math.ceil(len(cases) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4.6 * cols, 3.7 * nrows), squeeze=False)
    flat = [ax for r in axes for ax in r]
    for ax, case in zip(flat, cases):
        rs = by_case[case]
        if case == 10:
            plot_blocks(ax, rs)
        elif case in BAR_CASES:
            plot_bars(ax, rs, case)
        else:
            plot_lines(ax, rs)
        ax.set_title(CASE_TITLES.get(case, f"case {case}"), fontsize=10)
        ax.legend(fontsize=6, loc="best", framealpha=0.7)
    for ax in flat[len(cases):]:
        ax.axis("off")
    fig.suptitle(args.title, fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    if os.path.dirname(args.out):
        os.makedirs(os.path.dirname(args.out), exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
