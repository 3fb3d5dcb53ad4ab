#!/usr/bin/env bash
# 2 GPUs, session 26: hdiff_gcomm's kernel bounded to 2 (default), 3 and 4 ranks of 512 threads
# per SM (64 / 40 / 32 registers), against the twin, alternating; each variant verified once per size.
cd "$(dirname "$0")/.."
nvidia-smi -L; date -u
export LD_LIBRARY_PATH=$PWD/build-dev/src:$LD_LIBRARY_PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
R=$(mktemp -d); n=$(nvidia-smi -L | wc -l)
t() { sed -n 's/^time per iteration: \([0-9.]*\) us.*/\1/p' | head -1; }
v() { grep -c "verified: yes"; }
echo "nj,round,variant,us" > $R/rps.csv
for nj in 5120 2560 320 1280; do
  a="--ni 128 --nj $nj --nk 26 --steps 100"
  echo "nj $nj verify: rps3 $(timeout 120 build-dev/rps3/hdiff_gcomm $a 2>&1 | v) rps4 $(timeout 120 build-dev/rps4/hdiff_gcomm $a 2>&1 | tee $R/rps4_$nj.log | v)"
  for r in 1 2; do
    line="nj $nj r$r:"
    for var in rps2 rps3 rps4 twin; do
      case $var in
        rps2) x=$(timeout 120 build-dev/apps/stencil/hdiff_gcomm $a --check 0 2>&1 | t) ;;
        rps3|rps4) x=$(timeout 120 build-dev/$var/hdiff_gcomm $a --check 0 2>&1 | t) ;;
        twin) x=$(timeout 120 mpirun -n $n --bind-to none -x LD_LIBRARY_PATH build-dev/apps/stencil/hdiff_mpicuda $a --check 0 2>&1 | t) ;;
      esac
      echo "$nj,$r,$var,$x" >> $R/rps.csv; line="$line $var $x"
    done
    echo "$line"
  done
done
head -5 $R/rps4_5120.log
tar czf $OUT/run72.tgz -C $R .; date -u
