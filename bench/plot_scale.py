#!/usr/bin/env python3
"""Plots the weak scaling of scripts/scale-check.sh (weak_scaling.csv): for each mini-app and size,
time per iteration of the gcomm program and of its MPI-CUDA twin over the GPUs, the twin's
halo-exchange time dotted. A fixed domain per GPU: flat lines are perfect weak scaling.

usage: plot_scale.py WEAK_CSV OUT_PNG [TITLE]"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    with open(sys.argv[1], newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["gcomm_us"]]
    title = sys.argv[3] if len(sys.argv) > 3 else "weak scaling, a fixed domain per GPU"
    # one panel per (app, size), in the order the script ran them
    keys = []
    for r in rows:
        k = (r["app"], r["nj_per_gpu"])
        if k not in keys:
            keys.append(k)
    fig, axes = plt.subplots(1, len(keys), figsize=(4.2 * len(keys), 3.8), squeeze=False)
    for ax, (app, size) in zip(axes[0], keys):
        sel = [r for r in rows if (r["app"], r["nj_per_gpu"]) == (app, size)]
        gpus = [int(r["gpus"]) for r in sel]
        ax.plot(gpus, [float(r["gcomm_us"]) for r in sel], "o-", label="gcomm")
        twin = [r for r in sel if r["twin_us"]]
        if twin:
            tg = [int(r["gpus"]) for r in twin]
            ax.plot(tg, [float(r["twin_us"]) for r in twin], "^-", label="MPI-CUDA twin")
            ax.plot(tg, [float(r["twin_halo_us"]) for r in twin], ":", color="gray",
                    label="twin's halo exchange")
        ax.set_xscale("log", base=2)
        ax.set_xticks(gpus)
        ax.set_xticklabels([str(g) for g in gpus])
        ax.set_ylim(bottom=0)
        ax.set_xlabel("GPUs")
        ax.set_ylabel("time per iteration (µs)")
        per = f"nj = {size} per GPU" if app == "hdiff" else size.replace("/rank", " lines per rank")
        ax.set_title(f"{app}, {per}", fontsize=10)
        ax.legend(fontsize=8, loc="lower right")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
