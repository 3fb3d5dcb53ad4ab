#!/usr/bin/env python3
"""Plots bench_overlap --sweep as the dCUDA paper's Figs. 7 and 8: time per iteration against the
amount of computation, for compute only, both phases and exchange only, with the two lines the
'both' curve is judged by: perfect overlap, max(compute, exchange), and the dependency bound,
max(compute, exchange, compute alone + exchange alone). One row per CSV (a configuration), one
column per workload.

usage: plot_overlap.py OUT_PNG LABEL=CSV [LABEL=CSV ...]"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def points(path, workload):
    """{amount: {mode: us}} of one workload."""
    pts = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["workload"] == workload:
                pts.setdefault(int(r["amount"]), {})[r["mode"]] = float(r["median_us_per_iter"])
    return sorted(pts.items())


def main():
    if len(sys.argv) < 3 or any("=" not in a for a in sys.argv[2:]):
        sys.exit(__doc__)
    out, runs = sys.argv[1], [a.split("=", 1) for a in sys.argv[2:]]
    fig, axes = plt.subplots(len(runs), 2, figsize=(12, 4.2 * len(runs)), squeeze=False)
    for row, (label, path) in enumerate(runs):
        for col, (wl, unit) in enumerate((("compute", "Newton-Raphson steps per element"),
                                          ("memory", "bytes copied per rank and iteration"))):
            ax = axes[row][col]
            p = [(a, m) for a, m in points(path, wl) if {"both", "compute", "exchange"} <= m.keys()]
            if not p:
                ax.set_visible(False)
                continue
            x = [a for a, _ in p]
            c = [m["compute"] for _, m in p]
            e = [m["exchange"] for _, m in p]
            both = [m["both"] for _, m in p]
            ax.plot(x, c, "o-", label="compute only")
            ax.plot(x, both, "s-", label="both phases")
            ax.plot(x, e, "--", color="gray", label="exchange only")
            ax.plot(x, [max(a, b) for a, b in zip(c, e)], ":", color="green",
                    label="perfect overlap: max")
            if all("compute_alone" in m and "exchange_alone" in m for _, m in p):
                bound = [max(m["compute"], m["exchange"],
                             m["compute_alone"] + m["exchange_alone"]) for _, m in p]
                ax.plot(x, bound, "-.", color="red",
                        label="dependency bound: alone compute + exchange")
            ax.set_xlabel(unit)
            ax.set_ylabel("us per iteration")
            ax.set_ylim(bottom=0)
            ax.set_title(f"{label}: {wl}-bound")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=80)


if __name__ == "__main__":
    main()
