#!/usr/bin/env bash
# Runs the NVSHMEM peer benchmark (bench/bench_nvshmem.cu) on the GPU machine: 2 PEs, one per GPU,
# under mpirun; writes $OUT/nvshmem.csv (OUT defaults to the build directory) and the program's log
# $OUT/nvshmem.log, and prints the table.
#   scripts/run-nvshmem-bench.sh [bench_nvshmem options...]     e.g. --quick, --max-bytes 1M
# Brings bench_nvshmem in build-gpu (GPU_DIR) up to date first, configuring build-gpu if needed
# (bench_nvshmem is built only when NVSHMEM is found: GCOMM_NVSHMEM_ROOT, default the /opt/torch
# venv's nvidia/nvshmem).
# Exit status: the benchmark's (77: skipped, e.g. one GPU only; 124: timed out after
# BENCH_TIMEOUT seconds, default 900).
set -euo pipefail
exec </dev/null
cd "$(dirname "$0")/.."

# Never NVLink multicast (NVLS): not available to us on the lent machines.
export NVSHMEM_DISABLE_NVLS=1
export NCCL_NVLS_ENABLE=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
case ":$PATH:" in *:/usr/local/cuda/bin:*) ;; *) [ -d /usr/local/cuda/bin ] && PATH=$PATH:/usr/local/cuda/bin ;; esac

# Its own build directory, configured on the GPU machine: NVSHMEM (and the cmake found there)
# must not be mixed into a build carried from elsewhere.
build=${NVSHMEM_BUILD_DIR:-build-nvshmem}
bin=$build/bench/bench_nvshmem
out=${OUT:-$build}
mkdir -p "$out"

# Configure afresh when the build directory was made for another source tree (as
# scripts/gpu-check.sh does); always bring bench_nvshmem up to date (cheap when it is). A build
# directory configured before NVSHMEM was there picks it up on the re-configure that this build
# triggers (bench/CMakeLists.txt fills an empty GCOMM_NVSHMEM_ROOT with the default).
cache_home=""
[ -f "$build/CMakeCache.txt" ] &&
    cache_home=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")
if [ -n "$cache_home" ] && [ "$cache_home" != "$(pwd -P)" ]; then
    rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles"
fi
: >"$out/nvshmem-build.log"
if [ ! -f "$build/CMakeCache.txt" ] || [ ! -x "$bin" ]; then
    echo "==== configuring $build (log: $out/nvshmem-build.log)"
    if [ -f "$build/CMakeCache.txt" ]; then
        cmake -S . -B "$build" >>"$out/nvshmem-build.log" 2>&1
    else
        cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DGCOMM_CUDA=ON >>"$out/nvshmem-build.log" 2>&1
    fi || { tail -n 40 "$out/nvshmem-build.log"; echo "configure FAILED"; exit 1; }
    grep 'bench_nvshmem' "$out/nvshmem-build.log" || true
fi
if ! cmake --build "$build" --target bench_nvshmem -j "$(nproc 2>/dev/null || echo 8)" \
    >>"$out/nvshmem-build.log" 2>&1; then
    tail -n 40 "$out/nvshmem-build.log"
    echo "build of bench_nvshmem FAILED (NVSHMEM not found? GCOMM_NVSHMEM_ROOT in $build/CMakeCache.txt)"
    exit 1
fi

{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader 2>&1 || true
    nvidia-smi topo -m 2>&1 || true
    env | grep -E '^(NVSHMEM_|CUDA_VISIBLE)' || true
} >"$out/nvshmem-env.txt" 2>&1

echo "==== mpirun -n 2 --bind-to none $bin --csv $out/nvshmem.csv $*"
rc=0
timeout "${BENCH_TIMEOUT:-900}" \
    mpirun -n 2 --bind-to none -x NVSHMEM_DISABLE_NVLS -x PATH \
    "$bin" --csv "$out/nvshmem.csv" "$@" 2>&1 | tee "$out/nvshmem.log" || rc=${PIPESTATUS[0]}

if [ -s "$out/nvshmem.csv" ]; then
    echo
    echo "==== $out/nvshmem.csv"
    column -s, -t <"$out/nvshmem.csv" 2>/dev/null || cat "$out/nvshmem.csv"
fi
echo "==== bench_nvshmem exit status: $rc"
exit "$rc"
