#!/usr/bin/env bash
# 2 GPUs, session 26: hdiff's compute phases with two points per trip (hd_phase_*, new) against
# one (base, the binaries before the change), both variants, alternating; every new binary
# verified once per size against the serial reference.
cd "$(dirname "$0")/.."
nvidia-smi -L; date -u
export LD_LIBRARY_PATH=$PWD/build-dev/src:$LD_LIBRARY_PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
R=$(mktemp -d); n=$(nvidia-smi -L | wc -l)
t() { sed -n 's/^time per iteration: \([0-9.]*\) us.*/\1/p' | head -1; }
v() { grep -c "verified: yes"; }
echo "nj,round,variant,build,us" > $R/ab.csv
for nj in 5120 1280 320 2560; do
  a="--ni 128 --nj $nj --nk 26 --steps 100"
  echo "nj $nj verify: gcomm $(timeout 120 build-dev/apps/stencil/hdiff_gcomm $a 2>&1 | v) twin $(timeout 120 mpirun -n $n --bind-to none -x LD_LIBRARY_PATH build-dev/apps/stencil/hdiff_mpicuda $a 2>&1 | v)"
  for r in 1 2; do
    for bld in base new; do
      d=build-dev/apps/stencil; [ $bld = base ] && d=build-dev/base
      g=$(timeout 120 $d/hdiff_gcomm $a --check 0 2>&1 | t)
      tw=$(timeout 120 mpirun -n $n --bind-to none -x LD_LIBRARY_PATH $d/hdiff_mpicuda $a --check 0 2>&1 | t)
      echo "$nj,$r,gcomm,$bld,$g" >> $R/ab.csv; echo "$nj,$r,twin,$bld,$tw" >> $R/ab.csv
      echo "nj $nj r$r $bld: gcomm $g twin $tw"
    done
  done
done
tar czf $OUT/run71.tgz -C $R .; date -u
