#!/usr/bin/env bash
# 2 GPUs, session 26: hdiff_gcomm choosing its kernel (2 or 3 ranks per SM, --ranks-per-sm 0):
# the sweep against the twin (every run verified), then 5120 and 2560 lines with each kernel
# forced, alternating with the twin.
cd "$(dirname "$0")/.."
nvidia-smi -L; date -u
export LD_LIBRARY_PATH=$PWD/build-dev/src:$LD_LIBRARY_PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
R=$(mktemp -d); n=$(nvidia-smi -L | wc -l); b=build-dev/apps/stencil
t() { sed -n 's/^time per iteration: \([0-9.]*\) us.*/\1/p' | head -1; }
csv=$R/hdiff_sweep.csv
echo "nj_per_gpu,gpus,gcomm_us,gcomm_lines_us,twin_us,twin_halo_us,twin_halo_share,speedup,verified,rps" >"$csv"
for nj in 32 64 128 320 640 1280 2560 3840 5120; do
  g=$(timeout 120 $b/hdiff_gcomm --ni 128 --nj $nj --nk 26 --steps 100 2>&1)
  gl=$(timeout 120 $b/hdiff_gcomm --ni 128 --nj $nj --nk 26 --steps 100 --halo lines 2>&1)
  tw=$(timeout 120 mpirun -n $n --bind-to none -x LD_LIBRARY_PATH $b/hdiff_mpicuda --ni 128 --nj $nj --nk 26 --steps 100 2>&1)
  gu=$(echo "$g" | t); glu=$(echo "$gl" | t); tu=$(echo "$tw" | t)
  hu=$(echo "$tw" | sed -n 's/^halo exchange per iteration: \([0-9.]*\) us.*/\1/p' | head -1)
  ok=$(echo "$g$gl$tw" | grep -c "verified: yes")
  rps=$(echo "$g" | sed -n 's/.*kernel for \([0-9]\) per SM.*/\1/p' | head -1)
  echo "$nj,$n,$gu,$glu,$tu,$hu,$(awk -v h="$hu" -v t="$tu" 'BEGIN{if(t>0)printf "%.3f",h/t}'),$(awk -v g="$gu" -v t="$tu" 'BEGIN{if(g>0)printf "%.3f",t/g}'),$([ "$ok" = 3 ] && echo yes || echo NO),$rps" >>"$csv"
done
cat "$csv"
echo "nj,round,variant,us" > $R/ab.csv
for nj in 5120 2560 320; do for r in 1 2; do
  a="--ni 128 --nj $nj --nk 26 --steps 100 --check 0"
  xh=$(timeout 120 build-dev/head/hdiff_gcomm $a 2>&1 | t)
  x2=$(timeout 120 $b/hdiff_gcomm $a --ranks-per-sm 2 2>&1 | t); x3=$(timeout 120 $b/hdiff_gcomm $a --ranks-per-sm 3 2>&1 | t)
  xt=$(timeout 120 mpirun -n $n --bind-to none -x LD_LIBRARY_PATH $b/hdiff_mpicuda $a 2>&1 | t)
  echo "$nj,$r,head,$xh" >> $R/ab.csv; echo "$nj,$r,rps2,$x2" >> $R/ab.csv; echo "$nj,$r,rps3,$x3" >> $R/ab.csv; echo "$nj,$r,twin,$xt" >> $R/ab.csv
  echo "nj $nj r$r: head $xh rps2 $x2 rps3 $x3 twin $xt"
done; done
tar czf $OUT/run73.tgz -C $R .; date -u
