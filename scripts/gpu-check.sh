#!/usr/bin/env bash
# Builds and tests gcomm on a GPU machine (Ubuntu 24.04, nvcc 13.0, cmake, Open MPI 4.1.6, one or two
# H100/H200; no internet; root):
#   - builds into build-gpu (GPU_DIR), re-using a build already there for this source tree,
#   - runs the GPU tests (ctest -L gpu, one at a time), then the other tests,
#   - runs the quick benchmarks when there are any (CTest label "bench", one at a time),
#   - writes logs under $OUT when set (else under the build directory) and prints a short table
#     last: test, result, time, with the GPU model.
# Exit status: 0 when nothing failed. Options: --no-bench, --no-cpu, --rebuild; --only REGEX: only
# the tests whose names match; --compute-sanitizer: also run scripts/gpu-sanitize.sh (memcheck and
# racecheck on the GPU tests; SANITIZE_NTYPES random types, default 100); --no-build: run the
# build in GPU_DIR as it is, e.g. one built elsewhere and carried here (its CTest files and
# RPATHs name the directory it was built in: when that path does not exist here, it is made a
# link to GPU_DIR).
set -euo pipefail
exec </dev/null
cd "$(dirname "$0")/.."
. scripts/carried-build.sh

# Never NVLink multicast (NVLS): not available to us on the lent machines.
export NCCL_NVLS_ENABLE=0
export NVSHMEM_DISABLE_NVLS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1

run_bench=1 run_cpu=1 rebuild=0 sanitizer=0 nobuild=0
only=()
while [ $# -gt 0 ]; do
    arg=$1
    shift
    case "$arg" in
    --only)
        [ $# -gt 0 ] || { echo "gpu-check.sh: --only needs a regular expression" >&2; exit 2; }
        only=(-R "$1")
        shift
        ;;
    --no-bench) run_bench=0 ;;
    --no-cpu) run_cpu=0 ;;
    --rebuild) rebuild=1 ;;
    --no-build) nobuild=1 ;;
    --compute-sanitizer) sanitizer=1 ;;
    -h | --help)
        sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "gpu-check.sh: unknown argument '$arg'" >&2
        exit 2
        ;;
    esac
done

build=${GPU_DIR:-build-gpu}
logs=${OUT:-$build/logs}
mkdir -p "$logs"
rm -f "$logs"/ctest-*.log "$logs/summary.txt" "$logs/sanitize.log"
jobs=$(nproc 2>/dev/null || echo 8)
case ":$PATH:" in *:/usr/local/cuda/bin:*) ;; *) [ -d /usr/local/cuda/bin ] && PATH=$PATH:/usr/local/cuda/bin ;; esac
start=$SECONDS
status=0

say() { echo "==== $* ($((SECONDS - start)) s)"; }

{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(uname -srm), $(nproc) cores"
    echo "source: $(pwd)"
    nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader 2>&1 || true
    nvidia-smi topo -m 2>&1 || true
    command -v nvcc >/dev/null && nvcc --version | tail -n 1 || echo "nvcc: not found"
    cmake --version | head -n 1
    command -v mpirun >/dev/null && mpirun --version 2>&1 | head -n 1 || echo "mpirun: not found"
    env | grep -E '^(NCCL_|NVSHMEM_|CUDA_VISIBLE)' || true
} >"$logs/env.txt" 2>&1
gpu_model=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sort | uniq -c |
    awk '{ n = $1; $1 = ""; sub(/^ /, ""); printf "%s%s x%d", sep, $0, n; sep = ", " }' || true)
[ -n "$gpu_model" ] || gpu_model="no GPU visible (nvidia-smi failed)"
say "GPU: $gpu_model"

if [ "$nobuild" = 1 ]; then
    [ -f "$build/CMakeCache.txt" ] || { say "--no-build: no build in $build"; exit 1; }
    links=$(carried_build_links "$build") || { say "--no-build: $links"; exit 1; }
    [ -z "$links" ] || while read -r l; do say "$l"; done <<<"$links"
    say "using the build in $build as it is (--no-build)"
fi

# A build directory configured for this very source tree (one carried from a session that ran
# here, for instance) is only brought up to date; anything else is configured afresh.
cache_home=""
[ -f "$build/CMakeCache.txt" ] &&
    cache_home=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")
if [ "$nobuild" = 1 ]; then
    : >"$logs/build.log"
elif [ "$rebuild" = 1 ] || [ "$cache_home" != "$(pwd -P)" ]; then
    if [ -n "$cache_home" ]; then
        say "$build was configured for $cache_home, not $(pwd -P): configuring afresh"
    fi
    rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles"
    say "configuring $build"
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DGCOMM_CUDA=ON >"$logs/build.log" 2>&1 ||
        { tail -n 40 "$logs/build.log"; say "configure FAILED"; exit 1; }
else
    say "re-using the build in $build"
    : >"$logs/build.log"
