#!/usr/bin/env bash
# GPU check of the notified-RMA layer (issue 4) on the GPU machine, over a carried build-gpu:
# the device tests (one process, every GPU), the multi-process test (mpirun, one GPU each), the
# wait timeout, the stencil demo (what `make run` runs), and the overlap benchmark. Logs go to
# $OUT (or build-gpu/logs); a short table comes last. Usage: scripts/rma-check.sh [--quick]
# [--sanitize] [--apps] [--overlap]: --sanitize runs only compute-sanitizer memcheck and racecheck
# on every device-test kernel on small grids (test_rma_device small); --apps runs only the
# mini-app and overlap sweeps (horizontal diffusion gcomm vs its MPI-CUDA twin over domain sizes,
# the overlap benchmark over halo sizes, then with the lean kernel at 8 ranks of 128 threads and
# 16 of 64 per SM) into $OUT/hdiff_sweep.csv and $OUT/overlap_*.csv; --overlap runs only the
# overlap benchmark's sweep of the amount of computation (the paper's Figs. 7 and 8) for gcomm's
# kernels at four rank shapes and the floor (--exchange floor) at three into $OUT/sweep_*.csv.
set -uo pipefail
exec </dev/null
cd "$(dirname "$0")/.."
. scripts/gpu-lib.sh
quick=0 sanitize=0 apps=0 overlap=0
for a in "$@"; do
    case $a in
    --quick) quick=1 ;;
    --sanitize) sanitize=1 ;;
    --apps) apps=1 ;;
    --overlap) overlap=1 ;;
    *) echo "rma-check.sh: unknown argument $a (--quick, --sanitize, --apps, --overlap)" >&2
       exit 2 ;;
    esac
done
stress=$([ $quick = 1 ] && echo 200000 || echo 1000000)
if [ $sanitize = 1 ]; then
    cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
    for tool in memcheck racecheck; do
        # API errors are not reported: test_errors passes a raw host function pointer on purpose
        # (cudaErrorInvalidResourceHandle, returned as GCOMM_ERR_ARG).
        step "sanitize_$tool" 140 "$cs" --tool "$tool" --error-exitcode 9 --report-api-errors no \
            "$b/tests/rma/test_rma_device" small 3000
    done
    grep -hE "ERROR SUMMARY|RACECHECK SUMMARY|test_rma_device:|FAIL" "$logs"/sanitize_*.log
    printf '%s\n' "${results[@]}"
    exit 0
fi
if [ $overlap = 1 ]; then
    # name, then bench_overlap's options: the default kernel at 4 ranks of 128 threads per SM
    # (as many as its registers allow), the lean one (GCOMM_COPY_INFLIGHT=1) asking for 8 x 128,
    # 16 x 64 and 32 x 32; then the floor (the exchange written by hand) at 4, 8 and 16 ranks of
    # 128 threads per SM, 1 / 2 / 4 x (all at bench_overlap's default of 10000 iterations)
    for run in "default_128x4 --ranks-per-sm 4" "lean_128x8 --lean --ranks-per-sm 8" \
        "lean_64x16 --lean --threads 64 --ranks-per-sm 16" \
        "lean_32x32 --lean --threads 32 --ranks-per-sm 32" \
        "floor_128x4 1,2,4 --exchange floor --ranks-per-sm 4" \
        "floor_128x8 1,2,4 --exchange floor --ranks-per-sm 8" \
        "floor_128x16 1,2,4 --exchange floor --bounded 16 --ranks-per-sm 16"; do
        set -- $run
        name=$1
        shift
        step "sweep_$name" 300 "$b/bench/bench_overlap" --sweep "$@" --csv "$logs/sweep_$name.csv"
        grep -E "ratio both/max" "$logs/sweep_$name.log"
    done
    printf '%s\n' "${results[@]}"
    exit 0
