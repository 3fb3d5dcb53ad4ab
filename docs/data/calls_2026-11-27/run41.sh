#!/usr/bin/env bash
# 2 GPUs: the small-copy path (20d4213 = base vs new) in the shapes with many small ranks per SM,
# where the exchange is bound by instruction issue: lean 16 x 64 and 32 x 32, sweep 1,2,4
cd "$(dirname "$0")/.."
R=$(mktemp -d); FINAL=$OUT
nvidia-smi -L; date -u
ov() { awk '$2=="both" || $2=="exchange" || $2=="compute" {printf "%s/%s/%s=%s%s ", $1,$2,$7,$8,($2=="both"?"("$9","$10")":"")}' "$1"; }
for r in 1; do
  for v in base new; do
    if [ $v = base ]; then ob=build-dev/base/bench_overlap; lib=$PWD/build-dev/base; else ob=build-dev/bench/bench_overlap; lib=$PWD/build-dev/src; fi
    export LD_LIBRARY_PATH=$lib
    for s in "64 16" "32 32"; do set -- $s
      timeout 150 $ob --lean --threads $1 --ranks-per-sm $2 --sweep 1,2,4 --csv $R/ov_${v}_$1x$2_$r.csv > $R/ov_${v}_$1x$2_$r.log 2>&1
      echo "$r $v lean $2x$1 rc=$?: $(grep -h registers $R/ov_${v}_$1x$2_$r.log | sed 's/.*kernel/kernel/' | head -1)"; echo "   $(ov $R/ov_${v}_$1x$2_$r.log)"
    done
  done
done
tar czf $FINAL/run41.tgz -C $R .
date -u