fi
[ "$nobuild" = 1 ] || say "building $build (-j $jobs)"
if [ "$nobuild" = 0 ] && ! cmake --build "$build" -j "$jobs" >>"$logs/build.log" 2>&1; then
    tail -n 60 "$logs/build.log"
    say "build FAILED (log: $logs/build.log)"
    exit 1
fi

# run_ctest NAME ARGS...: runs ctest, keeps its log, notes why tests skipped (the first lines of
# their output, from LastTest.log), returns ctest's status.
: >"$build/skipped.txt"
run_ctest() {
    local name=$1
    shift
    say "ctest $*"
    local rc=0
    ctest --test-dir "$build" --output-on-failure "${only[@]}" "$@" 2>&1 | tee "$logs/ctest-$name.log" || rc=$?
    awk 'FNR == NR { if ($0 ~ /\(Skipped\)$/) skip[$3] = 1; next }
         /^[0-9]+\/[0-9]+ Test: / { name = $3; cap = 0; next }
         /^Output:$/ { cap = (name in skip); lines = 0; next }
         /^<end of output>$/ { cap = 0; next }
         cap && !/^-+$/ && lines++ < 3 { print "  " name ": " $0 }' \
        "$logs/ctest-$name.log" "$build/Testing/Temporary/LastTest.log" >>"$build/skipped.txt" 2>/dev/null || true
    return "$rc"
}

count_tests() { ctest --test-dir "$build" -N "${only[@]}" "$@" | awk '/^Total Tests:/ { print $3 }'; }

if [ "$(count_tests -L gpu -LE bench)" = 0 ]; then
    say "no GPU tests are registered yet (label gpu)"
    : >"$logs/ctest-gpu.log"
else
    run_ctest gpu -L gpu -LE bench -j 1 --timeout 600 || status=1
fi
# compute-sanitizer (memcheck, racecheck) through scripts/gpu-sanitize.sh; its per-tool logs stay
# in the build directory, the verdicts and the end of any failing log come back in sanitize.log.
if [ "$sanitizer" = 1 ]; then
    if [ -f scripts/gpu-sanitize.sh ]; then
        say "compute-sanitizer: scripts/gpu-sanitize.sh $build ${SANITIZE_NTYPES:-100}"
        rm -rf "$build/sanitize"
        OUT="$build/sanitize" bash scripts/gpu-sanitize.sh "$build" "${SANITIZE_NTYPES:-100}" 2>&1 |
            tee "$logs/sanitize.log" || status=1
        for f in "$build"/sanitize/*-test_*.log; do
            [ -f "$f" ] && grep -qE 'SUMMARY: [1-9]' "$f" &&
                { echo "---- $f"; tail -n 60 "$f"; } >>"$logs/sanitize.log"
        done
    else
        say "scripts/gpu-sanitize.sh not found: no compute-sanitizer run"
    fi
fi

if [ "$run_cpu" = 1 ]; then
    run_ctest cpu -LE 'gpu|bench' -j "$jobs" --timeout 600 || status=1
fi
if [ "$run_bench" = 1 ]; then
    if [ "$(count_tests -L bench)" = 0 ]; then
        say "no benchmarks are registered yet (label bench)"
    else
        run_ctest bench -L bench -j 1 --timeout 600 || status=1
    fi
fi

# The table: one line per test from ctest's progress lines, e.g.
#   " 3/12 Test  #3: test_pack_gpu ....................   Passed    0.52 sec"
{
    echo "gcomm gpu-check on ${gpu_model}, $(date -u +%Y-%m-%d), $((SECONDS - start)) s"
    printf '%-8s %-40s %-12s %10s\n' suite test result seconds
    for suite in gpu cpu bench; do
        f="$logs/ctest-$suite.log"
        [ -s "$f" ] || continue
        awk -v suite="$suite" '
            / Test +#[0-9]+: / {
                line = $0
                sub(/^.* Test +#[0-9]+: /, "", line)
                name = line; sub(/ .*/, "", name)
                secs = line; sub(/ sec.*$/, "", secs); sub(/^.* /, "", secs)
                res = line; sub(/^[^ ]+ [ .]*/, "", res); sub(/ +[0-9.]+ sec.*$/, "", res)
                gsub(/\*/, "", res); gsub(/^ +| +$/, "", res)
                printf "%-8s %-40s %-12s %10s\n", suite, name, res, secs
            }' "$f"
    done
    if [ -s "$build/skipped.txt" ]; then
        echo "skipped, and why:"
        cat "$build/skipped.txt"
    fi
    if [ -s "$logs/sanitize.log" ]; then
        echo "compute-sanitizer:"
        grep -E '^[a-z]+check: ' "$logs/sanitize.log" | sed 's/^/  /' || echo "  no verdict (see sanitize.log)"
    fi
} >"$logs/summary.txt"
echo
cat "$logs/summary.txt"
if [ "$status" = 0 ]; then say "gpu-check: all passed"; else say "gpu-check: FAILURES (logs in $logs)"; fi
exit "$status"