fi
if [ $apps = 1 ]; then
    # hdiff per GPU: ni x nj x nk with ni = 128, nk = 26 (the paper's), nj from thin to wide:
    # the halo share of the twin falls as nj grows. Both variants on every GPU of the machine.
    ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
    csv=$logs/hdiff_sweep.csv
    echo "nj_per_gpu,gpus,gcomm_us,gcomm_lines_us,twin_us,twin_halo_us,twin_halo_share,speedup,verified" >"$csv"
    for nj in 32 64 128 320 640 1280 2560 3840 5120; do
        g=$(timeout 120 "$b/apps/stencil/hdiff_gcomm" --ni 128 --nj $nj --nk 26 --steps 100 2>&1)
        gl=$(timeout 120 "$b/apps/stencil/hdiff_gcomm" --ni 128 --nj $nj --nk 26 --steps 100 \
            --halo lines 2>&1)
        t=$(timeout 120 mpirun -n "$ngpu" --bind-to none "$b/apps/stencil/hdiff_mpicuda" --ni 128 \
            --nj $nj --nk 26 --steps 100 2>&1)
        gu=$(echo "$g" | sed -n 's/^time per iteration: \([0-9.]*\) us.*/\1/p' | head -1)
        glu=$(echo "$gl" | sed -n 's/^time per iteration: \([0-9.]*\) us.*/\1/p' | head -1)
        tu=$(echo "$t" | sed -n 's/^time per iteration: \([0-9.]*\) us.*/\1/p' | head -1)
        hu=$(echo "$t" | sed -n 's/^halo exchange per iteration: \([0-9.]*\) us.*/\1/p' | head -1)
        ok=$(echo "$g$gl$t" | grep -c "verified: yes")
        echo "$nj,$ngpu,$gu,$glu,$tu,$hu,$(awk -v h="$hu" -v t="$tu" 'BEGIN{if(t>0)printf "%.3f",h/t}'),$(awk -v g="$gu" -v t="$tu" 'BEGIN{if(g>0)printf "%.3f",t/g}'),$([ "$ok" = 3 ] && echo yes || echo NO)" >>"$csv"
    done
    table "$csv"
    for h in 1K 16K 64K; do
        step "overlap_$h" 240 "$b/bench/bench_overlap" --halo-bytes $h --csv "$logs/overlap_$h.csv"
        grep -E "ratio both/max" "$logs/overlap_$h.log"
    done
    # over-decomposed without spills (GCOMM_COPY_INFLIGHT=1: 8 ranks of 128 threads or 16 of 64
    # per SM; docs/BENCHMARKS.md, "Registers without spills")
    step overlap_lean_128x8 240 "$b/bench/bench_overlap" --lean --ranks-per-sm 8 \
        --csv "$logs/overlap_lean_128x8.csv"
    step overlap_lean_64x16 240 "$b/bench/bench_overlap" --lean --threads 64 --ranks-per-sm 16 \
        --csv "$logs/overlap_lean_64x16.csv"
    grep -E "ratio both/max" "$logs"/overlap_lean_*.log
    printf '%s\n' "${results[@]}"
    exit 0
fi
step test_rma_device 150 "$b/tests/rma/test_rma_device" all "$stress"
step test_rma_mpi 150 mpirun -n 2 --bind-to none "$b/tests/rma/test_rma_mpi" all "$((stress / 2))"
step rma_timeout 60 env GCOMM_TIMEOUT_MS=1500 "$b/tests/rma/test_rma_device" timeout
step stencil_demo 60 "$b/apps/stencil/stencil_dcuda" --ni 512 --nj-per-rank 16 --steps 100
if [ $quick = 1 ]; then
    step bench_overlap 120 "$b/bench/bench_overlap" --quick --csv "$logs/overlap.csv"
else
    step bench_overlap 240 "$b/bench/bench_overlap" --csv "$logs/overlap.csv"
fi
echo "---- $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sort | uniq -c | xargs)"
grep -hE "^(ring|gather|get|overlap|log|typed|stress|errors|timeout|test_rma)|FAIL|hello|no arguments" \
    "$logs"/test_rma_*.log "$logs/rma_timeout.log" 2>/dev/null | head -60
grep -hE "time per|verified" "$logs/stencil_demo.log" 2>/dev/null
tail -n 25 "$logs/bench_overlap.log" 2>/dev/null
printf '%s\n' "${results[@]}"
