#!/usr/bin/env bash
# 2 GPUs, session 25: on H200s the whole pair-figure set (calls/run63.sh); on H100s the current
# code's 0/8 B one-way times against NVSHMEM's put_signal in the same call, and the two
# compute-sanitizer tools not yet run on the RMA tests (initcheck, synccheck), plus memcheck on
# the process path (mpirun -n 2 test_rma_mpi under memcheck).
cd "$(dirname "$0")/.."
if nvidia-smi -L | head -1 | grep -q H200; then exec bash calls/run63.sh; fi
export GPU_DIR=build-dev
. scripts/gpu-lib.sh
R=$(mktemp -d); FINAL=$OUT; logs=$R
nvidia-smi -L; date -u
export LD_LIBRARY_PATH=$PWD/build-dev/src:$LD_LIBRARY_PATH
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
pp() { awk -F, '($1=="gcomm" || $1=="flag") && ($2 ~ /pingpong/) && $3 <= 8 {printf "%s/%s/%s=%s  ", $1,$2,$3,$6}' "$1"; }
for r in 1 2; do
  timeout 90 build-dev/bench/bench_rma --max-bytes 8 --repeats 9 --csv $R/rma_$r.csv > $R/rma_$r.log 2>&1
  echo "$r rc=$?: $(pp $R/rma_$r.csv)"
done
OUT=$R GPU_DIR=build-dev BENCH_TIMEOUT=100 timeout 150 bash scripts/run-nvshmem-bench.sh --max-bytes 1M > $R/nvshmem_run.log 2>&1
echo "nvshmem rc=$?: $(awk -F, '$2 == "pingpong_put_signal" && ($3 == 0 || $3 == 8) {printf "%s B %s us  ", $3, $6}' $R/nvshmem.csv)"
timeout 90 build-dev/bench/bench_rma --max-bytes 8 --repeats 9 --csv $R/rma_3.csv > $R/rma_3.log 2>&1
echo "3 rc=$?: $(pp $R/rma_3.csv)"
step initcheck 200 $cs --tool initcheck --error-exitcode 9 --report-api-errors no $b/tests/rma/test_rma_device small 3000
step synccheck 200 $cs --tool synccheck --error-exitcode 9 --report-api-errors no $b/tests/rma/test_rma_device small 3000
step memcheck_mpi 200 mpirun -n 2 --bind-to none -x LD_LIBRARY_PATH $cs --tool memcheck --error-exitcode 9 --report-api-errors no $b/tests/rma/test_rma_mpi all 3000
grep -hE "ERROR SUMMARY|SYNCCHECK|INITCHECK" $R/initcheck.log $R/synccheck.log $R/memcheck_mpi.log | sort | uniq -c
printf '%s\n' "${results[@]}"
tar czf $FINAL/run65.tgz -C $R .
date -u
