#!/usr/bin/env python3
"""Plot bench_pack_cpu results: GB/s against packed bytes, one panel per shape, gcomm vs Open MPI
vs memcpy, pack (solid) and unpack (dashed).

usage: python3 bench/plot_pack_cpu.py [--csv docs/data/pack_cpu.csv] [--out docs/img/pack_cpu.png]
                                      [--title TEXT]
Needs matplotlib (Debian: python3-matplotlib).
"""
import argparse
import csv
import math
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

SHAPE_TITLES = {
    "vector_bl1": "vector, blocklength 1",
    "vector_bl16": "vector, blocklength 16",
    "vector_bl256": "vector, blocklength 256",
    "lower_tri": "lower-triangular (indexed)",
    "subarray4d": "4-D subarray (inner half)",
    "struct": "array of struct {d,i,i,c}",
    "transpose": "transpose (vector of vectors)",
}


def size_label(b):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if b >= 1 << shift:
            v = b / (1 << shift)
            return f"{v:.0f}{unit}" if abs(v - round(v)) < 0.05 else f"{v:.1f}{unit}"
    return str(b)


def load(path):
    data = defaultdict(lambda: defaultdict(list))  # shape -> op -> rows
    order = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            shape = row["shape"]
            if shape not in order:
                order.append(shape)
            data[shape][row["op"]].append(
                (int(row["bytes"]), float(row["gcomm_GBps"]), float(row["mpi_GBps"]),
                 float(row["memcpy_GBps"])))
    for shape in data:
        for op in data[shape]:
            data[shape][op].sort()
    return order, data


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", default="docs/data/pack_cpu.csv")
    ap.add_argument("--out", default="docs/img/pack_cpu.png")
    ap.add_argument("--title", default="gcomm_pack/unpack vs Open MPI MPI_Pack/Unpack vs memcpy, "
                    "host memory (GB/s of packed bytes)")
    args = ap.parse_args()

    order, data = load(args.csv)
    n = len(order)
    cols = 4 if n > 4 else max(n, 1)
    rows = math.ceil((n + 1) / cols)  # one spare panel for the legend
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.4 * rows), squeeze=False,
                             sharey=True)
    flat = [ax for r in axes for ax in r]
    handles = None
    all_x = [p[0] for s in data.values() for op in s.values() for p in op]
    lo, hi = min(all_x), max(all_x)
    for ax, shape in zip(flat, order):
        for op, style in (("pack", "-"), ("unpack", "--")):
            pts = data[shape].get(op, [])
            if not pts:
                continue
            x = [p[0] for p in pts]
            ax.plot(x, [p[1] for p in pts], style, color="C0", marker="o", ms=3,
                    label=f"gcomm {op}")
            ax.plot(x, [p[2] for p in pts], style, color="C1", marker="s", ms=3,
                    label=f"Open MPI {op}")
            if op == "pack":
                ax.plot(x, [p[3] for p in pts], ":", color="0.4", marker=".", ms=3,
                        label="memcpy (same bytes)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(SHAPE_TITLES.get(shape, shape), fontsize=10)
        ax.grid(True, which="major", alpha=0.4)
        ax.grid(True, which="minor", alpha=0.15)
        ticks = [1 << k for k in range(10, 31, 2) if lo / 2 <= 1 << k <= hi * 2]
        if len(ticks) > 6:
            ticks = ticks[::2]
        ax.set_xticks(ticks)
        ax.set_xticklabels([size_label(t) for t in ticks], fontsize=8)
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.tick_params(axis="y", labelsize=8, labelleft=True)
        ax.set_xlabel("packed bytes", fontsize=8)
        ax.set_ylabel("GB/s", fontsize=8)
        handles = ax.get_legend_handles_labels()
    for ax in flat[n:]:
        ax.axis("off")
    if handles and n < len(flat):
        flat[n].legend(*handles, loc="center", fontsize=10, frameon=False)
    fig.suptitle(args.title, fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
