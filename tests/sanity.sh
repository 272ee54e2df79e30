#!/usr/bin/env bash
# Run `ansible-test sanity` on a copy of the collection at .../ansible_collections/accelops/gpu, as it requires.
# The copy lives outside the checkout: inside it, ansible-test would take the checkout's git file list, where the
# copy is ignored, and find nothing to test.
# Usage: tests/sanity.sh [WORKDIR [TEST...]]
#   TEST: only these sanity tests (ansible-test's --test), every one by default.
# SANITY_COPIED=1: WORKDIR already holds the copy (made where git is, for a container that has none); used as it is.
# ansible-test runs on the Python on PATH, in venvs of its own that pip fills from the package index pip's
# configuration names (inside a container with none, a pip.conf under HOME points it at downloaded wheels).
set -euo pipefail

# A directory of its own unless one is given: two runs at once (two checkouts) must not share a copy.
remove=()
trap 'rm -rf "${remove[@]}"' EXIT
if [ $# -ge 1 ]; then
  work=$1
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/accelops-gpu-sanity.XXXXXX")
  remove+=("$work")
fi
dest="$work/ansible_collections/accelops/gpu"

# ansible-test bootstraps pip in each of its venvs with a get-pip script from a host this network cannot reach;
# it uses a cached copy first (in root's home, whatever ANSIBLE_HOME says). This one runs the pip wheel that Python's
# ensurepip bundles, and is removed again when this run put it there.
# The pip release it bootstraps depends on the ansible-core release (24.2 for 2.19, 23.1.2 for 2.17).
cache=~/.ansible/test/cache
version=$(python - <<'PY'
import pathlib, re, ansible_test
source = pathlib.Path(ansible_test.__file__).parent.joinpath("_internal", "python_requirements.py").read_text()
print(re.search(r"pip='([0-9.]+)'", source).group(1))
PY
)
script="$cache/get_pip_${version//./_}.py"
if [ ! -f "$script" ]; then
  mkdir -p "$cache"
  remove+=("$script")
  cat >"$script" <<'PY'
import ensurepip, glob, os, sys
# Debian's Python keeps ensurepip's wheels in /usr/share/python-wheels.
sys.path.insert(0, (glob.glob(os.path.join(os.path.dirname(ensurepip.__file__), "_bundled", "pip-*.whl")) +
                    glob.glob("/usr/share/python-wheels/pip-*.whl"))[0])
from pip._internal.cli.main import main
# get-pip's own flags; this stand-in installs only what it is asked for anyway.
args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
sys.exit(main(["install", *args]))
PY
fi

if [ "${SANITY_COPIED:-}" != 1 ]; then
  rm -rf "$dest"
  "$(dirname "$0")/copy-checkout.sh" "$dest"
fi
tests=()
for test in "${@:2}"; do tests+=(--test "$test"); done
python=$(python -c 'import sys; print("%d.%d" % sys.version_info[:2])')
cd "$dest"
ansible-test sanity --venv --python "$python" --color no "${tests[@]}"
