"""Benchmark: the rolling driver upgrade of N nodes as a multiple of one node's (figures go into docs/slurm.md; nothing
here is a test).

A simulated Slurm cluster of its own: a controller and N + 1 GPU nodes (Debian 12 containers on the host's network,
the 2x L40S fixture, Slurm 22.05 from Debian, driver 550.54.15 from the local mirror), set up with
tests/sim/host/prepare-node.yml, accelops.gpu.cuda_repo and accelops.gpu.nvidia_driver, then playbooks/slurm.yml.
playbooks/upgrade_driver.yml then moves the driver to 550.127.08 twice, timed by the clock around ansible-playbook:
first on one node alone (the first GPU node), then on the other N with upgrade_driver_batch (default 50%). Each
upgrade drains, waits for the node to be idle, upgrades, "reboots" (tests/sim/host/reboot.yml), judges the GPUs and
resumes; the benchmark checks afterwards that every node runs the new driver and is idle in Slurm.

Usage: python tests/bench/rolling_upgrade.py [--nodes N] [--batch 50%] [--keep]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORK = ROOT / "build" / "bench" / "rolling"
IMAGE = "accelops-sim/debian12:latest"
PREFIX = "accelops-bench-"
OLD, NEW = "550.54.15", "550.127.08"
SETUP = """\
- name: Install the old driver on the GPU nodes
  hosts: gpu_nodes
  gather_facts: false
  roles:
    - role: accelops.gpu.cuda_repo
    - role: accelops.gpu.nvidia_driver
"""


def run(argv, log=None, **kwargs):
    """Run argv; with log, its output goes to that file and a failure prints the file's end."""
    if log is None:
        return subprocess.run(argv, check=True, text=True, capture_output=True, **kwargs).stdout
    with open(log, "w", encoding="utf-8") as out:
        rc = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, check=False, **kwargs).returncode
    if rc != 0:
        tail = Path(log).read_text(encoding="utf-8").splitlines()[-40:]
        raise SystemExit("%s failed (rc %d), the end of %s:\n%s" % (" ".join(argv[:3]), rc, log, "\n".join(tail)))
    return None


def node_vars(mirror, key, driver):
    """The inventory variables (under all.vars) of simulated nodes that install from the local mirror: its signed CUDA
    repository with driver branch 550 at the given release, its wheels, and the fake sysfs and procfs."""
    return """\
    ansible_connection: community.docker.docker
    ansible_python_interpreter: /usr/bin/python3
    nvml_python_index_url: ""
    nvml_python_find_links: ["%(mirror)s/wheels/"]
    accelops_gpu_sysfs_root: /etc/accelops-sim/sys
    accelops_gpu_procfs_root: /etc/accelops-sim/proc
    accelops_sim_mirror: %(mirror)s
    cuda_repo_base_url: %(mirror)s/cuda/repos
    cuda_repo_key_fingerprint: %(key)s
    cuda_repo_key_name: %(key_name)s.pub
    nvidia_driver_branch: "550"
    nvidia_driver_version: "%(driver)s"
""" % {"mirror": mirror, "key": key, "key_name": key[-8:].lower(), "driver": driver}


def inventory(names, mirror, key):
    ctl, nodes = names[0], names[1:]
    hosts = "".join("""
        %s:
          slurm_slurmd_port: %d""" % (name, 16901 + i) for i, name in enumerate(nodes))
    return """\
all:
  children:
    slurm_controllers:
      hosts:
        %(ctl)s:
    gpu_nodes:
      hosts:%(hosts)s
      vars:
        accelops_sim_fixture: pcie-l40s
  vars:
%(node_vars)s    slurm_node_address: 127.0.0.1
    slurm_slurmctld_port: 16900
    upgrade_driver_reboot_tasks: %(reboot)s
""" % {"ctl": ctl, "hosts": hosts, "node_vars": node_vars(mirror, key, OLD),
       "reboot": ROOT / "tests" / "sim" / "host" / "reboot.yml"}


def start(names):
    hosts = [arg for name in names for arg in ("--add-host", "%s:127.0.0.1" % name)]
    for name in names:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, check=False)
        run(["docker", "run", "-d", "--name", name, "--hostname", name, "--network", "host", *hosts,
             "--tmpfs", "/run", "--tmpfs", "/run/lock", "-v", "/sys/fs/cgroup:/sys/fs/cgroup:ro", IMAGE,
             "/lib/systemd/systemd"])


def upgrade(inv, limit, batch, log):
    start_time = time.perf_counter()
    run(["ansible-playbook", "-i", str(inv), "--limit", limit, "-e",
         json.dumps({"nvidia_driver_version": NEW, "upgrade_driver_batch": batch}),
         str(ROOT / "playbooks" / "upgrade_driver.yml")], log=log)
    return round(time.perf_counter() - start_time, 1)


