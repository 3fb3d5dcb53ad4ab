#!/usr/bin/env python3
"""Plots notified-put latency and bandwidth (bench_rma) against NVSHMEM put-with-signal
(bench_nvshmem) from their CSV files: one-way ping-pong time and streaming bandwidth per size.

usage: plot_rma.py RMA_CSV NVSHMEM_CSV OUT_PNG [TITLE]"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def series(data, impl, test):
    pts = [(int(r["bytes"]), float(r["median_us"]), float(r["gbps"]))
           for r in data if r["impl"] == impl and r["test"] == test]
    pts.sort()
    return pts


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    rma, nvs, out = rows(sys.argv[1]), rows(sys.argv[2]), sys.argv[3]
    title = sys.argv[4] if len(sys.argv) > 4 else "notified put, 2x H200 (NV18)"
    fig, (lat, bw) = plt.subplots(1, 2, figsize=(12, 4.5))
    for impl, test, label, style in (
            ("gcomm", "pingpong_same", "gcomm put_notify, same GPU", "o-"),
            ("gcomm", "pingpong_peer", "gcomm put_notify, peer GPU", "s-"),
            ("nvshmem", "pingpong_put_signal", "NVSHMEM put_signal, peer GPU", "^--")):
        p = series(rma if impl == "gcomm" else nvs, impl, test)
        p = [(max(b, 1), us, g) for b, us, g in p]
        lat.plot([b for b, _, _ in p], [us for _, us, _ in p], style, label=label)
    for test, label in (("pingpong_same", "flag floor, same GPU"),
                        ("pingpong_peer", "flag floor, peer GPU")):
        for b, us, _ in series(rma, "flag", test):
            lat.axhline(us, linestyle=":", color="gray")
            lat.text(1.2, us * 1.05, label, fontsize=8, color="gray")
    lat.set_xscale("log", base=2)
    lat.set_yscale("log")
    lat.set_xlabel("bytes (0 plotted at 1)")
    lat.set_ylabel("one-way time, us (median)")
    lat.set_title("ping-pong, one 128-thread rank each side")
    lat.grid(True, which="both", alpha=0.3)
    lat.legend(fontsize=8)
    for impl, test, label, style in (
            ("gcomm", "stream_same", "gcomm, same GPU", "o-"),
            ("gcomm", "stream_peer", "gcomm, peer GPU", "s-"),
            ("nvshmem", "stream_put_signal", "NVSHMEM, peer GPU", "^--")):
        p = series(rma if impl == "gcomm" else nvs, impl, test)
        bw.plot([b for b, _, _ in p], [g for _, _, g in p], style, label=label)
    bw.set_xscale("log", base=2)
    bw.set_xlabel("bytes per put")
    bw.set_ylabel("GB/s")
    bw.set_title("streamed notified puts, one 128-thread rank")
    bw.grid(True, which="both", alpha=0.3)
    bw.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()
