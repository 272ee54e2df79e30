#!/usr/bin/env bash
# Build the collection tarball, install it into an empty collections path through Galaxy's API, and render the docs of
# every module, filter and role from there; check that the playbooks resolve by their collection names.
# Usage: tests/release-check.sh WORKDIR [--no-importer]   (--no-importer: leave out galaxy-importer and
#                                                          ansible-builder, which do not use the ansible-core on PATH)
set -euo pipefail

work=$(realpath -m "${1:?usage: tests/release-check.sh WORKDIR [--no-importer]}")
importer=${2:-}
rm -rf "$work"
mkdir -p "$work/collections"

ansible-galaxy collection build --force --output-path "$work" . >/dev/null
tarball=$(ls "$work"/accelops-gpu-*.tar.gz)
echo "built $(basename "$tarball") ($(du -k "$tarball" | cut -f1) KiB)"

# Nothing that is not the product goes into the tarball.
if tar -tzf "$tarball" | grep -E '^((\.venv|\.ansible|build|tests|molecule|bench|\.ci|docs/site)/|docs/(performance|simulated-node|releasing)\.md)' >/dev/null; then
  echo "release-check: the tarball holds files that build_ignore should leave out:" >&2
  tar -tzf "$tarball" | grep -E '^((\.venv|\.ansible|build|tests|molecule|bench|\.ci|docs/site)/|docs/(performance|simulated-node|releasing)\.md)' | head >&2
  exit 1
fi

# The files people look for: SECURITY.md goes with the collection, CONTRIBUTING.md (the repository's) does not.
contents=$(tar -tzf "$tarball")
grep -qx 'SECURITY.md' <<<"$contents" || { echo "release-check: the tarball lacks SECURITY.md" >&2; exit 1; }
if grep -qx 'CONTRIBUTING.md' <<<"$contents"; then
  echo "release-check: CONTRIBUTING.md is in the tarball; galaxy.yml's build_ignore should leave it out" >&2
  exit 1
fi

# Links, as the tarball's readers meet them: every relative link of a Markdown file in the tarball names a file of the
# tarball (a guide that links a file build_ignore leaves out is broken on Galaxy and in an installed collection), and
# every absolute link into the repository names a file the repository has.
python3 - "$tarball" "$(dirname "$0")/.." <<'PY' || exit 1
import posixpath, re, subprocess, sys, tarfile

tarball, checkout = sys.argv[1], sys.argv[2]
base = "https://github.com/accelops/accelops.gpu/blob/main/"
try:  # the repository's files; where git or the repository is not at hand (a container), the tarball's links only
    repository = set(subprocess.run(["git", "-C", checkout, "ls-files"], capture_output=True, text=True,
                                    check=True).stdout.split())
except (OSError, subprocess.CalledProcessError):
    repository = None
broken = []
with tarfile.open(tarball) as archive:
    names = {name.removeprefix("./") for name in archive.getnames()}
    for member in archive.getmembers():
        name = member.name.removeprefix("./")
        if not name.endswith(".md") or not member.isfile():
            continue
        text = archive.extractfile(member).read().decode("utf-8")
        text = re.sub(r"```.*?```", "", text, flags=re.S)  # code blocks hold no links
        for link in re.findall(r"\]\(([^)\s]+)\)", text):
            target = link.split("#", 1)[0]
            if link.startswith(base):
                if repository is not None and target[len(base):] not in repository:
                    broken.append("%s: %s (no such file in the repository)" % (name, link))
            elif target and not re.match(r"[a-z]+:", target):
                path = posixpath.normpath(posixpath.join(posixpath.dirname(name), target))
                if path not in names:
                    broken.append("%s: %s (not in the tarball)" % (name, link))
if broken:
    print("release-check: links that lead nowhere for a reader of the tarball:", *broken, sep="\n  ", file=sys.stderr)
    sys.exit(1)
PY

root=$(cd "$(dirname "$0")/.." && pwd)
# The release tools (galaxy-importer, ansible-builder) run from a virtual environment of their own under build/, kept
# while their pinned requirements stay the same.
tools=$root/build/venv-release-tools
tools_reqs=$root/tests/release/tools-requirements.txt
release_tools() {
  if ! cmp -s "$tools_reqs" "$tools/.installed"; then
    rm -rf "$tools"
    python3 -m venv "$tools"
    "$tools/bin/python" -m pip install -q -r "$tools_reqs" \
      2> >(grep -v 'is ignored: it is neither a file nor a directory' >&2)
    cp "$tools_reqs" "$tools/.installed"
  fi
}

