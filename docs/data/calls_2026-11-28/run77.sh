#!/usr/bin/env bash
# 2x H200 (exits on anything else), session 27: bench_rma 0/8 B, variants A (HEAD), B (put's depth
# and rank before the atomic's result + the wait's polls in one loop), E (B + the take uses the
# peek's read position and depth), EF (E + the put's window cache entry read with ld.shared),
# alternating with NVSHMEM's put_signal. Everything under $OUT in one tarball.
cd "$(dirname "$0")/.."
nvidia-smi -L; date -u
if ! nvidia-smi -L | head -1 | grep -q H200 || [ "$(nvidia-smi -L | wc -l)" -lt 2 ]; then echo "not an H200 pair"; exit 0; fi
R=$(mktemp -d)
export LD_LIBRARY_PATH=$PWD/build-dev/src:$LD_LIBRARY_PATH
pp() { awk -F, '($1=="gcomm" || $1=="flag") && ($2 ~ /pingpong/) && $3 <= 8 {printf "%s/%s/%s=%s  ", $1,$2,$3,$6}' "$1"; }
for i in 1 2 3; do
  for v in A B E EF; do
    timeout 90 build-dev/bench/bench_rma_$v --max-bytes 8 --repeats 9 --csv $R/rma_${v}_$i.csv > $R/rma_${v}_$i.log 2>&1
    echo "$v $i rc=$?: $(pp $R/rma_${v}_$i.csv)"
  done
  [ $i = 3 ] && break
  mkdir -p $R/nv$i
  OUT=$R/nv$i BENCH_TIMEOUT=100 timeout 200 bash scripts/run-nvshmem-bench.sh --max-bytes 1K > $R/nv$i/run.log 2>&1
  echo "nvshmem $i rc=$?: $(awk -F, '$2 == "pingpong_put_signal" && ($3 == 0 || $3 == 8) {printf "%s B %s us  ", $3, $6}' $R/nv$i/nvshmem.csv)"
done
tar czf $OUT/run77.tgz -C $R .; date -u