def check(ctl, nodes):
    """Every node loads the new driver (its fixture) and is idle in Slurm, not drained."""
    for node in nodes:
        loaded = run(["docker", "exec", node, "sed", "-n", "s/^driver_version=//p", "/etc/accelops-sim/nvml.conf"])
        if loaded.strip() != NEW:
            raise SystemExit("%s loads driver %s after the upgrade, not %s" % (node, loaded.strip(), NEW))
    states = run(["docker", "exec", ctl, "sinfo", "-h", "-N", "-o", "%N %T"]).split("\n")
    states = dict(line.split() for line in states if line.strip())
    if any(states.get(node) != "idle" for node in nodes):
        raise SystemExit("not every node is idle in Slurm after the upgrade: %s" % states)


def main():
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--nodes", type=int, default=4, help="N, the nodes of the batched upgrade (default 4)")
    parser.add_argument("--batch", default="50%", help="upgrade_driver_batch of the batched upgrade (default 50%%)")
    parser.add_argument("--keep", action="store_true", help="leave the cluster running afterwards")
    args = parser.parse_args()
    if not 2 <= args.nodes <= 16:
        raise SystemExit("--nodes must be from 2 to 16")
    # The playbook's own pattern for upgrade_driver_batch, checked before the cluster is set up.
    if not re.fullmatch(r"[1-9][0-9]{0,4}|([1-9][0-9]?|100)%", args.batch):
        raise SystemExit("--batch must be a node count or a percentage from 1%% to 100%%, got %r" % args.batch)
    names = [PREFIX + "ctl"] + [PREFIX + "gpu%d" % i for i in range(args.nodes + 1)]
    ctl, one, rest = names[0], names[1], names[2:]
    WORK.mkdir(parents=True, exist_ok=True)
    mirror = run([str(ROOT / "tests" / "sim" / "mirror" / "mirror.sh"), "url"]).strip()
    key = (ROOT / "build" / "mirror" / "cuda" / "fingerprint").read_text(encoding="utf-8").strip()
    inv = WORK / "inventory.yml"
    inv.write_text(inventory(names, mirror, key), encoding="utf-8")
    (WORK / "setup.yml").write_text(SETUP, encoding="utf-8")
    os.environ.update(ANSIBLE_COLLECTIONS_PATH=str(ROOT / "build" / "collections"),
                      ANSIBLE_HOME=str(ROOT / ".ansible"), ANSIBLE_NOCOLOR="1", ANSIBLE_FORKS="%d" % len(names))
    try:
        print("== starting %d containers, setting up the cluster (logs in %s)" % (len(names), WORK), flush=True)
        start(names)
        began = time.perf_counter()
        run(["ansible-playbook", "-i", str(inv), str(ROOT / "tests" / "sim" / "host" / "prepare-node.yml")],
            log=WORK / "prepare.log")
        run(["ansible-playbook", "-i", str(inv), str(WORK / "setup.yml")], log=WORK / "setup.log")
        run(["ansible-playbook", "-i", str(inv), str(ROOT / "playbooks" / "slurm.yml")], log=WORK / "slurm.log")
        setup_s = round(time.perf_counter() - began, 1)
        print("== one node: %s" % one, flush=True)
        single = upgrade(inv, one, 1, WORK / "upgrade-one.log")
        print("== %d nodes, upgrade_driver_batch=%s" % (len(rest), args.batch), flush=True)
        batched = upgrade(inv, ",".join(rest), args.batch, WORK / "upgrade-batched.log")
        check(ctl, [one, *rest])
    finally:
        if not args.keep:
            subprocess.run(["docker", "rm", "-f", *names], capture_output=True, check=False)
    # As Ansible sizes a batch from a percentage: rounded down, at least one node.
    per_batch = (max(1, int(len(rest) * int(args.batch[:-1]) / 100)) if args.batch.endswith("%") else int(args.batch))
    results = {"nodes": len(rest), "batch": args.batch, "batches": math.ceil(len(rest) / max(per_batch, 1)),
               "setup_s": setup_s, "one_node_s": single, "n_nodes_s": batched,
               "ratio": round(batched / single, 2)}
    out = ROOT / "build" / "bench" / "rolling_upgrade.json"
    out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print("rolling driver upgrade %s -> %s: one node %.1f s; %d nodes at upgrade_driver_batch=%s (%d batches) %.1f s,"
          " %.2f times one node (cluster set-up %.1f s)"
          % (OLD, NEW, single, len(rest), args.batch, results["batches"], batched, results["ratio"], setup_s))
    print("written to %s" % out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
