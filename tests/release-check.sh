#!/usr/bin/env bash
# Build the collection tarball, install it into an empty collections path, and render the docs of every module,
# filter and role from there; check that the playbooks resolve by their collection names.
# Usage: tests/release-check.sh WORKDIR
set -euo pipefail

work=$(realpath -m "${1:?usage: tests/release-check.sh WORKDIR}")
rm -rf "$work"
mkdir -p "$work/collections"

ansible-galaxy collection build --force --output-path "$work" . >/dev/null
tarball=$(ls "$work"/accelops-gpu-*.tar.gz)
echo "built $(basename "$tarball") ($(du -k "$tarball" | cut -f1) KiB)"

# Nothing that is not the product goes into the tarball.
if tar -tzf "$tarball" | grep -E '^(\.venv|\.ansible|build|tests|molecule|bench|\.ci)/' >/dev/null; then
  echo "release-check: the tarball holds files that build_ignore should leave out:" >&2
  tar -tzf "$tarball" | grep -E '^(\.venv|\.ansible|build|tests|molecule|bench|\.ci)/' | head >&2
  exit 1
fi

# Galaxy's own import check, offline, on the tarball: its ansible-lint, ansible-doc, metadata, changelog and README
# checks. Any warning or error fails the release. It runs from a virtual environment of its own under build/,
# kept while its pinned requirements stay the same.
root=$(cd "$(dirname "$0")/.." && pwd)
importer_venv=$root/build/venv-galaxy-importer
importer_reqs=$root/tests/release/galaxy-importer-requirements.txt
if ! cmp -s "$importer_reqs" "$importer_venv/.installed"; then
  rm -rf "$importer_venv"
  python3 -m venv "$importer_venv"
  "$importer_venv/bin/python" -m pip install -q -r "$importer_reqs" 2> >(grep -v 'is ignored: it is neither a file nor a directory' >&2)
  cp "$importer_reqs" "$importer_venv/.installed"
fi
mkdir -p "$work/importer/tmp"
if ! (cd "$work/importer" && env PATH="$importer_venv/bin:$PATH" GALAXY_IMPORTER_CONFIG=/dev/null \
      GALAXY_IMPORTER_RUN_ANSIBLE_TEST=false GALAXY_IMPORTER_OFFLINE_ANSIBLE_LINT=true \
      GALAXY_IMPORTER_TMP_ROOT_DIR="$work/importer/tmp" GALAXY_IMPORTER_ANSIBLE_LOCAL_TMP="$work/importer/tmp" \
      ANSIBLE_HOME="$work/importer/ansible-home" \
      python -m galaxy_importer.main "$tarball" >"$work/importer/out.log" 2>&1) ||
   grep -E '^(WARNING|ERROR)' "$work/importer/out.log" >/dev/null ||
   ! grep -q '^Importer processing completed successfully' "$work/importer/out.log"; then
  echo "release-check: galaxy-importer did not accept $(basename "$tarball") without warnings:" >&2
  grep -E '^(WARNING|ERROR)' "$work/importer/out.log" | head -20 >&2 || tail -20 "$work/importer/out.log" >&2
  exit 1
fi
echo "galaxy-importer $(grep -E '^galaxy.importer==' "$importer_reqs" | cut -d= -f3): imported, 0 warnings, 0 errors"

export ANSIBLE_COLLECTIONS_PATH="$work/collections"
ansible-galaxy collection install --offline -p "$work/collections" "$tarball" >/dev/null
cd "$work"  # away from the checkout, so nothing resolves from it

check_doc() {  # type name
  local out
  if ! out=$(ansible-doc -t "$1" "$2" 2>&1) || ! grep -q "accelops.gpu" <<<"$out" || grep -q '^\[WARNING\]' <<<"$out"; then
    echo "release-check: ansible-doc -t $1 $2 failed:" >&2
    echo "$out" | head -20 >&2
    exit 1
  fi
  echo "ansible-doc -t $1 $2: ok"
}

installed="$work/collections/ansible_collections/accelops/gpu"
for f in "$installed"/plugins/modules/*.py; do check_doc module "accelops.gpu.$(basename "$f" .py)"; done
for f in "$installed"/plugins/filter/*.py; do
  for name in $(python3 - "$f" <<'PY'
import re, sys
print(" ".join(re.findall(r'"(\w+)": \w+', open(sys.argv[1]).read().split("def filters", 1)[1])))
PY
  ); do check_doc filter "accelops.gpu.$name"; done
done
for r in "$installed"/roles/*/; do check_doc role "accelops.gpu.$(basename "$r")"; done

printf 'all:\n  children:\n    gpu_nodes:\n      hosts:\n        node1:\n' >"$work/inventory.yml"
for p in "$installed"/playbooks/*.yml; do
  name="accelops.gpu.$(basename "$p" .yml)"
  ansible-playbook -i "$work/inventory.yml" --syntax-check "$name" >/dev/null
  echo "ansible-playbook --syntax-check $name: ok"
done
