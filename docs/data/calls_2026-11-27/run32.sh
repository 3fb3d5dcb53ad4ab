#!/usr/bin/env bash
# 4x GPU with the polling loops' drain out of line (4b09d88): the job-of-4 ping-pong against the
# build before it (build-dev/head/bench_rma), two rounds alternating; bench_rma_prof --peer in a
# job of 4; scripts/scale-check.sh whole; test_rma_device on 4 GPUs, test_rma_mpi on 4 processes
# (CUDA IPC and through the proxy). One tarball.
cd "$(dirname "$0")/.."
export GPU_DIR=build-dev
. scripts/gpu-lib.sh
export LD_LIBRARY_PATH=$PWD/build-dev/src:$LD_LIBRARY_PATH
R=$(mktemp -d); FINAL=$OUT; logs=$R
nvidia-smi -L; date -u
pp() { awk -F, '$1=="gcomm" && ($2 ~ /pingpong/ || $2=="barrier_world") {printf "%s/%s/%s=%s  ", $2,$3,$5,$6}' "$1"; }
for r in 1 2; do
  for v in head new; do
    bin=build-dev/bench/bench_rma; [ $v = head ] && bin=build-dev/head/bench_rma
    GCOMM_DEVICES=0,1,2,3 timeout 120 $bin --max-bytes 8 --repeats 9 --csv $R/job4_${v}_$r.csv > $R/job4_${v}_$r.log 2>&1
    echo "$r $v [0,1,2,3] rc=$?: $(pp $R/job4_${v}_$r.csv)"
  done
done
GCOMM_DEVICES=0,1,2,3 timeout 120 build-dev/bench/bench_rma_prof --peer --repeats 5 > $R/prof_job4.log 2>&1
echo "prof rc=$?"; grep -E "^gcomm|put path" $R/prof_job4.log | head -4
date -u
mkdir -p $R/scale
OUT=$R/scale timeout 420 bash scripts/scale-check.sh > $R/scale/summary.txt 2>&1
echo "scale-check rc=$?"; tail -n 30 $R/scale/summary.txt
step test_rma_device4 100 $b/tests/rma/test_rma_device all 1000000
step test_rma_mpi4 60 mpirun -n 4 --bind-to none $b/tests/rma/test_rma_mpi all 100000
step test_rma_mpi4_proxy 60 mpirun -n 4 --bind-to none -x GCOMM_FORCE_PROXY=1 $b/tests/rma/test_rma_mpi all 30000
grep -hE "checks|FAIL" $R/test_rma_*.log | tail -n 10
printf '%s\n' "${results[@]}"
tar czf $FINAL/run32.tgz -C $R .
date -u
