#!/usr/bin/env bash
# Run `ansible-test sanity` on a copy of the collection at .../ansible_collections/accelops/gpu, as it requires.
# Usage: tests/sanity.sh WORKDIR
set -euo pipefail

work=${1:?usage: tests/sanity.sh WORKDIR}
dest="$work/ansible_collections/accelops/gpu"

# ansible-test bootstraps pip in each of its venvs with a get-pip script from a host this network cannot reach;
# it uses a cached copy first. This one runs the pip wheel that Python's ensurepip bundles.
cache=~/.ansible/test/cache
for version in 24_2 24.2; do
  script="$cache/get_pip_${version//./_}.py"
  [ -f "$script" ] && continue
  mkdir -p "$cache"
  cat >"$script" <<'PY'
import ensurepip, glob, os, sys
sys.path.insert(0, glob.glob(os.path.join(os.path.dirname(ensurepip.__file__), "_bundled", "pip-*.whl"))[0])
from pip._internal.cli.main import main
sys.exit(main(["install"] + sys.argv[1:]))
PY
done

rm -rf "$dest"
mkdir -p "$dest"
git ls-files --cached --others --exclude-standard -z | xargs -0 -I{} sh -c '[ -e "$1" ] && printf "%s\0" "$1"' _ {} |
  tar --null -T - -cf - | tar -C "$dest" -xf -
cd "$dest"
ansible-test sanity --venv --python 3.11 --color no
