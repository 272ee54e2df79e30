#!/usr/bin/env bash
# Framework wheels for the simulated nodes (molecule/frameworks): the pinned CPU builds of PyTorch and TensorFlow and
# their dependencies, for the nodes' Python (Debian 12: CPython 3.11, manylinux x86_64).
# The wheels (about 700 MB) live in a cache OUTSIDE the checkout, so that a fresh clone in CI reuses them:
#   WHEELHOUSE_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/accelops-gpu/wheelhouse)
# and build/mirror/wheelhouse is a link to that cache, which tests/sim/mirror.sh serves at /wheelhouse/ (pip
# --find-links http://127.0.0.1:18080/wheelhouse/). mirror.sh serves build/mirror/ as it is: no change is needed there
# beyond calling this script first (e.g. one line `"$root/tests/sim/wheelhouse.sh" fill` in its fill()).
# Usage: tests/sim/wheelhouse.sh fill|path
#   fill  download what is missing (a no-op when the cache already holds the pins), then link it into build/mirror/
#   path  print the cache directory
# The pins come from the roles' defaults, so the wheelhouse follows them.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
cache=${WHEELHOUSE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/accelops-gpu/wheelhouse}
python=${PYTHON:-python3}
# The nodes' interpreter and platform, not this machine's.
node_python=${WHEELHOUSE_PYTHON_VERSION:-3.11}
# Debian 12 has glibc 2.36: every manylinux_2_N up to it fits (tensorflow-cpu 2.21 is manylinux_2_27, torch 2_28).
node_glibc_minor=${WHEELHOUSE_GLIBC_MINOR:-36}
node_platforms=(manylinux2014_x86_64 manylinux1_x86_64)
for ((minor = node_glibc_minor; minor >= 5; minor--)); do node_platforms+=("manylinux_2_${minor}_x86_64"); done

pin() {  # the quoted value of a key in a role's defaults/main.yml
  sed -n "s/^$2: *\"\{0,1\}\([^\"]*\)\"\{0,1\} *$/\1/p" "$root/roles/$1/defaults/main.yml"
}

fill() {
  local torch tensorflow stamp
  torch=$(pin pytorch pytorch_version)
  tensorflow=$(pin tensorflow tensorflow_version)
  mkdir -p "$cache"
  stamp="$cache/.filled-torch-$torch-tensorflow-cpu-$tensorflow-cp${node_python/./}"
  if [ ! -e "$stamp" ]; then
    local args=(--dest "$cache" --only-binary=:all: --python-version "$node_python" --implementation cp)
    for platform in "${node_platforms[@]}"; do args+=(--platform "$platform"); done
    # The CPU torch: download.pytorch.org/whl/cpu names it torch-<v>+cpu; PEP 440 ranks <v>+cpu above <v>, so where
    # both are offered pip takes the CPU build. An explicit index can be given with WHEELHOUSE_TORCH_INDEX.
    local torch_index=()
    if [ -n "${WHEELHOUSE_TORCH_INDEX:-}" ]; then torch_index=(--extra-index-url "$WHEELHOUSE_TORCH_INDEX"); fi
    start=$(date +%s)
    "$python" -m pip download -q "${args[@]}" "${torch_index[@]}" "torch==$torch"
    "$python" -m pip download -q "${args[@]}" "tensorflow-cpu==$tensorflow"
    echo "wheelhouse: downloaded into $cache in $(( $(date +%s) - start )) s" >&2
    if ! ls "$cache"/torch-"$torch"+cpu-*.whl >/dev/null 2>&1; then
      echo "wheelhouse: torch $torch came without the +cpu build; the nodes would fetch CUDA wheels" >&2
      exit 1
    fi
    touch "$stamp"
  fi
  mkdir -p "$root/build/mirror"
  ln -sfn "$cache" "$root/build/mirror/wheelhouse"
}

case "${1:-}" in
  fill) fill ;;
  path) echo "$cache" ;;
  *)
    echo "usage: $0 fill|path" >&2
    exit 2
    ;;
esac
