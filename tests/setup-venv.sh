#!/usr/bin/env bash
# Create the project's virtualenv from the pinned requirements, plus the three collections that molecule's docker
# driver needs. Galaxy is unreachable, so they come from the `ansible` bundle wheel on PyPI.
# Usage: tests/setup-venv.sh VENV
set -euo pipefail

venv=${1:-.venv}
bundle_version=12.3.0  # the ansible bundle that matches ansible-core 2.19
collections=(community/docker community/library_inventory_filtering_v1 ansible/posix)

if ! python3 -m venv --help >/dev/null 2>&1 || ! python3 -c 'import ensurepip' >/dev/null 2>&1; then
  echo "setup-venv: installing python3-venv" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
fi

pip() {  # this machine's pip configuration names index folders that may not exist; keep their warnings out
  "$venv/bin/python" -m pip "$@" 2> >(grep -v 'is ignored: it is neither a file nor a directory' >&2)
}

[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
pip install -q --upgrade pip
pip install -q -r requirements.txt

site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
missing=()
for c in "${collections[@]}"; do
  [ -d "$site/ansible_collections/$c" ] || missing+=("$c")
done
if [ ${#missing[@]} -gt 0 ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  pip download -q --no-deps "ansible==$bundle_version" -d "$tmp"
  "$venv/bin/python" - "$tmp"/ansible-*.whl "$site" "${missing[@]}" <<'PY'
import sys, zipfile
wheel, site, wanted = sys.argv[1], sys.argv[2], sys.argv[3:]
with zipfile.ZipFile(wheel) as z:
    members = [m for m in z.namelist() if any(m.startswith("ansible_collections/%s/" % c) for c in wanted)]
    z.extractall(site, members)
PY
fi
