"""Benchmark: site.yml on a simulated fleet of 1, 4 and 16 GPU nodes, first converge and converged re-run, and what
one re-run of the largest fleet costs with other Ansible settings (figures go into docs/performance.md; nothing here
is a test, but a re-run that changes anything, a node other than the sick one that fails, or a sick node that does
not stop in its GPU settings stops the benchmark).

Each size gets fresh nodes: Debian 12 containers of the simulated-node image on the host's network (as `make demo`),
set up with tests/sim/host/prepare-node.yml, the fixtures varied: DGX H100, DGX A100 with MIG (on driver R550 as the
others: the mirror carries no R535), 2x L40S, and one HGX H100 with a lost GPU (it stops at its GPU settings in both
runs, as it should: "GPU 2 is lost; nothing was changed"). Slurm is left out (no slurm_controllers group): its cost
is measured by tests/bench/site_rerun.py and tests/bench/slurm_srun.py.

Per run: the wall time; the controller's CPU time (ansible-playbook and every process it waited for, the docker CLI
included); the nodes' CPU time (their containers' cgroups); the tasks that ran, those that ran a module on a node
and those the controller alone decided (assert, set_fact, debug, include, ...), from the task tally; per role the
tasks that ran and their seconds summed over the nodes. The recommended settings
(pipelining, forks = nodes, linear strategy) are the baseline; --variants re-runs the largest fleet once more with
each of: forks 5 (Ansible's default), no pipelining, strategy free, a jsonfile fact cache, facts not injected as
top-level variables (inject_facts_as_vars = False: the controller copies each host's facts once per task, not
twice), the frameworks' validation left out (pytorch_validate and tensorflow_validate false, as a site that runs
playbooks/validate.yml on its own schedule sets them), Mitogen (0.3.54 from PyPI into build/bench/fleet/mitogen,
its strategy mitogen_linear and its own `docker` connection). Any ansible.cfg and ANSIBLE_* settings of the caller's
are left out: the baseline is always the same. --keep leaves the largest fleet running; --reuse then runs the
variants alone on it.

Goal (issue 16): the 16-node re-run at most 3 x the one-node re-run on the 2-core machine.

Usage: python tests/bench/fleet.py [--sizes 1,4,16] [--variants all|none|NAME,...] [--keep] [--reuse]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from rolling_upgrade import ROOT, node_vars, run, start  # noqa: E402
from site_rerun import children_cpu  # noqa: E402

WORK = ROOT / "build" / "bench" / "fleet"
PREFIX = "accelops-fleet-"
SICK = "gpu-lost"
# Where the sick node must stop, and how.
SICK_ROLE, SICK_MESSAGE = "accelops.gpu.gpu_settings", "GPU 2 is lost; nothing was changed"
RECAP = re.compile(r"^(\S+)\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=(\d+)"
                   r"\s+rescued=(\d+)\s+ignored=(\d+)", re.MULTILINE)
# The first four are one of each kind; then the kinds of a mixed fleet with one sick node in sixteen.
KINDS = ["dgx-h100", "dgx-a100-mig", "pcie-l40s", SICK] + ["dgx-h100", "dgx-a100-mig", "pcie-l40s", "dgx-h100"] * 3
# The fixture values of a driver R550 node (the A100 fixture models R535, which the mirror does not carry).
R550 = {"driver_version": "550.54.15", "nvml_version": "12.550.54.15", "cuda_driver_version": "12040"}
MITOGEN = "mitogen==0.3.54"
# Actions that run on the controller alone, without a round trip to the node.
LOCAL = {"ansible.builtin." + name for name in (
    "assert", "set_fact", "validate_argument_spec", "debug", "include_tasks", "import_tasks", "include_role",
    "import_role", "include_vars", "meta", "fail", "group_by", "add_host", "set_stats")}
VARIANTS = ("forks5", "no_pipelining", "free", "fact_cache", "no_fact_vars", "no_validation", "mitogen")


def inventory(names, mirror, key):
    hosts = "".join("""
        %s:
          accelops_sim_fixture: %s
          gpu_monitoring_listen: 127.0.0.1:%d""" % (name, KINDS[i], 9410 + i) for i, name in enumerate(names))
    return """\
all:
  children:
    gpu_nodes:
      hosts:%(hosts)s
  vars:
%(node_vars)s    cuda_toolkit_versions: ["12.4"]
    pytorch_channel: cpu
    pytorch_index_url: ""
    pytorch_find_links: ["%(mirror)s/wheelhouse/"]
    tensorflow_variant: cpu
    tensorflow_index_url: ""
    tensorflow_find_links: ["%(mirror)s/wheelhouse/"]
