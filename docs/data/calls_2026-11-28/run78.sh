#!/usr/bin/env bash
# 2x H200 only (exits at once on anything else), session 27: the new wait loop and small put
# (bench_rma_A: HEAD's build, for the same call) -- the device tests and the 1,000,000-notification
# stress, the multi-process test over CUDA IPC and through the proxy, the unsatisfiable wait's
# report, memcheck and racecheck, the guide's example, the stencil demo, then the 0 / 8 B one-way
# times: new and A alternating three times around two NVSHMEM runs.
cd "$(dirname "$0")/.."
nvidia-smi -L; date -u
if ! nvidia-smi -L | head -1 | grep -q H200 || [ "$(nvidia-smi -L | wc -l)" -lt 2 ]; then echo "not an H200 pair"; exit 0; fi
export GPU_DIR=build-dev
. scripts/gpu-lib.sh
R=$(mktemp -d); FINAL=$OUT; logs=$R
export LD_LIBRARY_PATH=$PWD/build-dev/src:$LD_LIBRARY_PATH
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
step test_rma_device 150 $b/tests/rma/test_rma_device all 1000000
step test_rma_mpi 150 mpirun -n 2 --bind-to none -x LD_LIBRARY_PATH $b/tests/rma/test_rma_mpi all 500000
step test_rma_mpi_proxy 150 mpirun -n 2 --bind-to none -x LD_LIBRARY_PATH -x GCOMM_FORCE_PROXY=1 $b/tests/rma/test_rma_mpi all 50000
step rma_timeout 60 env GCOMM_TIMEOUT_MS=1500 $b/tests/rma/test_rma_device timeout
step memcheck 200 $cs --tool memcheck --error-exitcode 9 --report-api-errors no $b/tests/rma/test_rma_device small 3000
step racecheck 200 $cs --tool racecheck --error-exitcode 9 --report-api-errors no $b/tests/rma/test_rma_device small 3000
step guide_example 60 $b/tests/doc_guide_device_initiated_notified_rma
step stencil_demo 60 $b/apps/stencil/stencil_dcuda --ni 512 --nj-per-rank 16 --steps 100
pp() { awk -F, '($1=="gcomm" || $1=="flag") && ($2 ~ /pingpong/) && $3 <= 8 {printf "%s/%s/%s=%s  ", $1,$2,$3,$6}' "$1"; }
for i in 1 2 3; do
  for v in new A; do
    bin=$b/bench/bench_rma; [ $v = A ] && bin=$b/bench/bench_rma_A
    timeout 90 $bin --max-bytes 8 --repeats 9 --csv $R/rma_${v}_$i.csv > $R/rma_${v}_$i.log 2>&1
    echo "$v $i rc=$?: $(pp $R/rma_${v}_$i.csv)"
  done
  [ $i = 3 ] && break
  mkdir -p $R/nv$i
  OUT=$R/nv$i BENCH_TIMEOUT=100 timeout 200 bash scripts/run-nvshmem-bench.sh --max-bytes 1K > $R/nv$i/run.log 2>&1
  echo "nvshmem $i rc=$?: $(awk -F, '$2 == "pingpong_put_signal" && ($3 == 0 || $3 == 8) {printf "%s B %s us  ", $3, $6}' $R/nv$i/nvshmem.csv)"
done
grep -hE "^(ring|gather|get|overlap|log|typed|stress|errors|timeout|test_rma)|FAIL|checks" $R/test_rma_*.log $R/rma_timeout.log | head -40
grep -hE "ERROR SUMMARY|RACECHECK SUMMARY" $R/memcheck.log $R/racecheck.log
grep -hE "time per|verified" $R/stencil_demo.log; tail -3 $R/guide_example.log
printf '%s\n' "${results[@]}"
tar czf $FINAL/run78.tgz -C $R .
date -u
