#!/usr/bin/env bash
# Run the stages of `make test` one after the other and print how long each took, also when one fails (then the run
# stops there and fails). Each molecule scenario is a stage of its own.
# Usage: tests/stages.sh [STAGE ...]   (default: every stage; names: lint sanity units sim molecule:<scenario>
# release). Run it through make (make test), which puts the virtual environment on PATH. A molecule stage needs the
# simulated node's parts: give sim before it (make test does).
set -uo pipefail
cd "$(dirname "$0")/.."

scenarios=$(for file in molecule/*/molecule.yml; do basename "$(dirname "$file")"; done)
if [ $# -eq 0 ]; then
  set -- lint sanity units sim $(for s in $scenarios; do echo "molecule:$s"; done) release
fi

for stage in "$@"; do
  case $stage in
    lint | sanity | units | sim | release) ;;
    molecule:?*) [ -f "molecule/${stage#molecule:}/molecule.yml" ] || { echo "tests/stages.sh: no scenario ${stage#molecule:}" >&2; exit 2; } ;;
    *) echo "tests/stages.sh: no stage $stage (lint sanity units sim molecule:<scenario> release)" >&2; exit 2 ;;
  esac
done

times=()
total=0
report() {
  echo
  echo "make test: time per stage"
  printf '  %s\n' "${times[@]}"
  printf '  %-28s %5d s\n' total "$total"
}

for stage in "$@"; do
  start=$(date +%s)
  case $stage in
    molecule:*) molecule test -s "${stage#molecule:}" ;;
    *) make --no-print-directory "$stage" ;;
  esac
  rc=$?
  seconds=$(( $(date +%s) - start ))
  total=$(( total + seconds ))
  times+=("$(printf '%-28s %5d s%s' "$stage" "$seconds" "$([ "$rc" -eq 0 ] || echo '  FAILED')")")
  if [ "$rc" -ne 0 ]; then
    report
    exit "$rc"
  fi
done
report
