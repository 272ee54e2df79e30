#!/usr/bin/env bash
# Build the fake NVML library: build.sh [OUTDIR]
# OUTDIR defaults to build/fakenvml under the repository root; relative paths are taken from the
# current directory. Rebuilds only when a source (*.c, fakenvml.h, exports.map) is newer than the library.
# Only the nvml* entry points are exported (exports.map). Silent on success.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../../.." && pwd)
out=${1:-$root/build/fakenvml}
lib=$out/libnvidia-ml.so.1
sources=("$here"/*.c)

mkdir -p "$out"
if ! command -v "${CC:-gcc}" >/dev/null 2>&1; then
  echo "fakenvml: installing gcc" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gcc libc6-dev >/dev/null
fi
stale=0
[ -e "$lib" ] || stale=1
for src in "${sources[@]}" "$here/fakenvml.h" "$here/exports.map"; do
  [ "$src" -nt "$lib" ] && stale=1
done
if [ "$stale" = 1 ]; then
  tmp=$(mktemp "$out/.libnvidia-ml.so.1.XXXXXX")
  trap 'rm -f "$tmp"' EXIT
  "${CC:-gcc}" -O2 -Wall -Wextra -Werror -shared -fPIC -Wl,-soname,libnvidia-ml.so.1 \
    -Wl,--version-script="$here/exports.map" -o "$tmp" "${sources[@]}" -ldl
  chmod 0755 "$tmp"
  mv -f "$tmp" "$lib"
  trap - EXIT
fi
