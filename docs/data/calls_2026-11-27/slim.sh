#!/usr/bin/env bash
# Copies the binaries a device call needs from build-gpu into build-dev (carried: < ~58 MB).
set -e
cd "$(dirname "$0")/.."
rm -rf build-dev; mkdir -p build-dev
for f in "$@"; do
  [ -e build-gpu/$f ] || { echo "missing build-gpu/$f"; exit 1; }
  mkdir -p build-dev/$(dirname $f); cp build-gpu/$f build-dev/$f
done
du -sh build-dev
mkdir -p build-dev/src && cp -a build-gpu/src/libgcomm*.so* build-dev/src/
du -sh build-dev
