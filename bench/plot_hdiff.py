#!/usr/bin/env python3
"""Plots the horizontal diffusion sweep of scripts/rma-check.sh --apps (hdiff_sweep.csv): time per
iteration of hdiff_gcomm (typed halos and one put per line) and of its MPI-CUDA twin over the lines
per GPU, with the twin's halo-exchange share on a second axis.

usage: plot_hdiff.py SWEEP_CSV OUT_PNG [TITLE]"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    with open(sys.argv[1], newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["gcomm_us"] and r["twin_us"]]
    title = sys.argv[3] if len(sys.argv) > 3 else "horizontal diffusion, 128 x nj x 26 per GPU"
    nj = [int(r["nj_per_gpu"]) for r in rows]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.plot(nj, [float(r["gcomm_us"]) for r in rows], "o-", label="gcomm, typed halos")
    lined = [r for r in rows if r.get("gcomm_lines_us")]  # the variant is not run at every size
    if lined:
        ax.plot([int(r["nj_per_gpu"]) for r in lined], [float(r["gcomm_lines_us"]) for r in lined],
                "s--", label="gcomm, one put per line")
    ax.plot(nj, [float(r["twin_us"]) for r in rows], "^-", label="MPI-CUDA twin")
    ax.plot(nj, [float(r["twin_halo_us"]) for r in rows], ":", color="gray",
            label="twin's halo exchange")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("lines (nj) per GPU")
    ax.set_ylabel("time per iteration (µs)")
    ax.set_title(title)
    share = ax.twinx()
    share.plot(nj, [100 * float(r["twin_halo_share"]) for r in rows], "x", color="black",
               label="twin's halo share")
    share.axhline(20, color="black", linewidth=0.5)
    share.set_ylabel("twin's halo share (%)")
    share.set_ylim(0, 100)
    lines = ax.get_legend_handles_labels()
    more = share.get_legend_handles_labels()
    ax.legend(lines[0] + more[0], lines[1] + more[1], loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
