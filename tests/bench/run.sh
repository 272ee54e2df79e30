#!/usr/bin/env bash
# make bench: start the demo node (site.yml converges it), then run every benchmark against it.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$root/build/demo"
"$root/tests/sim/images/demo.sh" >"$root/build/demo/bench-setup.log" 2>&1 || { tail -n 30 "$root/build/demo/bench-setup.log"; exit 1; }
export ANSIBLE_COLLECTIONS_PATH="$root/build/collections" ANSIBLE_HOME="$root/.ansible"
python "$root/tests/bench/gpu_facts.py" "$@"
python "$root/tests/bench/report.py"
python "$root/tests/bench/role_rerun.py" driver
python "$root/tests/bench/role_rerun.py" stack
python "$root/tests/bench/site_rerun.py"
python "$root/tests/bench/exporter.py"
python "$root/tests/bench/exporter.py" --double
python "$root/tests/bench/spark_discovery.py"
python "$root/tests/bench/apt_mirror.py"
# Last on the demo node: it leaves the node with accounting on.
python "$root/tests/bench/slurm_srun.py" --accounting
# A cluster of its own (a controller and five GPU nodes), started and removed here: about ten minutes.
python "$root/tests/bench/rolling_upgrade.py"
# A fleet of its own (1, 4 and 16 simulated GPU nodes, site.yml first converge and re-run, then Ansible's settings
# tried on the 16): about two hours on two cores.
python "$root/tests/bench/fleet.py"