""" % {"hosts": hosts, "mirror": mirror, "node_vars": node_vars(mirror, key, R550["driver_version"])}


def remove_all():
    names = [PREFIX + "%02d" % (i + 1) for i in range(len(KINDS))]
    subprocess.run(["docker", "rm", "-f", *names], capture_output=True, check=False)


def node_cpu(names):
    """CPU seconds the nodes' containers have used (cgroup v1 cpuacct, or v2 cpu.stat with either cgroup driver)."""
    total = 0.0
    for cid in run(["docker", "inspect", "--format", "{{.Id}}", *names]).split():
        v1 = Path("/sys/fs/cgroup/cpuacct/docker", cid, "cpuacct.usage")
        v2 = [Path("/sys/fs/cgroup/system.slice", "docker-%s.scope" % cid, "cpu.stat"),
              Path("/sys/fs/cgroup/docker", cid, "cpu.stat")]
        if v1.exists():
            total += int(v1.read_text()) / 1e9
        elif any(path.exists() for path in v2):
            stat = next(path for path in v2 if path.exists()).read_text()
            total += int(stat.split("usage_usec ")[1].split()[0]) / 1e6
        else:
            raise SystemExit("no cgroup CPU account found for container %s" % cid)
    return total


def recap(stdout):
    """Per host: ok, changed, unreachable, failed, skipped, rescued, ignored (the last PLAY RECAP)."""
    keys = ("ok", "changed", "unreachable", "failed", "skipped", "rescued", "ignored")
    last = stdout.rpartition("PLAY RECAP")[2]
    return {found[0]: dict(zip(keys, map(int, found[1:]))) for found in RECAP.findall(last)}


def judge(names, hosts, rows, report, stdout):
    """What is wrong with a run: its recap per host, task tally, fleet report and output."""
    sick = {name for i, name in enumerate(names) if KINDS[i] == SICK}
    bad = {host: counts for host, counts in hosts.items()
           if counts["unreachable"] or counts["ignored"] or counts["rescued"]
           or bool(counts["failed"]) != (host in sick)}
    sick_roles = {row["role"] for row in rows if row["host"] in sick and row["failed"]}
    problems = []
    if set(hosts) != set(names) or bad:
        problems.append("nodes failed, not as expected, or missing from the recap: %s"
                        % (bad or sorted(set(names) - set(hosts))))
    if sick and (sick_roles != {SICK_ROLE} or SICK_MESSAGE not in stdout):
        problems.append("the sick node did not stop in %s with %r (it failed in %s)"
                        % (SICK_ROLE, SICK_MESSAGE, sorted(sick_roles) or "nothing"))
    if sorted(node["name"] for node in report["failed"]) != sorted(sick) or report["unreachable"]:
        problems.append("the fleet report names as failed %s and as unreachable %s, not the sick nodes %s"
                        % (report["failed"], report["unreachable"], sorted(sick)))
    return problems


def playbook(inv, names, label, env, extra=()):
    """One site.yml run on the fleet. The sick nodes must fail, in their GPU settings and with the lost GPU's message;
    no other node may fail, be unreachable or have an error ignored (the report ignores them), and the fleet report
    must name exactly the sick nodes as failed."""
    tally = WORK / ("tally-%s.json" % label)
    env = dict(env, ACCELOPS_TASK_TALLY=str(tally))
    if extra[:1] == ["-i"]:  # a variant's own inventory in place of the fleet's
        inv, extra = extra[1], extra[2:]
    command = ["ansible-playbook", "-i", str(inv), str(ROOT / "playbooks" / "site.yml"),
               "-e", json.dumps({"accelops_gpu_report_dir": str(WORK / ("report-%d" % len(names)))}), *extra]
    cpu, nodes_cpu, began = children_cpu(), node_cpu(names), time.perf_counter()
    with open(WORK / ("%s.log" % label), "w", encoding="utf-8") as log:
        subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, check=False, env=env)
    wall, cpu, nodes_cpu = time.perf_counter() - began, children_cpu() - cpu, node_cpu(names) - nodes_cpu
    stdout = (WORK / ("%s.log" % label)).read_text(encoding="utf-8")
    hosts = {host: counts for host, counts in recap(stdout).items() if host in names}  # not the report's localhost
    rows = json.loads(tally.read_text(encoding="utf-8"))
    report = json.loads((WORK / ("report-%d" % len(names)) / "fleet.json").read_text(encoding="utf-8"))
    problems = judge(names, hosts, rows, report, stdout)
    if problems:
        raise SystemExit("%s: %s (log %s):\n%s" % (label, "; ".join(problems), WORK / ("%s.log" % label),
                                                   "\n".join(stdout.splitlines()[-40:])))
    roles, local, remote = {}, 0, 0
    for row in rows:
        role = roles.setdefault(row["role"], {"tasks_ran": 0, "node_seconds": 0.0})
        role["tasks_ran"] += row["ok"] + row["failed"]
        role["node_seconds"] = round(role["node_seconds"] + row["seconds"], 1)
        for action, count in row["actions"].items():
            local, remote = (local + count, remote) if action in LOCAL else (local, remote + count)
    return {"wall_s": round(wall, 1), "controller_cpu_s": round(cpu, 1), "nodes_cpu_s": round(nodes_cpu, 1),
            "tasks_on_nodes": remote, "tasks_on_controller": local,
            "changed": sum(counts["changed"] for counts in hosts.values()),
            "roles": roles}