# Galaxy's own import check, offline, on the tarball: its ansible-lint, ansible-doc, metadata, changelog and README
# checks. Any warning or error fails the release.
galaxy_import() {
  local log=$work/importer/out.log
  mkdir -p "$work/importer/tmp"
  if ! (cd "$work/importer" && env PATH="$tools/bin:$PATH" GALAXY_IMPORTER_CONFIG=/dev/null \
        GALAXY_IMPORTER_RUN_ANSIBLE_TEST=false GALAXY_IMPORTER_OFFLINE_ANSIBLE_LINT=true \
        GALAXY_IMPORTER_TMP_ROOT_DIR="$work/importer/tmp" GALAXY_IMPORTER_ANSIBLE_LOCAL_TMP="$work/importer/tmp" \
        ANSIBLE_HOME="$work/importer/ansible-home" \
        python -m galaxy_importer.main "$tarball" >"$log" 2>&1) ||
     grep -E '^(WARNING|ERROR)' "$log" >/dev/null || ! grep -q '^Importer processing completed successfully' "$log"; then
    echo "release-check: galaxy-importer did not accept $(basename "$tarball") without warnings:" >&2
    grep -E '^(WARNING|ERROR)' "$log" | head -20 >&2 || tail -20 "$log" >&2
    exit 1
  fi
  echo "galaxy-importer $(grep -E '^galaxy.importer==' "$tools_reqs" | cut -d= -f3): imported, 0 warnings, 0 errors"
}

# An execution environment: ansible-builder finds the collection's controller-side needs (meta/execution-environment.yml)
# in the installed collection, and `ansible-builder create` makes a build context from tests/release's definition
# with the tarball in it. Building the image needs its base image from a registry, which is out of reach here.
execution_environment() {
  local ee=$work/ee deps
  deps=$("$tools/bin/ansible-builder" introspect --sanitize "$work/collections")
  if ! grep -q "openssh-client \[platform:dpkg\].*from collection accelops.gpu" <<<"$deps"; then
    echo "release-check: ansible-builder introspect does not find accelops.gpu's requirements:" >&2
    echo "$deps" >&2
    exit 1
  fi
  mkdir -p "$ee"
  cp "$root/tests/release/execution-environment.yml" "$ee/"
  cp "$tarball" "$ee/accelops-gpu.tar.gz"
  (cd "$ee" && "$tools/bin/ansible-builder" create --file execution-environment.yml --context context \
        --output-filename Containerfile >create.log 2>&1) || {
    echo "release-check: ansible-builder create failed:" >&2
    cat "$ee/create.log" >&2
    exit 1
  }
  if ! cmp -s "$tarball" "$ee/context/_build/collections/accelops-gpu.tar.gz" ||
     ! grep -q '/tmp/collections/accelops-gpu.tar.gz' "$ee/context/_build/requirements.yml" ||
     ! grep -q 'ansible-galaxy collection install' "$ee/context/Containerfile"; then
    echo "release-check: ansible-builder's build context lacks the collection or its install step ($ee/context)" >&2
    exit 1
  fi
  echo "ansible-builder $(grep -E '^ansible-builder==' "$tools_reqs" | cut -d= -f3): build context in $ee/context"
}

