#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages gcomm needs that are missing.
#
#   scripts/deps.sh            build, test and plot dependencies
#   scripts/deps.sh --fuzz     also clang and its runtime (libFuzzer, sanitizers)
#   scripts/deps.sh --check    only report; install nothing (exit 1 when something is missing)
#
# As root it runs `apt-get update` once and installs what is missing, non-interactively. As another
# user it prints the exact command to run and fails when a required package is missing (plotting,
# python3-matplotlib, is optional). When everything is present it is a quick no-op: a package counts
# as present when dpkg says it is installed or when what it provides is already usable (a cmake
# from elsewhere on PATH, for instance).
set -euo pipefail

fuzz=0
check_only=0
for arg in "$@"; do
    case "$arg" in
    --fuzz) fuzz=1 ;;
    --check) check_only=1 ;;
    -h | --help)
        sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "deps.sh: unknown argument '$arg' (try --help)" >&2
        exit 2
        ;;
    esac
done

required=(cmake gcc make pkg-config libopenmpi-dev openmpi-bin libhwloc-dev)
optional=(python3-matplotlib)
# nvcc compiles host code with g++: needed as soon as CMake finds a CUDA compiler.
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
    required+=(g++)
fi
if [ "$fuzz" = 1 ]; then
    required+=(clang libclang-rt-14-dev)
fi

# Usable without the package? (a tool installed some other way)
provided_otherwise() {
    case "$1" in
    cmake) command -v cmake >/dev/null 2>&1 &&
        cmake --version 2>/dev/null | awk 'NR==1 { split($3, v, "."); exit !(v[1] > 3 || (v[1] == 3 && v[2] >= 24)) }' ;;
    gcc) command -v gcc >/dev/null 2>&1 ;;
    g++) command -v g++ >/dev/null 2>&1 ;;
    make) command -v make >/dev/null 2>&1 ;;
    pkg-config) command -v pkg-config >/dev/null 2>&1 ;;
    openmpi-bin) command -v mpirun >/dev/null 2>&1 ;;
    libopenmpi-dev) command -v mpicc >/dev/null 2>&1 ;;
    libhwloc-dev) command -v pkg-config >/dev/null 2>&1 && pkg-config --exists hwloc ;;
    python3-matplotlib) command -v python3 >/dev/null 2>&1 && python3 -c 'import matplotlib' 2>/dev/null ;;
    clang) command -v clang >/dev/null 2>&1 ;;
    libclang-rt-14-dev)
        command -v clang >/dev/null 2>&1 &&
            [ -f "$(clang -print-file-name=libclang_rt.fuzzer-x86_64.a 2>/dev/null)" ] ;;
    *) return 1 ;;
    esac
}

# One dpkg-query for all packages: prints the names dpkg reports as installed.
installed_pkgs() {
    command -v dpkg-query >/dev/null 2>&1 || return 0
    { dpkg-query -W -f='${Package} ${db:Status-Status}\n' "$@" 2>/dev/null || true; } |
        awk '$2 == "installed" { sub(/:.*/, "", $1); print $1 }'
}

all=("${required[@]}" "${optional[@]}")
have=" $(installed_pkgs "${all[@]}" | tr '\n' ' ') "
missing_required=()
missing_optional=()
for p in "${required[@]}"; do
    [[ "$have" == *" $p "* ]] || provided_otherwise "$p" || missing_required+=("$p")
done
for p in "${optional[@]}"; do
    [[ "$have" == *" $p "* ]] || provided_otherwise "$p" || missing_optional+=("$p")
done
missing=("${missing_required[@]}" "${missing_optional[@]}")

if [ "${#missing[@]}" -eq 0 ]; then
    echo "deps.sh: all dependencies present"
    exit 0
fi

echo "deps.sh: missing: ${missing[*]}"
install_cmd="apt-get install -y --no-install-recommends ${missing[*]}"

if [ "$check_only" = 1 ] || [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1; then
        echo "deps.sh: run as root:"
        echo "    sudo apt-get update && sudo $install_cmd"
    else
        echo "deps.sh: no apt-get here; install the equivalents of: ${missing[*]}"
    fi
    if [ "${#missing_required[@]}" -gt 0 ]; then
        echo "deps.sh: required packages are missing: ${missing_required[*]}" >&2
        exit 1
    fi
    echo "deps.sh: only optional packages are missing (plots will not be drawn); continuing"
    exit 0
fi

export DEBIAN_FRONTEND=noninteractive
echo "deps.sh: + apt-get update"
apt-get update -q </dev/null
echo "deps.sh: + $install_cmd"
apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
echo "deps.sh: installed ${missing[*]}"
