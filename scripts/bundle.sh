#!/usr/bin/env bash
# Runs one of the GPU-machine scripts with its logs bundled: the device tool brings back at most
# 8 files from $OUT, while rma-check.sh, proxy-check.sh and the others write one log per step.
#   scripts/bundle.sh NAME COMMAND...
# runs COMMAND with OUT pointing at a scratch folder (its logs and CSVs go there), passes its
# output through, then packs the folder into $OUT/NAME.tgz (unpack here with
# `tar xzf NAME.tgz`: a folder NAME/). Without OUT the scratch folder is kept and named.
# Exit status: COMMAND's.
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: scripts/bundle.sh NAME COMMAND..." >&2; exit 2; }
name=$1
shift
case $name in *[!A-Za-z0-9._-]*) echo "bundle.sh: NAME must be letters, digits, . _ -" >&2; exit 2 ;; esac
real_out=${OUT:-}
scratch=$(mktemp -d)/$name
mkdir -p "$scratch"
OUT=$scratch "$@"
rc=$?
if [ -n "$real_out" ]; then
    tar czf "$real_out/$name.tgz" -C "$(dirname "$scratch")" "$name" && rm -rf "$(dirname "$scratch")"
else
    echo "bundle.sh: logs of $name in $scratch"
fi
exit $rc