# The changelog at release time: antsibull-changelog release, on a copy of the checkout, writes the section of
# galaxy.yml's version with every module, filter and role new in it (their version_added).
changelog_release() {
  # The copy lives outside the checkout: inside it, antsibull-changelog would list the copy's files through the
  # checkout's git, where build/ is ignored, and find no plugin.
  local copy version
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/accelops-gpu-changelog.XXXXXX")
  trap 'rm -rf "$scratch"' EXIT
  copy=$scratch/ansible_collections/accelops/gpu
  version=$(sed -n 's/^version: *//p' "$root/galaxy.yml")
  mkdir -p "$work/changelog"
  "$root/tests/copy-checkout.sh" "$copy"
  # Its plugins from the copy alone: ansible-doc must not find the checkout on ANSIBLE_COLLECTIONS_PATH.
  (cd "$copy" && env -u ANSIBLE_COLLECTIONS_PATH ANSIBLE_HOME="$work/changelog/ansible-home" \
     antsibull-changelog release --version "$version" >"$work/changelog/release.log" 2>&1) || {
    echo "release-check: antsibull-changelog release failed:" >&2
    cat "$work/changelog/release.log" >&2
    exit 1
  }
  cp "$copy/CHANGELOG.rst" "$work/changelog/"
  # This version's section (up to the next version's heading) lists exactly the modules, filters and roles whose
  # version_added is this version, and has a release summary; a first release has no fixes (nothing was shipped that
  # a release could fix: a fix belongs in its feature's fragment).
  python - "$root" "$version" "$work/changelog/CHANGELOG.rst" <<'PY' || exit 1
import ast, glob, os, re, sys
import yaml

root, version, changelog = sys.argv[1:]
expected = {"New Modules": set(), "Filter": set(), "New Roles": set()}
def documentation(path):
    for node in ast.parse(open(path, encoding="utf-8").read()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "DOCUMENTATION":
            return yaml.safe_load(node.value.value)
    return {}

for path in glob.glob(os.path.join(root, "plugins/modules/*.py")):
    if str(documentation(path).get("version_added")) == version:
        expected["New Modules"].add(os.path.basename(path)[:-3])
# Each filter is plugins/filter/<name>.py, its documentation inside.
for path in glob.glob(os.path.join(root, "plugins/filter/*.py")):
    doc = documentation(path)
    if str(doc.get("version_added")) == version:
        expected["Filter"].add(doc["name"])
for path in glob.glob(os.path.join(root, "roles/*/meta/argument_specs.yml")):
    main = yaml.safe_load(open(path, encoding="utf-8"))["argument_specs"]["main"]
    if str(main.get("version_added")) == version:
        expected["New Roles"].add(path.split(os.sep)[-3])

lines = open(changelog, encoding="utf-8").read().splitlines()
headings = [i for i in range(len(lines) - 1) if lines[i] and re.fullmatch(r"([=~-])\1+", lines[i + 1])]
start = next((i for i in headings if lines[i] == "v" + version), None)
if start is None:
    sys.exit("release-check: CHANGELOG.rst has no section v%s" % version)
stop = next((i for i in headings if i > start and re.fullmatch(r"v\d.*", lines[i])), len(lines))
found, heading, titles = {key: set() for key in expected}, None, set()
for i in range(start + 1, stop):
    if i in headings:
        heading = lines[i]
        titles.add(heading)
    m = re.match(r"- accelops\.gpu\.(\w+) - ", lines[i])
    if m and heading in found:
        found[heading].add(m.group(1))
problems = ["%s: missing %s, unexpected %s" % (key, sorted(expected[key] - found[key]) or "none",
                                              sorted(found[key] - expected[key]) or "none")
            for key in expected if found[key] != expected[key]]
if "Release Summary" not in titles:
    problems.append("no Release Summary")
if yaml.safe_load(open(os.path.join(root, "changelogs/changelog.yaml")))["releases"] in ({}, None):
    problems += ["%s in a first release" % title for title in ("Bugfixes", "Security Fixes") if title in titles]
if problems:
    sys.exit("release-check: CHANGELOG.rst v%s: %s" % (version, "; ".join(problems)))
print("antsibull-changelog release %s: %s" % (version, ", ".join(
    "%d %s" % (len(found[key]), key.replace("New ", "").lower().replace("filter", "filters")) for key in found)))
PY
}

if [ "$importer" != --no-importer ]; then
  changelog_release
  release_tools
  galaxy_import
fi

export ANSIBLE_COLLECTIONS_PATH="$work/collections"
# Installed as users install it from Galaxy: through Galaxy's v3 API (a stand-in on 127.0.0.1 for this tarball), with
# the artifact's SHA256 checked by ansible-galaxy; the facts playbook then runs from this installation (tests/compat.sh).
python3 "$root/tests/release/galaxy_install.py" "$tarball" "$work/collections"
cd "$work"  # away from the checkout, so nothing resolves from it
[ "$importer" = --no-importer ] || execution_environment

# One ansible-doc run per plugin type renders every plugin of it in full; each must be there, and no warning.
# Except one that is ansible-core's and not the collection's: on ansible-core 2.21 (2.21.5 seen; not 2.17 or 2.19),
# ansible-doc of any role walks every collection, ansible-core's own internal ansible._protomatter included, and warns
# that this one has no MANIFEST.json (https://github.com/ansible/ansible/issues/85689, fixed upstream by
# https://github.com/ansible/ansible/pull/86815). Only that exact line is left out.
core_warning="^\\[WARNING\\]: Collection at '[^']*/ansible/_internal/ansible_collections/ansible/_protomatter' does not have a \
MANIFEST\\.json file, nor has it galaxy\\.yml: cannot detect version\\.\$"
check_docs() {  # type name...
  local type=$1 out name
  shift
  if ! out=$(ANSIBLE_NOCOLOR=1 ansible-doc -t "$type" "$@" 2>&1) || grep -v "$core_warning" <<<"$out" | grep '^\[WARNING\]' >/dev/null; then
    echo "release-check: ansible-doc -t $type failed:" >&2
    grep -A5 '^\[WARNING\]\|ERROR' <<<"$out" | head -20 >&2
    exit 1
  fi
  for name in "$@"; do
    if ! grep -qiE "^> .*$name([^a-z0-9_]|$)" <<<"$out"; then
      echo "release-check: ansible-doc -t $type does not show $name" >&2
      exit 1
    fi
  done
  echo "ansible-doc -t $type: $# rendered ($*)"
}

installed="$work/collections/ansible_collections/accelops/gpu"
modules=() filters=() roles=()
for f in "$installed"/plugins/modules/*.py; do modules+=("accelops.gpu.$(basename "$f" .py)"); done
for f in "$installed"/plugins/filter/*.py; do
  for name in $(python3 - "$f" <<'PY'
import re, sys
print(" ".join(re.findall(r'"(\w+)": \w+', open(sys.argv[1]).read().split("def filters", 1)[1])))
PY
  ); do filters+=("accelops.gpu.$name"); done
done
for r in "$installed"/roles/*/; do roles+=("accelops.gpu.$(basename "$r")"); done
check_docs module "${modules[@]}"
check_docs filter "${filters[@]}"
check_docs role "${roles[@]}"

printf 'all:\n  children:\n    gpu_nodes:\n      hosts:\n        node1:\n' >"$work/inventory.yml"
for p in "$installed"/playbooks/*.yml; do
  name="accelops.gpu.$(basename "$p" .yml)"
  ansible-playbook -i "$work/inventory.yml" --syntax-check "$name" >/dev/null
  echo "ansible-playbook --syntax-check $name: ok"
done
