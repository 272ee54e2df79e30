#!/usr/bin/env bash
# Prove the collection on one ansible-core release, in a virtual environment of its own: the release check (build,
# install, ansible-doc of every plugin and role, syntax check of every playbook), a real run of the facts playbook,
# of the gpu_settings role and of every example of the documentation against the fake NVML (on this machine, or in a
# container of IMAGE), and ansible-test sanity.
# Usage: tests/compat.sh VERSION WORKDIR [IMAGE]
#   VERSION: an ansible-core release such as 2.17.0, installed into WORKDIR/venv (kept between runs), or "venv" for
#   the project's own virtual environment on PATH: then galaxy-importer runs too, and sanity does not (the sanity
#   stage of make test runs it there).
#   IMAGE: a Docker image of the simulated node (accelops-sim/debian13:latest), for a release that needs a newer
#   Python than this machine's: this script runs again inside a container of it, with the same checks. The container
#   reaches no package index: the wheels for its Python are downloaded here first, into WORKDIR/wheels (kept while
#   the versions stay the same), and the venv is installed from them alone (COMPAT_WHEELS inside the container).
set -euo pipefail
cd "$(dirname "$0")/.."

usage="usage: tests/compat.sh VERSION WORKDIR [IMAGE]"
version=${1:?$usage}
work=$(realpath -m "${2:?$usage}")
root=$PWD
fakenvml=$root/build/fakenvml
image=${3:-}
[ -f "$fakenvml/libnvidia-ml.so.1" ] || tests/sim/nvml/fakenvml/build.sh "$fakenvml"

