#!/usr/bin/env bash
# Framework wheels for the simulated nodes (molecule/frameworks, molecule/default, make demo): the pinned CPU builds of
# PyTorch and TensorFlow and their dependencies, for the nodes' Python, manylinux x86_64:
#   Debian 12, CPython 3.11: torch (CPU build) and tensorflow-cpu;
#   Debian 13, CPython 3.13: tensorflow-cpu only;
#   Debian 12, CPython 3.11: pyspark (molecule/spark), a wheel built here once from PyPI's sdist (about 450 MB: PyPI
#   has no wheel of it), and py4j. The CPU torch is not on PyPI (PyPI's torch is the CUDA build, which
#   pulls gigabytes of CUDA wheels); it comes from download.pytorch.org/whl/cpu or a mirror of it
#   (WHEELHOUSE_TORCH_INDEX), and where none is at hand a node's torch is left out (as the default scenario does).
# The wheels (about 1 GB) live in a cache OUTSIDE the checkout, so that a fresh clone in CI reuses them:
#   WHEELHOUSE_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/accelops-gpu/wheelhouse)
# and build/mirror/wheelhouse is a link to that cache, which tests/sim/mirror/mirror.sh serves at /wheelhouse/ (pip
# --find-links http://127.0.0.1:18080/wheelhouse/). pip on a node takes the wheels of its own interpreter from it.
# Usage: tests/sim/mirror/wheelhouse.sh fill|path
#   fill  download what is missing (a no-op when the cache already holds the pins), then link it into build/mirror/
#   path  print the cache directory
# The pins come from the roles' defaults, so the wheelhouse follows them.
set -euo pipefail

root=$(cd "$(dirname "$0")/../../.." && pwd)
cache=${WHEELHOUSE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/accelops-gpu/wheelhouse}
python=${PYTHON:-python3}
# The nodes' interpreters and what each gets ("<python>:<what>[,<what>]"), not this machine's.
nodes=${WHEELHOUSE_NODES:-3.11:torch,tensorflow,spark 3.13:tensorflow}
# Debian 12 has glibc 2.36 (Debian 13: 2.41): every manylinux_2_N up to 2.36 fits both (tensorflow-cpu 2.21 is
# manylinux_2_27, torch 2_28).
node_glibc_minor=${WHEELHOUSE_GLIBC_MINOR:-36}
node_platforms=(manylinux2014_x86_64 manylinux1_x86_64)
for ((minor = node_glibc_minor; minor >= 5; minor--)); do node_platforms+=("manylinux_2_${minor}_x86_64"); done

pin() {  # the quoted value of a key in a role's defaults/main.yml
  sed -n "s/^$2: *\"\{0,1\}\([^\"]*\)\"\{0,1\} *$/\1/p" "$root/roles/$1/defaults/main.yml"
}

fill_node() {  # fill_node <python> <what,...>: the wheels of one interpreter, unless its stamp says they are there
  local node_python=$1 what=$2 torch tensorflow pyspark stamp start
  torch=$(pin pytorch pytorch_version)
  tensorflow=$(pin tensorflow tensorflow_version)
  pyspark=$(pin spark spark_version)
  stamp="$cache/.filled"
  [[ ,$what, == *,torch,* ]] && stamp+="-torch-$torch"
  [[ ,$what, == *,tensorflow,* ]] && stamp+="-tensorflow-cpu-$tensorflow"
  [[ ,$what, == *,spark,* ]] && stamp+="-pyspark-$pyspark"
  stamp+="-cp${node_python/./}"
  [ -e "$stamp" ] && return 0
  local args=(--dest "$cache" --only-binary=:all: --python-version "$node_python" --implementation cp)
  for platform in "${node_platforms[@]}"; do args+=(--platform "$platform"); done
  start=$(date +%s)
  if [[ ,$what, == *,torch,* ]]; then
    # The CPU torch: download.pytorch.org/whl/cpu names it torch-<v>+cpu; PEP 440 ranks <v>+cpu above <v>, so where
    # both are offered pip takes the CPU build. An explicit index can be given with WHEELHOUSE_TORCH_INDEX.
    local torch_index=()
    if [ -n "${WHEELHOUSE_TORCH_INDEX:-}" ]; then torch_index=(--extra-index-url "$WHEELHOUSE_TORCH_INDEX"); fi
    "$python" -m pip download -q "${args[@]}" "${torch_index[@]}" "torch==$torch"
    if ! ls "$cache"/torch-"$torch"+cpu-cp"${node_python/./}"-*.whl >/dev/null 2>&1; then
      echo "wheelhouse: torch $torch for CPython $node_python came without the +cpu build; the nodes would fetch CUDA" \
        "wheels (set WHEELHOUSE_TORCH_INDEX to download.pytorch.org/whl/cpu or a mirror of it)" >&2
      exit 1
    fi
  fi
  if [[ ,$what, == *,tensorflow,* ]]; then
    "$python" -m pip download -q "${args[@]}" "tensorflow-cpu==$tensorflow"
  fi
  if [[ ,$what, == *,spark,* ]]; then
    # pyspark is pure Python (its wheel is py2.py3-none-any): built by this machine's pip, then its dependencies
    # (py4j) for the node's Python, with the built wheel found in the cache.
    [ -e "$cache/pyspark-$pyspark-py2.py3-none-any.whl" ] ||
      "$python" -m pip wheel -q --no-deps --wheel-dir "$cache" "pyspark==$pyspark"
    "$python" -m pip download -q "${args[@]}" --find-links "$cache" "pyspark==$pyspark"
  fi
  echo "wheelhouse: CPython $node_python ($what) downloaded into $cache in $(( $(date +%s) - start )) s" >&2
  touch "$stamp"
}

fill() {
  local node
  mkdir -p "$cache"
  for node in $nodes; do fill_node "${node%%:*}" "${node#*:}"; done
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
