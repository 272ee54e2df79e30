#!/usr/bin/env bash
# Build the collection's documentation site offline: antsibull-docs writes a page per module, filter and role from the
# collection on ANSIBLE_COLLECTIONS_PATH, the guides of docs/ join them (not the harness' own pages), and Sphinx
# builds HTML with every warning an error (nitpicky: every reference must resolve, from the local inventory only).
# Usage: tests/docs-site.sh WORKDIR    (the site: WORKDIR/html/index.html)
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(realpath -m "${1:?usage: tests/docs-site.sh WORKDIR}")
site=$PWD/docs/site
# Pages about the test harness, its measurements and the release process, not the product: also left out of the
# tarball (galaxy.yml).
harness_only="performance.md simulated-node.md releasing.md"

# antsibull-docs' own lint of every plugin's and role's documentation (markup, references, schema).
antsibull-docs lint-collection-docs --plugin-docs "$(ansible-galaxy collection list accelops.gpu --format json |
  python3 -c 'import json, sys; print(next(iter(json.load(sys.stdin))))')/accelops/gpu"

rm -rf "$work"
mkdir -p "$work/rst"
chmod 700 "$work" "$work/rst"  # antsibull-docs wants its directory writable by its owner alone
antsibull-docs --config-file "$site/antsibull-docs.cfg" collection --use-current --squash-hierarchy --fail-on-error \
  --dest-dir "$work/rst" accelops.gpu >"$work/antsibull-docs.log"
# A filter whose name starts with _ is internal (the roles' own, no compatibility promise): ansible-doc shows it, the
# site does not. Its page and its index entries go; Sphinx then fails on any public page that still links to one.
rm -f "$work"/rst/_*_filter.rst
sed -i -e '/^\* :ansplugin:`_[a-z0-9_]* filter </d' -e '/^ *_[a-z0-9_]*_filter$/d' "$work/rst/index.rst"

mkdir -p "$work/rst/guides"
guides=()
for page in docs/*.md; do
  name=$(basename "$page")
  [[ " $harness_only " == *" $name "* ]] && continue
  cp "$page" "$work/rst/guides/"
  guides+=("guides/${name%.md}")
done
cp -r docs/images "$work/rst/guides/"
{
  printf '\n\nGuides\n------\n\n.. toctree::\n   :maxdepth: 1\n\n'
  printf '   %s\n' "${guides[@]}"
} >>"$work/rst/index.rst"

# Ansible's own labels as a local intersphinx inventory (Sphinx's format 2: a header, then zlib-compressed lines).
python3 - "$site/ansible_devel.txt" "$work/ansible_devel.inv" <<'PY'
import sys, zlib
lines = []
for raw in open(sys.argv[1], encoding="utf-8"):
    if raw.strip() and not raw.startswith("#"):
        label, uri, text = raw.split(None, 2)
        lines.append("%s std:label -1 %s %s\n" % (label, uri, text.strip()))
header = "# Sphinx inventory version 2\n# Project: Ansible\n# Version: devel\n" \
         "# The remainder of this file is compressed using zlib.\n"
with open(sys.argv[2], "wb") as out:
    out.write(header.encode() + zlib.compress("".join(lines).encode()))
PY

DOCS_SITE_INVENTORIES=$work sphinx-build -q -b html -W --keep-going -c "$site" "$work/rst" "$work/html"
for page in "${guides[@]}" gpu_facts_module cuda_repo_role gpu_summary_filter; do
  [ -s "$work/html/$page.html" ] || { echo "docs-site: $page.html was not built" >&2; exit 1; }
done
if internal=$(cd "$work/html" && compgen -G '_*_filter.html'); then
  echo "docs-site: internal filters have pages: $internal" >&2
  exit 1
fi
echo "docs-site: $work/html/index.html (${#guides[@]} guides)"
