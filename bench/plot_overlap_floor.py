#!/usr/bin/env python3
"""Plots the overlap benchmark's ratio (both phases / max(compute only, exchange only)) against
the amount of computation (factors of the calibrated crossover) for gcomm's exchange and the
floor (bench_overlap --exchange floor) at several ranks per SM, one panel per workload, with the
issue's targets. Input: the combined CSV of docs/data/overlap_floor_h100x2_2026-11-27.csv
(columns call, gpus, exchange, ranks_per_sm, poll, then bench_overlap's own); rows of one GPU
count and one run length; for each (exchange, ranks per SM, threads) the latest call's.

usage: plot_overlap_floor.py OUT_PNG CSV [GPUS [ITERS]]   (defaults: 2 GPUs, 10000 iterations)"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

TARGETS = {"compute": 1.25, "memory": 1.10}


def series(path, gpus, iters):
    """{(exchange, ranks_per_sm, threads): {workload: [(factor, ratio)]}}, latest call each."""
    rows = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["mode"] != "both" or r["gpus"] != gpus or r["iters"] != iters:
                continue
            key = (r["exchange"], int(r["ranks_per_sm"]), int(r["threads"]))
            rows.setdefault(key, {}).setdefault(r["call"], []).append(r)
    out = {}
    for key, calls in rows.items():
        for r in calls[max(calls)]:
            out.setdefault(key, {}).setdefault(r["workload"], []).append(
                (float(r["factor"]), float(r["ratio"])))
    return out


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out, path = sys.argv[1], sys.argv[2]
    gpus = sys.argv[3] if len(sys.argv) > 3 else "2"
    iters = sys.argv[4] if len(sys.argv) > 4 else "10000"
    data = series(path, gpus, iters)
    if not data:
        sys.exit("plot_overlap_floor.py: no 'both' rows for %s GPUs, %s iterations" % (gpus, iters))
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6))
    for ax, wl in zip(axes, ("compute", "memory")):
        for (ex, rps, thr), by_wl in sorted(data.items()):
            pts = sorted(by_wl.get(wl, []))
            if not pts:
                continue
            style = "-o" if ex == "floor" else "--s"
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style,
                    label="%s, %d x %d per SM" % (ex, rps, thr))
        ax.axhline(TARGETS[wl], color="k", lw=0.8, ls=":", label="target %.2f" % TARGETS[wl])
        ax.axhline(1.0, color="grey", lw=0.6)
        ax.set_xscale("log", base=2)
        ax.set_xticks([1, 2, 4], ["1", "2", "4"])
        ax.set_xlabel("computation, x the crossover (compute only = exchange only)")
        ax.set_ylabel("both / max(compute only, exchange only)")
        ax.set_title("%s-bound, %s GPU(s), %s iterations" % (wl, gpus, iters))
        ax.legend(fontsize=8)
        ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()
