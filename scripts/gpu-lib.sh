# Shared by the scripts run on the GPU machine (rma-check, proxy-check, proxy-tune, scale-check):
# sourced after the caller has changed to the repository root. Sets the environment those runs
# need, `b` (the carried build: GPU_DIR, default build-gpu) and `logs` ($OUT, else $b/logs), and
# defines step, table and the MPS daemon's start and stop.

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# never NVLink multicast (NVLS): not available to us on the lent machines
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 GCOMM_TIMEOUT_MS=${GCOMM_TIMEOUT_MS:-20000}
b=${GPU_DIR:-build-gpu}
logs=${OUT:-$b/logs}
mkdir -p "$logs"

# gpus_or_skip NAME: sets ngpu (GPUs of this machine); with none, says so and exits 77 (skipped);
# else prints the machine line (GPU kinds and counts, UTC time) that the tables go under
gpus_or_skip() {
    ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
    if [ "$ngpu" -lt 1 ]; then
        echo "$1: no GPU, nothing to run"
        exit 77
    fi
    echo "---- $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | xargs), $(date -u '+%F %H:%M UTC')"
}

# table CSV: the CSV in aligned columns (no `column` on every machine)
table() { awk -F, '{ for (i = 1; i <= NF; i++) printf "%-15s", $i; print "" }' "$1"; }

# step NAME TIMEOUT COMMAND...: runs COMMAND into $logs/NAME.log; a line for the closing table
# goes into results
results=()
step() {
    local name=$1 t=$2
    shift 2
    local s=$SECONDS
    timeout "$t" "$@" >"$logs/$name.log" 2>&1
    local rc=$?
    results+=("$(printf '%-22s %-8s %4ds' "$name" "$([ $rc = 0 ] && echo ok || echo "rc=$rc")" $((SECONDS - s)))")
}

# mps_start: an MPS control daemon with private pipe and log directories (no GPU setting
# changes), so that the kernels of several processes on one GPU run at once; mps_dir is empty
# when there is none. mps_stop ends it.
mps_dir=
mps_start() {
    if ! command -v nvidia-cuda-mps-control >/dev/null; then
        echo "no nvidia-cuda-mps-control here: running without MPS"
        return 0
    fi
    mps_dir=$(mktemp -d)
    export CUDA_MPS_PIPE_DIRECTORY=$mps_dir/pipe CUDA_MPS_LOG_DIRECTORY=$mps_dir/log
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    nvidia-cuda-mps-control -d && echo "MPS control daemon started ($mps_dir)"
}
mps_stop() {
    [ -n "$mps_dir" ] || return 0
    echo quit | nvidia-cuda-mps-control
    sleep 1
}
