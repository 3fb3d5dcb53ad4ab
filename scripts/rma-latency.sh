#!/usr/bin/env bash
# The small notified put's latency protocol of issue 4 on the GPU machine, over a carried
# build-gpu (GPU_DIR): the ping-pong of 0 and 8 B `put_notify` one way, inline (GCOMM_INLINE_MAX=8,
# the default) and released (GCOMM_INLINE_MAX=0), ROUNDS times each, alternating; NVSHMEM's
# put-with-signal in the same call (scripts/run-nvshmem-bench.sh, two GPUs only); the breakdown of
# bench_rma_prof (the fence-free floors `ll`, `llreserve` and the put path's cycles between the
# marks of rank_impl.h), same GPU and, with two GPUs, peer.
#   B=<other bench_rma> adds that build to the alternation (an A/B of two builds in one call).
# CSVs and logs go to $OUT (or build-gpu/logs); a short table comes last, one line per run:
# same-GPU and peer one-way µs at 0 / 8 B, and the flag floors (release store, acquire poll).
# Usage: scripts/rma-latency.sh [--rounds N] [--no-nvshmem] [--no-prof]
set -uo pipefail
exec </dev/null
cd "$(dirname "$0")/.."
. scripts/gpu-lib.sh
rounds=2 nvshmem=1 prof=1
while [ $# -gt 0 ]; do
    case $1 in
    --rounds) rounds=${2:?}; shift ;;
    --no-nvshmem) nvshmem=0 ;;
    --no-prof) prof=0 ;;
    *) echo "rma-latency.sh: unknown argument $1 (--rounds N, --no-nvshmem, --no-prof)" >&2
       exit 2 ;;
    esac
    shift
done
gpus_or_skip rma-latency.sh
bins=("$b/bench/bench_rma")
[ -n "${B:-}" ] && bins+=("$B")
lines=()
# row NAME CSV: "same 0/8 B | peer 0/8 B | flags" from a bench_rma CSV
row() {
    awk -F, -v name="$1" '
        $2 == "pingpong_same" && $1 == "gcomm" { s[$3] = $6 }
        $2 == "pingpong_peer" && $1 == "gcomm" { p[$3] = $6 }
        $2 == "pingpong_same" && $1 == "flag" { fs = $6 }
        $2 == "pingpong_peer" && $1 == "flag" { fp = $6 }
        END { printf "%-34s same %6s / %6s   peer %6s / %6s   flags %s / %s\n", name,
              s[0], s[8], (0 in p) ? p[0] : "-", (8 in p) ? p[8] : "-", fs, (fp == "" ? "-" : fp) }' "$2"
}
for r in $(seq 1 "$rounds"); do
    for bin in "${bins[@]}"; do
        for m in 8 0; do
            tag=$(basename "$bin")_$([ $m = 8 ] && echo inline || echo released)_$r
            step "$tag" 300 env GCOMM_INLINE_MAX=$m "$bin" --max-bytes 8 --repeats 9 \
                --csv "$logs/$tag.csv"
            lines+=("$(row "$tag" "$logs/$tag.csv")")
        done
    done
done
if [ $nvshmem = 1 ] && [ "$ngpu" -ge 2 ]; then
    step nvshmem 600 env OUT="$logs" bash scripts/run-nvshmem-bench.sh --max-bytes 1K
    lines+=("$(awk -F, '$2 == "pingpong_put_signal" && ($3 == 0 || $3 == 8) { v[$3] = $6 }
        END { printf "%-34s peer %6s / %6s\n", "nvshmem put_signal", v[0], v[8] }' \
        "$logs/nvshmem.csv" 2>/dev/null)")
fi
if [ $prof = 1 ]; then
    step prof_same 300 "$b/bench/bench_rma_prof" --repeats 5
    [ "$ngpu" -ge 2 ] && step prof_peer 300 "$b/bench/bench_rma_prof" --peer --repeats 5
fi
echo "---- one-way µs, 0 / 8 B (logs: $logs)"
printf '%s\n' "${lines[@]}"
[ $prof = 1 ] && grep -hE "^(ll|llreserve|gcomm) |put path" "$logs"/prof_*.log
printf '%s\n' "${results[@]}"
# non-zero when a step failed or timed out
! printf '%s\n' "${results[@]}" | grep -q " rc="
