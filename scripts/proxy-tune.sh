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
. scripts/gpu-lib.sh
chunks=${1:-512K 1M 2M 4M}
bounces=${2:-4 8}
[ "$(nvidia-smi -L 2>/dev/null | wc -l)" -lt 2 ] && mps_start
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
mps_stop
