#!/usr/bin/env bash
# Run the stages of `make test` one after the other and print how long each took, also when one fails (then the run
# stops there and fails).
# Usage: tests/stages.sh [STAGE ...]   (default: lint sanity units docs sim molecule release compat)
#   molecule              every scenario, MOLECULE_JOBS of them side by side (default 2), longest first; each one's
#                         output goes to build/molecule/<scenario>.log and is printed in full when it fails
#   molecule:<scenario>   one scenario, its output on the terminal
# Run it through make (make test), which puts the virtual environment on PATH and the checkout on
# ANSIBLE_COLLECTIONS_PATH. A molecule stage needs the simulated node's parts: give sim before it (make test does).
set -uo pipefail
cd "$(dirname "$0")/.."

scenarios=$(for file in molecule/*/molecule.yml; do basename "$(dirname "$file")"; done)
# Longest first (their time on 2 cores), so that the last to start is a short one; a scenario not named here runs
# first, as nothing is known about it.
longest_first="nvidia_driver default cuda_toolkit slurm frameworks monitoring spark gpu_settings airgap infiniband cuda_repo"

if [ $# -eq 0 ]; then
  set -- lint sanity units docs sim molecule release compat
fi

for stage in "$@"; do
  case $stage in
    lint | sanity | units | docs | sim | molecule | release | compat) ;;
    molecule:?*) [ -f "molecule/${stage#molecule:}/molecule.yml" ] || { echo "tests/stages.sh: no scenario ${stage#molecule:}" >&2; exit 2; } ;;
    *) echo "tests/stages.sh: no stage $stage (lint sanity units docs sim molecule molecule:<scenario> release compat)" >&2; exit 2 ;;
  esac
done

jobs=${MOLECULE_JOBS:-2}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "tests/stages.sh: MOLECULE_JOBS must be a whole number from 1, not '$jobs'" >&2; exit 2; }

times=()
total=0
report() {
  echo
  echo "make test: time per stage"
  printf '  %s\n' "${times[@]}"
  printf '  %-28s %5d s\n' total "$total"
}

# One scenario, its output into build/molecule/<scenario>.log. Each run has an Ansible home of its own: Ansible's
# local temporary files are not shared between runs side by side.
run_scenario() {
  local name=$1 home="$PWD/build/molecule/$1.home"
  rm -rf "$home"
  mkdir -p "$home"
  ANSIBLE_HOME="$home" molecule test -s "$name" > "build/molecule/$name.log" 2>&1
}

# Every scenario, $jobs at a time. Sets molecule_rc; adds each scenario's time to times.
run_scenarios() {
  local ordered=() name pid rc
  local -A started=() names=()
  for name in $scenarios; do
    [[ " $longest_first " == *" $name "* ]] || ordered+=("$name")
  done
  for name in $longest_first; do
    [[ $'\n'$scenarios$'\n' == *$'\n'$name$'\n'* ]] && ordered+=("$name")
  done
  mkdir -p build/molecule
  molecule_rc=0
  local next=0 running=0 failed=()
  while [ "$next" -lt "${#ordered[@]}" ] || [ "$running" -gt 0 ]; do
    while [ "$running" -lt "$jobs" ] && [ "$next" -lt "${#ordered[@]}" ]; do
      name=${ordered[$next]}
      next=$((next + 1))
      run_scenario "$name" &
      pid=$!
      names[$pid]=$name
      started[$pid]=$(date +%s)
      running=$((running + 1))
      echo "molecule: $name started ($running running)"
    done
    wait -n -p pid
    rc=$?
    running=$((running - 1))
    name=${names[$pid]}
    seconds=$(( $(date +%s) - started[$pid] ))
    times+=("$(printf '  %-26s %5d s%s' "$name" "$seconds" "$([ "$rc" -eq 0 ] || echo '  FAILED')")")
    if [ "$rc" -eq 0 ]; then
      echo "molecule: $name passed in $seconds s (build/molecule/$name.log)"
    else
      echo "molecule: $name FAILED in $seconds s; its output follows"
      cat "build/molecule/$name.log"
      echo "molecule: end of $name's output (build/molecule/$name.log)"
      failed+=("$name")
      molecule_rc=1
    fi
  done
  [ "${#failed[@]}" -eq 0 ] || echo "molecule: failed: ${failed[*]}"
}

for stage in "$@"; do
  start=$(date +%s)
  before=${#times[@]}
  case $stage in
    molecule) run_scenarios; rc=$molecule_rc ;;
    molecule:*) molecule test -s "${stage#molecule:}"; rc=$? ;;
    *) make --no-print-directory "$stage"; rc=$? ;;
  esac
  seconds=$(( $(date +%s) - start ))
  total=$(( total + seconds ))
  line=$(printf '%-28s %5d s%s' "$stage" "$seconds" "$([ "$rc" -eq 0 ] || echo '  FAILED')")
  [ "$stage" = molecule ] && line+=" (MOLECULE_JOBS=$jobs side by side:)"
  times=("${times[@]:0:$before}" "$line" "${times[@]:$before}")
  if [ "$rc" -ne 0 ]; then
    report
    exit "$rc"
  fi
done
report
