#!/usr/bin/env bash
# The local package mirror that simulated nodes install from, served over HTTP on 127.0.0.1 only:
#   build/mirror/wheels/   Python wheels (nvidia-ml-py, prometheus_client, bcrypt, PyYAML), used as pip --find-links
#   build/mirror/cuda/     the signed CUDA apt repositories (tests/sim/mirror/cudamirror/build.py), at /cuda/repos/<distro>/x86_64/
# Usage: tests/sim/mirror/mirror.sh start|stop|url
set -euo pipefail

root=$(cd "$(dirname "$0")/../../.." && pwd)
mirror="$root/build/mirror"
port=${MIRROR_PORT:-18080}
pidfile="$root/build/mirror.pid"
url="http://127.0.0.1:$port"
python=${PYTHON:-python3}

# The wheels of the nodes' NVML environment (nvml_python) and of the GPU exporter in it (gpu_monitoring), pinned as
# requirements.txt pins them. bcrypt's manylinux wheel is abi3 (one wheel for every CPython from 3.9): the
# nodes' Pythons (Debian 12's 3.11, Debian 13's 3.13) install the same file; PyYAML (the exporter reads CDI specs
# with it) has a wheel per CPython: one for each.
fill() {
  mkdir -p "$mirror/wheels"
  local name file version node_python
  for name in nvidia-ml-py prometheus_client bcrypt PyYAML; do
    file=${name//-/_}
    version=$(sed -n "s/^$name==//p" "$root/requirements.txt")
    [ -n "$version" ] || { echo "mirror: requirements.txt pins no $name" >&2; exit 1; }
    for node_python in 3.11 3.13; do
      [ "$name" = PyYAML ] || [ "$node_python" = 3.11 ] || continue
      if ! ls "$mirror"/wheels/ | grep -qiE "^${file}-${version//./\\.}-(py3|cp39-abi3|cp${node_python/./})-"; then
        "$python" -m pip download -q --no-deps --only-binary=:all: --platform manylinux2014_x86_64 \
          --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --python-version "$node_python" \
          --implementation cp --dest "$mirror/wheels" "$name==$version" \
          2> >(grep -v 'is ignored: it is neither a file nor a directory' >&2)
      fi
    done
  done
}

# Whether the server on the port serves this checkout's mirror: it must hand back this tree's token.
answers() {
  "$python" - "$url/.token" "$mirror/.token" <<'PY'
import sys, urllib.request
try:
    served = urllib.request.urlopen(sys.argv[1], timeout=2).read()
except Exception:
    sys.exit(1)
with open(sys.argv[2], "rb") as handle:
    sys.exit(0 if served == handle.read() else 2)
PY
}

case "${1:-}" in
  start)
    fill
    [ -s "$mirror/.token" ] || head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$mirror/.token"
    status=0
    answers || status=$?
    if [ "$status" -eq 0 ]; then
      exit 0
    elif [ "$status" -eq 2 ]; then
      echo "mirror: port $port already serves another tree; stop that server or set MIRROR_PORT" >&2
      exit 1
    fi
    setsid "$python" -m http.server --bind 127.0.0.1 --directory "$mirror" "$port" \
      >"$root/build/mirror.log" 2>&1 </dev/null &
    echo $! >"$pidfile"
    for _ in $(seq 1 50); do
      answers && exit 0
      sleep 0.2
    done
    echo "mirror: nothing answers on $url; see build/mirror.log" >&2
    exit 1
    ;;
  stop)
    if [ -f "$pidfile" ]; then
      kill "$(cat "$pidfile")" 2>/dev/null || true
    fi
    rm -f "$pidfile"
    ;;
  url)
    echo "$url"
    ;;
  *)
    echo "usage: $0 start|stop|url" >&2
    exit 2
    ;;
esac
