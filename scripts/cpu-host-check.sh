#!/usr/bin/env bash
# The CPU engine on another machine's CPU, e.g. the Intel host of the GPU machine, where CI (an
# AMD VM these days) never runs the Intel loops at speed:
#   - runs the CPU tests of a carried CPU build (CPU_DIR, default build-bench: cmake -DGCOMM_CUDA=OFF
#     -DCMAKE_BUILD_TYPE=Release, built where the session runs; its CTest files name that
#     directory, which is made a link here when it does not exist),
#   - runs bench_pack_cpu over issue 2's shapes from MIN to MAX bytes (default 1M to 64M) on one
#     core (CPU_CORE, default 3), with GCOMM_LOG_LEVEL=info so that the log says which loops and
#     streaming threshold the engine chose on this CPU,
#   - writes logs and the CSV under $OUT when set (else under CPU_DIR/logs) and prints a short table
#     last: per shape and operation the worst ratio to MPI_Pack and the lowest % of memcpy over the
#     sizes, and the benchmark's verdict on issue 2's targets.
# Usage: scripts/cpu-host-check.sh [--no-tests] [--min-bytes N] [--max-bytes N] [--shapes a,b].
# Exit status: 0 when the tests passed and every output was checked equal to MPI_Pack's.
set -uo pipefail
exec </dev/null
cd "$(dirname "$0")/.."
. scripts/carried-build.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

tests=1 min=1M max=64M shapes=vector_bl1,vector_bl16,vector_bl256,lower_tri,subarray4d,struct,transpose
while [ $# -gt 0 ]; do
    case "$1" in
    --no-tests) tests=0; shift ;;
    --min-bytes) min=$2; shift 2 ;;
    --max-bytes) max=$2; shift 2 ;;
    --shapes) shapes=$2; shift 2 ;;
    -h | --help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "cpu-host-check.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done

build=${CPU_DIR:-build-bench}
logs=${OUT:-$build/logs}
core=${CPU_CORE:-3}
mkdir -p "$logs"
start=$SECONDS
say() { echo "==== $* ($((SECONDS - start)) s)"; }
bench=$build/bench/bench_pack_cpu
[ -x "$bench" ] || { say "no $bench: build with -DGCOMM_CUDA=OFF and MPI first, and carry $build"; exit 1; }
export LD_LIBRARY_PATH=$PWD/$build/src${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -n 1)
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(uname -srm), $(nproc) cores"
    lscpu | grep -E '^(Model name|Model:|CPU family|L1d|L2|L3|Hypervisor)'
    command -v mpirun >/dev/null && mpirun --version 2>&1 | head -n 1
    cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null
} >"$logs/env.txt" 2>&1
say "CPU: $cpu; pinned to core $core"

status=0
tests_line="tests: not run (--no-tests)"
if [ "$tests" = 1 ]; then
    links=$(carried_build_links "$build") || { say "$links"; exit 1; }
    [ -z "$links" ] || while read -r l; do say "$l"; done <<<"$links"
    say "ctest -L cpu (docs_links excluded: it runs the Python of the machine that built)"
    ctest --test-dir "$build" -L cpu -E docs_links -j "$(nproc)" --timeout 600 --output-on-failure \
        >"$logs/ctest-cpu.log" 2>&1 || status=1
    tests_line="tests: $(grep -E 'tests passed|tests failed' "$logs/ctest-cpu.log" | tail -n 1)"
    say "$tests_line"
fi

say "bench_pack_cpu --shapes $shapes --min-bytes $min --max-bytes $max (core $core)"
GCOMM_LOG_LEVEL=info taskset -c "$core" "$bench" --shapes "$shapes" --min-bytes "$min" \
    --max-bytes "$max" --csv "$logs/pack_cpu.csv" >"$logs/pack_cpu.txt" 2>&1 || status=1
grep -q ' 0 check failures, 0 errors' "$logs/pack_cpu.txt" || status=1

{
    echo "gcomm cpu-host-check on $cpu, $(date -u +%Y-%m-%d), $((SECONDS - start)) s"
    echo "$tests_line"
    grep -o 'CPU engine: .*' "$logs/pack_cpu.txt" | sort -u
    echo "per shape and operation over $min-$max: worst x MPI_Pack, lowest % of memcpy"
    awk -F, 'NR > 1 {
            k = $1 " " $3
            if (!(k in x) || $10 < x[k]) x[k] = $10
            if (!(k in m) || $11 < m[k]) m[k] = $11
            if (!(k in seen)) { seen[k] = 1; order[n++] = k }
        }
        END { for (i = 0; i < n; i++) printf "  %-22s %6.2fx %7.1f%%\n", order[i], x[order[i]], 100 * m[order[i]] }' \
        "$logs/pack_cpu.csv"
    sed -n '/^targets/,$p' "$logs/pack_cpu.txt"
} >"$logs/summary.txt"
echo
cat "$logs/summary.txt"
if [ "$status" = 0 ]; then say "cpu-host-check: all passed"; else say "cpu-host-check: FAILURES (logs in $logs)"; fi
exit "$status"
