#!/usr/bin/env bash
# The proxy's pipeline settings against its bandwidth: bench_proxy (GCOMM_FORCE_PROXY=1, two
# processes) for every GCOMM_PROXY_CHUNK x GCOMM_PROXY_BOUNCE given, over a carried build (GPU_DIR,
# default build-gpu). With one GPU, both processes share it through an MPS daemon started here
# and stopped at the end. Writes proxy_<chunk>_<bounce>.csv and logs to $OUT (or $GPU_DIR/logs)
# and prints, per setting, the 1 MiB and 16 MiB rows (gcomm GB/s, MPI host stage GB/s, ratio).
# Usage: scripts/proxy-tune.sh ["CHUNKS"] ["BOUNCES"]   (defaults "512K 1M 2M 4M" and "4 8")
set -uo pipefail
exec </dev/null
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
b=${GPU_DIR:-build-gpu}
logs=${OUT:-$b/logs}
mkdir -p "$logs"
chunks=${1:-512K 1M 2M 4M}
bounces=${2:-4 8}
mps_dir=
if [ "$(nvidia-smi -L 2>/dev/null | wc -l)" -lt 2 ] && command -v nvidia-cuda-mps-control >/dev/null; then
    mps_dir=$(mktemp -d)
    export CUDA_MPS_PIPE_DIRECTORY=$mps_dir/pipe CUDA_MPS_LOG_DIRECTORY=$mps_dir/log
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    nvidia-cuda-mps-control -d && echo "MPS control daemon started"
fi
printf '%-6s %-6s %s\n' chunk bounce "bytes gcomm_us gcomm_GB/s ... (bench_proxy rows for 1M and 16M)"
for c in $chunks; do
    for n in $bounces; do
        name=proxy_${c}_${n}
        GCOMM_FORCE_PROXY=1 GCOMM_PROXY_CHUNK=$c GCOMM_PROXY_BOUNCE=$n timeout 300 \
            mpirun -n 2 --bind-to none "$b/bench/bench_proxy" --csv "$logs/$name.csv" \
            >"$logs/$name.log" 2>&1
        rc=$?
        grep -E '^ +(1M|16M) ' "$logs/$name.log" | sed "s/^/$(printf '%-6s %-6s' "$c" "$n") /"
        [ $rc = 0 ] || echo "$c $n: rc=$rc (see $name.log)"
    done
done
if [ -n "$mps_dir" ]; then
    echo quit | nvidia-cuda-mps-control
    sleep 1
fi