def prepare(names, inv, env):
    start(names)
    run(["ansible-playbook", "-i", str(inv), str(ROOT / "tests" / "sim" / "host" / "prepare-node.yml")],
        log=WORK / ("prepare-%d.log" % len(names)), env=env)
    for i, name in enumerate(names):
        if KINDS[i] == "dgx-a100-mig":
            edits = [arg for key, value in R550.items() for arg in ("-e", "s/^%s=.*/%s=%s/" % (key, key, value))]
            run(["docker", "exec", name, "sed", "-i", *edits, "/etc/accelops-sim/nvml.conf"])


def variant_env(name, env, count):
    """The settings of one variant, as environment and extra arguments to ansible-playbook."""
    if name == "forks5":
        return dict(env, ANSIBLE_FORKS="5"), []
    if name == "no_pipelining":
        return dict(env, ANSIBLE_PIPELINING="False"), []
    if name == "free":
        return dict(env, ANSIBLE_STRATEGY="free"), []
    if name == "fact_cache":
        shutil.rmtree(WORK / "facts", ignore_errors=True)  # filled by this run's first playbook, not an earlier one
        return dict(env, ANSIBLE_CACHE_PLUGIN="jsonfile", ANSIBLE_CACHE_PLUGIN_CONNECTION=str(WORK / "facts"),
                    ANSIBLE_CACHE_PLUGIN_TIMEOUT="86400"), []
    if name == "no_fact_vars":
        return dict(env, ANSIBLE_INJECT_FACT_VARS="False"), []
    if name == "no_validation":
        return env, ["-e", json.dumps({"pytorch_validate": False, "tensorflow_validate": False})]
    if name == "mitogen":
        target = WORK / "mitogen"
        if not (target / "ansible_mitogen").is_dir():
            run([sys.executable, "-m", "pip", "install", "-q", "--target", str(target), MITOGEN])
        # Its own connection name, in the inventory: as an extra variable it would also apply to the report's tasks
        # on the controller (delegated to localhost).
        inv = WORK / ("inventory-mitogen-%d.yml" % count)
        inv.write_text((WORK / ("inventory-%d.yml" % count)).read_text(encoding="utf-8").replace(
            "ansible_connection: community.docker.docker", "ansible_connection: docker"), encoding="utf-8")
        return (dict(env, ANSIBLE_STRATEGY_PLUGINS=str(target / "ansible_mitogen" / "plugins" / "strategy"),
                     ANSIBLE_STRATEGY="mitogen_linear", PYTHONPATH=str(target)), ["-i", str(inv)])
    raise SystemExit("unknown variant %r" % name)


