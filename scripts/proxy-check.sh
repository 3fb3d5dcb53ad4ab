#!/usr/bin/env bash
# GPU check of GPU ranks through the host proxy (issue 5) on the GPU machine, over a carried build
# (GPU_DIR, default build-gpu): test_rma_mpi with every process its own pretend node
# (GCOMM_FORCE_PROXY=1: ring, exchange, gather with wildcards, get, barriers, registered memory,
# stress, puts outside windows of this and the other process, a launch after the errors, and the
# wait timeout), the same test over CUDA IPC when there are two GPUs and in a job mixing both
# paths (4 processes, GCOMM_FORCE_PROXY=2: each pretend node one process per GPU), the device
# test and the same-GPU latency (unchanged paths), the horizontal diffusion mini-app and the
# overlap benchmark with one process per GPU through the proxy (when both processes' kernels can
# run at once: two GPUs or MPS), and bench_proxy (the proxy path's latency and 16 MiB bandwidth
# against its stages), and bench_svc_hop (the service block's hop alone, before MPS starts).
# With one GPU the two processes share it: without MPS the GPU time-slices
# between their kernels (correctness only); with --mps an MPS control daemon (started
# here, stopped at the end; no GPU setting changes) lets both run at once, for timings.
# Logs go to $OUT (or $GPU_DIR/logs); a short table comes last.
# Usage: scripts/proxy-check.sh [--quick] [--mps] [--bench-only]
set -uo pipefail
exec </dev/null
cd "$(dirname "$0")/.."
. scripts/gpu-lib.sh
quick=0 mps=0 bench_only=0
for a in "$@"; do
    case $a in
    --quick) quick=1 ;;
    --mps) mps=1 ;;
    --bench-only) bench_only=1 ;;
    *) echo "proxy-check.sh: unknown argument $a (--quick, --mps, --bench-only)" >&2; exit 2 ;;
    esac
done
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
[ -x "$b/bench/bench_svc_hop" ] && step svc_hop 120 "$b/bench/bench_svc_hop" --csv "$logs/svc_hop.csv"
[ $mps = 1 ] && mps_start
if [ $bench_only = 0 ]; then
    # one GPU without MPS: the kernels alternate in time slices of ~2 ms, so a stress of many
    # round trips would outlast the timeout
    concurrent=0
    if [ "$ngpu" -ge 2 ] || [ -n "$mps_dir" ]; then concurrent=1; fi
    if [ $concurrent = 1 ]; then n=$([ $quick = 1 ] && echo 50000 || echo 1000000)
    else n=1000; fi
    # a million notifications through the proxies take ~25 s through MPS: the barrier after
    # them must not give up first
    step proxy_mpi_all 300 env GCOMM_FORCE_PROXY=1 GCOMM_TIMEOUT_MS=120000 mpirun -n 2 \
        --bind-to none "$b/tests/rma/test_rma_mpi" all $n
    step proxy_mpi_timeout 120 env GCOMM_FORCE_PROXY=1 GCOMM_TIMEOUT_MS=3000 mpirun -n 2 \
        --bind-to none "$b/tests/rma/test_rma_mpi" timeout
    if [ "$ngpu" -ge 2 ]; then
        step ipc_mpi_all 300 mpirun -n 2 --bind-to none "$b/tests/rma/test_rma_mpi" all 200000
        # a job mixing both paths: two pretend nodes of two processes, one per GPU in each, so
        # 0 <-> 1 and 2 <-> 3 meet through CUDA IPC and the others through the proxies
        nmix=$([ -n "$mps_dir" ] && echo 200000 || echo 20000) # without MPS: time-sliced
        step mixed_mpi_all 300 env GCOMM_FORCE_PROXY=2 GCOMM_TIMEOUT_MS=120000 mpirun -n 4 \
            --bind-to none "$b/tests/rma/test_rma_mpi" all "$nmix"
    fi
    if [ $concurrent = 1 ]; then
        # few ranks per GPU: with one GPU both processes' grids must fit on it at once
        step hdiff_proxy 300 env GCOMM_FORCE_PROXY=1 mpirun -n 2 --bind-to none \
            "$b/apps/stencil/hdiff_gcomm" --ni 128 --nj 64 --nk 26 --steps 50 \
            --blocks-per-gpu 16 --reps 5
        step overlap_proxy 400 env GCOMM_FORCE_PROXY=1 mpirun -n 2 --bind-to none \
            "$b/bench/bench_overlap" --quick --ranks-per-sm 1 --csv "$logs/overlap_proxy.csv"
    fi
    step rma_device 300 "$b/tests/rma/test_rma_device" all 200000
    step bench_rma 300 "$b/bench/bench_rma" --max-bytes 64K --csv "$logs/rma_latency.csv"
fi
if [ -x "$b/bench/bench_proxy" ]; then
    step bench_proxy 400 env GCOMM_FORCE_PROXY=1 mpirun -n 2 --bind-to none \
        "$b/bench/bench_proxy" --csv "$logs/proxy.csv"
fi
mps_stop
for f in "$logs"/proxy_mpi_all.log "$logs"/proxy_mpi_timeout.log "$logs"/mixed_mpi_all.log; do
    [ -f "$f" ] && { echo "== $(basename "$f")"; grep -E "FAIL|ok|->|skipped|passed|failed" "$f" | head -30; }
done
[ -f "$logs/bench_rma.log" ] && { echo "== bench_rma (same GPU)"; grep -iE "pingpong|one-way|^ *[0-9]+ " "$logs/bench_rma.log" | head -12; }
for f in hdiff_proxy overlap_proxy; do
    [ -f "$logs/$f.log" ] && { echo "== $f"; grep -E "^hdiff|time per|verified|^compute|^memory|ratio|FAIL|rror" "$logs/$f.log" | head -14; }
done
[ -f "$logs/svc_hop.log" ] && { echo "== bench_svc_hop"; tail -8 "$logs/svc_hop.log"; }
[ -f "$logs/bench_proxy.log" ] && { echo "== bench_proxy"; tail -25 "$logs/bench_proxy.log"; }
printf '%s\n' "${results[@]}"