mkdir -p "$work"
if [ "$version" != venv ]; then
  [[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "compat: VERSION must be a release such as 2.17.0, not '$version'" >&2; exit 2; }
  # What the venv holds: ansible-core, and nvidia-ml-py at the version the project pins. A check that needs one more
  # package names it here: inside a container its wheels are then downloaded too.
  packages=("ansible-core==$version" "$(grep -E '^nvidia-ml-py==' requirements.txt)")
fi

if [ -n "$image" ]; then
  [ "$version" != venv ] || { echo "compat: IMAGE needs a VERSION such as 2.21.5, not venv" >&2; exit 2; }
  # In the container, by default, the sanity tests whose answer depends on the ansible-core release and its Python:
  # import (every module and plugin imported on Python 3.13 under that release's rules) and validate-modules (each
  # module's argument_spec against its documentation, by that release's schema). Every other test asks what the
  # sanity stage already asks on 2.19; a run of all of them costs about 5 minutes more on 2 cores, each test's venv
  # filled from the wheels. COMPAT_SANITY_TESTS=all runs every one; "none" none.
  sanity_tests=${COMPAT_SANITY_TESTS:-import validate-modules}
  started=$(date +%s)
  python_version=$(docker run --rm --network host "$image" python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  wheels=$work/wheels
  want="python $python_version: ${packages[*]}"
  if [ "$(cat "$wheels/.downloaded" 2>/dev/null)" != "$want" ]; then
    rm -rf "$wheels"
    arch=$(uname -m)
    download() {
      python3 -m pip download -q --only-binary=:all: --implementation cp --python-version "$python_version" \
        --platform "manylinux_2_28_$arch" --platform "manylinux2014_$arch" -d "$wheels" "$@" \
        2> >(grep -v 'is ignored: it is neither a file nor a directory' >&2)
    }
    download "${packages[@]}"
    # What ansible-test's sanity venvs install (its pinned requirements, and the pip it bootstraps), from the
    # ansible-test inside that ansible-core wheel.
    python3 - "$wheels"/ansible_core-*.whl "$wheels/sanity-requirements" <<'PY'
import pathlib, re, sys, zipfile
wheel, out = zipfile.ZipFile(sys.argv[1]), pathlib.Path(sys.argv[2])
out.mkdir()
for name in wheel.namelist():
    if re.fullmatch(r"ansible_test/_data/requirements/sanity\.[\w.-]+\.txt", name):
        out.joinpath(name.rsplit("/", 1)[1]).write_bytes(wheel.read(name))
source = wheel.read("ansible_test/_internal/python_requirements.py").decode()
out.joinpath("pip.txt").write_text("pip==%s\n" % re.search(r"pip='([0-9.]+)'", source).group(1))
PY
    requirements=()
    for f in "$wheels"/sanity-requirements/*.txt; do requirements+=(-r "$f"); done
    download "${requirements[@]}"
    echo "$want" >"$wheels/.downloaded"
  fi
  # ansible-test wants the collection at .../ansible_collections/accelops/gpu with no git checkout above it: a copy,
  # made here where git is, mounted outside the checkout.
  rm -rf "$work/sanity"
  tests/copy-checkout.sh "$work/sanity/ansible_collections/accelops/gpu"
  # The checkout read-only at its own path (the fake NVML in build/fakenvml with it), WORKDIR writable: the logs and
  # the venv stay here, as for a run on this machine.
  name=accelops-compat-${version//./-}
  docker rm -f "$name" >/dev/null 2>&1 || true
  trap 'docker rm -f "$name" >/dev/null 2>&1 || true' EXIT
  echo "compat: ansible-core $version in a container of $image (Python $python_version)"
  # PYTHONWARNINGS: cryptography 51 deprecates DSA, and ansible-core 2.21.5 imports its names at every start; that
  # Python warning (not Ansible's) would fill each log with two lines.
  docker run --rm --name "$name" --network host -v "$root:$root:ro" -v "$work:$work" -v "$work/sanity:/sanity" \
    -w "$root" -e COMPAT_WHEELS="$wheels" -e COMPAT_SANITY_TESTS="$sanity_tests" \
    -e PYTHONWARNINGS="ignore:DSA is deprecated" "$image" tests/compat.sh "$version" "$work"
  echo "compat: ansible-core $version in $image took $(( $(date +%s) - started )) s"
  exit
fi

if [ "$version" != venv ]; then
  venv=$work/venv
  # The venv is kept between runs while the versions (Python's included) stay the same.
  want="$(python3 -c 'import sys; print("python %d.%d" % sys.version_info[:2])'): ${packages[*]}"
  if [ "$(cat "$venv/.installed" 2>/dev/null)" != "$want" ]; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    # Inside the container (see IMAGE), from the downloaded wheels alone.
    index=()
    [ -z "${COMPAT_WHEELS:-}" ] || index=(--no-index --find-links "$COMPAT_WHEELS")
    "$venv/bin/python" -m pip install -q "${index[@]}" "${packages[@]}" \
      2> >(grep -v 'is ignored: it is neither a file nor a directory' >&2)
    echo "$want" >"$venv/.installed"
  fi
  export PATH="$venv/bin:$PATH"
fi
python=$(command -v python)
found=$(ansible --version)  # whole: head would close the pipe under pipefail
found=${found%%$'\n'*}
echo "compat: $found"
if [ "$version" != venv ] && [[ $found != *"[core $version]"* ]]; then
  echo "compat: expected ansible-core $version, found: $found" >&2
  exit 1
fi

if [ "$version" = venv ]; then
  tests/release-check.sh "$work/release"
else
  tests/release-check.sh "$work/release" --no-importer
fi

# The installed collection, not the checkout, from here on.
export ANSIBLE_COLLECTIONS_PATH=$work/release/collections ANSIBLE_HOME=$work/ansible-home ANSIBLE_NOCOLOR=1
export LD_LIBRARY_PATH=$fakenvml FAKE_NVML_FIXTURE=$work/dgx-h100.conf
cp tests/sim/nvml/fixtures/dgx-h100.conf "$FAKE_NVML_FIXTURE"
cat >"$work/inventory.yml" <<EOF
gpu_nodes:
  hosts:
    localhost:
      ansible_connection: local
      ansible_python_interpreter: $python
EOF
play() {  # name, then ansible-playbook's arguments; the output goes to WORKDIR/NAME.log
  local name=$1
  shift
  if ! ansible-playbook -i "$work/inventory.yml" "$@" >"$work/$name.log" 2>&1; then
    echo "compat: $name failed:" >&2
    tail -40 "$work/$name.log" >&2
    exit 1
  fi
}
recap() {  # name: the recap line of localhost in WORKDIR/NAME.log
  grep -E '^localhost +:' "$work/$1.log"
}

mkdir -p "$work/sys"  # no PCI devices to scan: the GPUs come from NVML alone
play facts accelops.gpu.facts -e accelops_gpu_sysfs_root="$work/sys" -v
grep -q '"gpu_count": 8' "$work/facts.log" || { echo "compat: the facts playbook did not report 8 GPUs" >&2; exit 1; }
echo "compat: accelops.gpu.facts reads 8 GPUs"

# gpu_settings depends on nvml_python, which would install nvidia-ml-py into /opt on this machine: skipped, the
# modules run on this venv's Python, which has it. Nothing outside WORKDIR may change.
[ ! -e /opt/accelops-gpu ] || { echo "compat: /opt/accelops-gpu exists on this machine; remove it first" >&2; exit 1; }
settings=(tests/compat/settings.yml --skip-tags nvml_python)
play settings-check "${settings[@]}" --check --diff
recap settings-check | grep -q 'failed=0' && cmp -s tests/sim/nvml/fixtures/dgx-h100.conf "$FAKE_NVML_FIXTURE" ||
  { echo "compat: gpu_settings in check mode changed the fixture or failed" >&2; exit 1; }
play settings "${settings[@]}"
[ "$(grep -cE '^gpu\.[0-7]\.power\.limit_mw=500000$' "$FAKE_NVML_FIXTURE")" -eq 8 ] ||
  { echo "compat: gpu_settings did not set 500 W on each of the 8 GPUs" >&2; exit 1; }
recap settings | grep -q 'changed=[1-9]' || { echo "compat: gpu_settings reported no change" >&2; exit 1; }
play settings-again "${settings[@]}"
recap settings-again | grep -q 'changed=0.*failed=0' || { echo "compat: gpu_settings is not idempotent: $(recap settings-again)" >&2; exit 1; }
[ ! -e /opt/accelops-gpu ] || { echo "compat: the plays installed into /opt/accelops-gpu on this machine" >&2; exit 1; }
echo "compat: gpu_settings sets 500 W on 8 GPUs (check mode changes nothing, a second run changes nothing)"

# Every example of the documentation, as pasted, against the fake NVML (tests/examples/run_examples.py), with the
# installed collection on this ansible-core (in the container too); the units stage runs them on the project's venv.
if [ "$version" != venv ]; then
  python tests/examples/run_examples.py "$work/examples" --python "$python" >"$work/examples.out" 2>&1 ||
    { cat "$work/examples.out" >&2; exit 1; }
  echo "compat: every example of the documentation runs ($work/examples/examples.log)"
fi

unset ANSIBLE_COLLECTIONS_PATH ANSIBLE_HOME LD_LIBRARY_PATH FAKE_NVML_FIXTURE
if [ -n "${COMPAT_WHEELS:-}" ] && [ "${COMPAT_SANITY_TESTS:-}" != none ]; then
  # Inside the container: pip, in ansible-test's venvs, takes the downloaded wheels alone (its user configuration, in
  # a home of its own under WORKDIR). COMPAT_SANITY_TESTS: the tests that run ("all": every one).
  export HOME=$work/home
  mkdir -p "$HOME/.config/pip"
  printf '[global]\nno-index = true\nfind-links = %s\n' "$COMPAT_WHEELS" >"$HOME/.config/pip/pip.conf"
  tests=()
  [ "$COMPAT_SANITY_TESTS" = all ] || read -ra tests <<<"$COMPAT_SANITY_TESTS"
  echo "compat: ansible-test sanity, tests: $COMPAT_SANITY_TESTS"
  SANITY_COPIED=1 tests/sanity.sh /sanity "${tests[@]}"
elif [ "$version" != venv ] && [ -z "${COMPAT_WHEELS:-}" ]; then
  tests/sanity.sh
fi
echo "compat: $found passed"