def main():
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--sizes", default="1,4,16", help="fleet sizes, 1 to 16 (default 1,4,16)")
    parser.add_argument("--variants", default="all",
                        help="all, none or a comma-separated list of %s (default all)" % ", ".join(VARIANTS))
    parser.add_argument("--keep", action="store_true", help="leave the largest fleet running afterwards")
    parser.add_argument("--reuse", action="store_true",
                        help="run the variants alone on the largest size's nodes that an earlier --keep run left "
                             "converged (results in fleet-reuse.json)")
    args = parser.parse_args()
    try:
        sizes = sorted({int(size) for size in args.sizes.split(",")})
    except ValueError:
        raise SystemExit("--sizes must be numbers from 1 to 16 separated by commas, got %r" % args.sizes) from None
    if not sizes or sizes[0] < 1 or sizes[-1] > len(KINDS):
        raise SystemExit("--sizes must be numbers from 1 to %d, got %r" % (len(KINDS), args.sizes))
    variants = {"all": list(VARIANTS), "none": []}.get(args.variants, list(dict.fromkeys(args.variants.split(","))))
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        raise SystemExit("--variants: unknown %s; allowed: all, none (alone) or a list of %s"
                         % (unknown, ", ".join(VARIANTS)))
    # Ctrl-C and SIGTERM alike remove the fleet (the finally below); SIGTERM would otherwise skip it.
    signal.signal(signal.SIGTERM, lambda signum, _frame: sys.exit(128 + signum))
    signal.signal(signal.SIGHUP, lambda signum, _frame: sys.exit(128 + signum))
    WORK.mkdir(parents=True, exist_ok=True)
    mirror = run([str(ROOT / "tests" / "sim" / "mirror" / "mirror.sh"), "url"]).strip()
    key = (ROOT / "build" / "mirror" / "cuda" / "fingerprint").read_text(encoding="utf-8").strip()
    # The caller's Ansible settings are left out, so that the baseline is always the recommended one.
    config = WORK / "ansible.cfg"
    config.write_text("# empty: tests/bench/fleet.py sets what it measures through the environment\n", encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if not key.startswith("ANSIBLE_")}
    env = dict(env, ANSIBLE_CONFIG=str(config), ANSIBLE_STRATEGY="linear", ANSIBLE_CACHE_PLUGIN="memory",
               ANSIBLE_COLLECTIONS_PATH=str(ROOT / "build" / "collections"),
               ANSIBLE_HOME=str(ROOT / ".ansible"), ANSIBLE_NOCOLOR="1", ANSIBLE_PIPELINING="True",
               ANSIBLE_CALLBACK_PLUGINS=str(HERE / "callback_plugins"), ANSIBLE_CALLBACKS_ENABLED="task_tally")
    results = {"sizes": {}, "variants": {}, "variants_size": sizes[-1] if variants else None}
    out = ROOT / "build" / "bench" / ("fleet-reuse.json" if args.reuse else "fleet.json")
    try:
        for size in sizes:
            names = [PREFIX + "%02d" % (i + 1) for i in range(size)]
            inv = WORK / ("inventory-%d.yml" % size)
            if args.reuse:
                if size == sizes[-1]:
                    found = subprocess.run(["docker", "inspect", "--format", "{{.State.Running}}", *names],
                                           capture_output=True, text=True, check=False).stdout.split()
                    if found != ["true"] * size:
                        raise SystemExit("--reuse: the %d nodes of an earlier --keep run are not all running" % size)
                continue
            remove_all()
            inv.write_text(inventory(names, mirror, key), encoding="utf-8")
            size_env = dict(env, ANSIBLE_FORKS=str(size))
            print("== %d node(s): starting and preparing (logs in %s)" % (size, WORK), flush=True)
            prepare(names, inv, size_env)
            print("== %d node(s): first converge" % size, flush=True)
            first = playbook(inv, names, "first-%d" % size, size_env)
            print("   %.1f s, controller CPU %.1f s" % (first["wall_s"], first["controller_cpu_s"]), flush=True)
            print("== %d node(s): converged re-run" % size, flush=True)
            rerun = playbook(inv, names, "rerun-%d" % size, size_env)
            if rerun["changed"]:
                raise SystemExit("the re-run of %d node(s) changed %d tasks (log %s)"
                                 % (size, rerun["changed"], WORK / ("rerun-%d.log" % size)))
            print("   %.1f s, controller CPU %.1f s" % (rerun["wall_s"], rerun["controller_cpu_s"]), flush=True)
            results["sizes"][size] = {"first_converge": first, "rerun": rerun}
            out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        one, most = results["sizes"].get(1), results["sizes"].get(sizes[-1])
        if one and most and sizes[-1] > 1:
            results["rerun_ratio"] = round(most["rerun"]["wall_s"] / one["rerun"]["wall_s"], 2)
            print("re-run of %d nodes: %.2f times the one-node re-run (goal: at most 3)"
                  % (sizes[-1], results["rerun_ratio"]), flush=True)
        size = sizes[-1]
        for name in variants:
            print("== %d node(s): re-run with %s" % (size, name), flush=True)
            try:
                var_env, extra = variant_env(name, dict(env, ANSIBLE_FORKS=str(size)), size)
                if name == "fact_cache":  # one run fills the cache
                    playbook(inv, names, "fill-%s-%d" % (name, size), var_env, extra)
                result = playbook(inv, names, "%s-%d" % (name, size), var_env, extra)
                if result["changed"]:
                    raise SystemExit("the re-run changed %d tasks" % result["changed"])
            except (SystemExit, subprocess.CalledProcessError) as failed:
                # A setting that breaks the run is a finding, not the end of the benchmark.
                print("   failed: %s" % str(failed).partition("\n")[0], flush=True)
                result = {"failed": str(failed)[-2000:]}
            else:
                print("   %.1f s, controller CPU %.1f s" % (result["wall_s"], result["controller_cpu_s"]),
                      flush=True)
            results["variants"][name] = result
            out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    finally:
        if not (args.keep or args.reuse):  # --reuse leaves the nodes it was given
            remove_all()
        out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print("written to %s; the fleet report of %d nodes: %s" % (out, sizes[-1], WORK / ("report-%d" % sizes[-1])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
