#!/usr/bin/env bash
# Runs the GPU tests under compute-sanitizer: memcheck (out-of-bounds and misaligned accesses,
# errors of CUDA calls) and racecheck (shared-memory hazards) on test_gpu_locate and test_gpu_pack.
#
#   scripts/gpu-sanitize.sh [BUILD_DIR [NTYPES]]
#
# BUILD_DIR: a configured CUDA build (default build-gpu); the two tests are brought up to date
# there first. NTYPES: random types test_gpu_pack checks (default 100; the directed tests always
# run). Environment: OUT (where logs go; default BUILD_DIR/sanitize), TOOLS (default
# "memcheck racecheck"; initcheck and synccheck work too), SANITIZER (the compute-sanitizer to use).
# Prints one verdict line per tool and exits 0 when every tool found no error; a test that skips
# (no GPU: exit 77) makes the verdict SKIPPED.
set -uo pipefail
exec </dev/null
cd "$(dirname "$0")/.."

build=${1:-build-gpu}
ntypes=${2:-100}
tools=${TOOLS:-memcheck racecheck}
logs=${OUT:-$build/sanitize}
mkdir -p "$logs"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1

case ":$PATH:" in *:/usr/local/cuda/bin:*) ;; *) [ -d /usr/local/cuda/bin ] && PATH=$PATH:/usr/local/cuda/bin ;; esac
sanitizer=${SANITIZER:-$(command -v compute-sanitizer || true)}
if [ -z "$sanitizer" ]; then
    echo "gpu-sanitize: compute-sanitizer not found (set SANITIZER=/path/to/compute-sanitizer)" >&2
    exit 2
fi
if [ ! -f "$build/CMakeCache.txt" ]; then
    echo "gpu-sanitize: $build is not a configured build; run first:" >&2
    echo "  cmake -S . -B $build -DGCOMM_CUDA=ON && cmake --build $build -j" >&2
    exit 2
fi
if ! cmake --build "$build" -j "$(nproc 2>/dev/null || echo 4)" --target test_gpu_locate test_gpu_pack \
    >"$logs/build.log" 2>&1; then
    tail -n 30 "$logs/build.log"
    echo "gpu-sanitize: build FAILED (log: $logs/build.log)" >&2
    exit 1
fi

# test name -> command line (relative to the build directory)
tests=("test_gpu_locate:tests/gpu/test_gpu_locate" "test_gpu_pack:tests/gpu/test_gpu_pack $ntypes")

status=0
verdicts=()
for tool in $tools; do
    verdict=PASS
    details=()
    for entry in "${tests[@]}"; do
        name=${entry%%:*}
        cmd=${entry#*:}
        log="$logs/$tool-$name.log"
        start=$SECONDS
        # --error-exitcode tells sanitizer findings (99) from test failures (1) and skips (77).
        # Open MPI's singleton helper processes do not use CUDA: only the test itself is tracked.
        # shellcheck disable=SC2086
        "$sanitizer" --tool "$tool" --error-exitcode 99 --target-processes application-only \
            --print-limit 100 "$build"/$cmd >"$log" 2>&1
        rc=$?
        errors=$(sed -n 's/^========= \(ERROR\|RACECHECK\) SUMMARY: \([0-9]*\) .*/\2/p' "$log" | tail -n 1)
        secs=$((SECONDS - start))
        case $rc in
        0) details+=("$name ok, ${errors:-0} errors, ${secs} s") ;;
        77)
            details+=("$name skipped")
            [ "$verdict" = PASS ] && verdict=SKIPPED
            ;;
        99)
            details+=("$name: ${errors:-some} errors")
            verdict=FAIL
            ;;
        *)
            details+=("$name: exit $rc, ${errors:-?} sanitizer errors")
            verdict=FAIL
            ;;
        esac
    done
    [ "$verdict" = FAIL ] && status=1
    line="$tool: $verdict ($(IFS=';'; echo "${details[*]}" | sed 's/;/; /g')) logs: $logs/$tool-*.log"
    verdicts+=("$line")
    echo "$line"
done
printf '%s\n' "${verdicts[@]}" >"$logs/verdicts.txt"
exit $status
