#!/usr/bin/env bash
# The checks that need a real NVIDIA GPU, as one short run on a GPU machine (for example a lent device machine, which
# has no network): capture the node's NVML as a fixture, run gpu_facts, gpu_health and gpu_config (check mode with diff:
# nothing on the GPUs changes) through their own main(), read the facts again to show that nothing changed, and run
# the PyTorch validation workload (matmul TFLOP/s, training step, NCCL all-reduce on 2+ GPUs) with the machine's torch.
# The results land in $OUT (default build/device), seven files at most (a device machine returns eight): summary.txt,
# nvidia-smi.txt, captured.conf, and the JSON of gpu_facts, gpu_health, gpu_config (check) and validate_pytorch. The
# script goes on past a failed step; each step's exit code and errors are in the summary.
#
# Needs python3 with nvidia-ml-py, and torch for the workload. Ansible: importable, or the ansible-core wheel of
# requirements.txt in .whl/ (here: pip download --no-deps --only-binary=:all: -d .whl ansible-core==<version>).
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-$root/build/device}
py=${PYTHON:-python3}
scratch=$(mktemp -d)
mkdir -p "$out"
log="$out/summary.txt"
: >"$log"
say() { echo "$*" | tee -a "$log"; }

if ! "$py" -c 'import ansible' 2>/dev/null; then
  wheel=$(find "$root/.whl" -maxdepth 1 -name 'ansible_core-*.whl' 2>/dev/null | head -n 1)
  [ -n "$wheel" ] || { say "ansible is not importable and no ansible-core wheel is in .whl/"; exit 2; }
  "$py" -m pip install -q --no-index --no-deps --no-compile --target /tmp/accelops-site "$wheel" || exit 2
  export PYTHONPATH=/tmp/accelops-site${PYTHONPATH:+:$PYTHONPATH}
fi
mkdir -p "$scratch/ansible_collections/accelops"
ln -s "$root" "$scratch/ansible_collections/accelops/gpu"
export PYTHONPATH=$scratch${PYTHONPATH:+:$PYTHONPATH}

# step NAME OUTPUT COMMAND...: run it with its output into OUTPUT, say its exit code and the end of its errors.
step() {
  local name=$1 output=$2 rc
  shift 2
  "$@" >"$output" 2>"$scratch/$name.err"
  rc=$?
  say "$name: exit $rc"
  [ -s "$scratch/$name.err" ] && tail -n 5 "$scratch/$name.err" | sed 's/^/    /' | tee -a "$log"
  return 0
}
# module NAME ARGS_JSON DEST: the module's main() with its arguments from a file, as Ansible's debugging path runs it.
module() {
  printf '{"ANSIBLE_MODULE_ARGS": %s}\n' "$2" >"$scratch/$1.args.json"
  step "$1 $2" "$3" "$py" -m "ansible_collections.accelops.gpu.plugins.modules.$1" "$scratch/$1.args.json"
}
# value FILE PYTHON_EXPRESSION_OF_r: one value out of a JSON result.
value() { "$py" -c 'import json, sys; r = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2" 2>/dev/null; }

say "== $(date -u +%FT%TZ) on $(hostname)"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi -q >"$out/nvidia-smi.txt" 2>&1
  machine=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sort | uniq -c | tr -s ' ' | paste -sd';')
else
  machine="no nvidia-smi"
fi
say "machine: $machine"

step nvml-capture "$out/captured.conf" "$py" "$root/tests/sim/nvml/nvml-capture.py" --name "$machine"
say "    $(grep -c '=' "$out/captured.conf") keys captured"

module gpu_facts '{}' "$out/gpu_facts.json"
module gpu_health '{"fail_on": "never"}' "$out/gpu_health.json"
persistence=$(value "$out/gpu_facts.json" 'r["ansible_facts"]["nvidia"]["gpus"][0]["persistence_mode"]')
flip=$([ "$persistence" = True ] && echo false || echo true)
module gpu_config "{\"persistence_mode\": $flip, \"_ansible_check_mode\": true, \"_ansible_diff\": true}" \
  "$out/gpu_config_check.json"
module gpu_facts '{}' "$scratch/gpu_facts_after.json"
say "persistence mode before: $persistence; check mode asked for $flip; after: $(value "$scratch/gpu_facts_after.json" \
  'r["ansible_facts"]["nvidia"]["gpus"][0]["persistence_mode"]'); changed (would): $(value "$out/gpu_config_check.json" 'r.get("changed")')"

gpus=$(value "$out/gpu_facts.json" 'r["ansible_facts"]["nvidia"]["gpu_count"]')
# As the role installs it: the script with the shared checks beside it.
cp "$root/roles/pytorch/files/validate_pytorch.py" "$root/roles/python_env/files/framework_validation.py" "$scratch/"
step validate_pytorch "$out/validate_pytorch.json" env PYTHONUNBUFFERED=1 "$py" \
  "$scratch/validate_pytorch.py" --expect-gpus="${gpus:-0}"
say "    $(value "$out/validate_pytorch.json" 'r.get("statement") or r.get("failure")')"
say "GPU matmul TFLOP/s: $(value "$out/validate_pytorch.json" \
  '(r["gpu"]["matmul_fp32"]["tflops"], r["gpu"]["matmul_low"]["tflops"], r["gpu"]["speedup_low"]) if r.get("gpu") else None')"
say "all-reduce: $(value "$out/validate_pytorch.json" 'r.get("allreduce")')"
