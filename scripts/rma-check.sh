#!/usr/bin/env bash
# GPU check of the notified-RMA layer (issue 4) on the GPU machine, over a carried build-gpu:
# the device tests (one process, every GPU), the multi-process test (mpirun, one GPU each), the
# wait timeout, the stencil demo (what `make run` runs), and the overlap benchmark. Logs go to
# $OUT (or build-gpu/logs); a short table comes last. Usage: scripts/rma-check.sh [--quick]
set -uo pipefail
exec </dev/null
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 GCOMM_TIMEOUT_MS=${GCOMM_TIMEOUT_MS:-20000}
b=${GPU_DIR:-build-gpu}
logs=${OUT:-$b/logs}
mkdir -p "$logs"
quick=0
[ "${1:-}" = --quick ] && quick=1
stress=$([ $quick = 1 ] && echo 200000 || echo 1000000)
results=()
step() { # name, timeout, command...
    local name=$1 t=$2
    shift 2
    local s=$SECONDS
    timeout "$t" "$@" >"$logs/$name.log" 2>&1
    local rc=$?
    results+=("$(printf '%-18s %-8s %4ds' "$name" "$([ $rc = 0 ] && echo ok || echo "rc=$rc")" $((SECONDS - s)))")
}
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
grep -hE "^(ring|gather|get|overlap|log|stress|errors|timeout|test_rma)|FAIL|hello|no arguments" \
    "$logs"/test_rma_*.log "$logs/rma_timeout.log" 2>/dev/null | head -60
grep -hE "time per|verified" "$logs/stencil_demo.log" 2>/dev/null
tail -n 25 "$logs/bench_overlap.log" 2>/dev/null
printf '%s\n' "${results[@]}"
