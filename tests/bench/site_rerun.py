"""Benchmark: site.yml re-run on the converged simulated node that `make demo` starts, against one
`ansible -m ping` round trip to the same node, with and without pipelining. For each re-run it reports the wall time,
the module runs on the node and all `docker exec` calls (from `docker events`: one per module run with pipelining,
about five without), the
controller's CPU time (ansible-playbook and every process it waited for, the docker CLI included), and per role the
tasks that ran or were skipped and their seconds. Goal (issue 16): changed=0 and at most 20 x one ping.
Figures go into docs/performance.md; nothing here is a test, but a re-run that changes anything stops the benchmark.

Usage: python tests/bench/site_rerun.py [--runs N] [--node NAME] [--inventory PATH] [--pipelining {on,off,both}]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
RECAP = re.compile(r"ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=(\d+)")


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command, env):
    cpu, start = children_cpu(), time.perf_counter()
    out = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    elapsed, cpu = time.perf_counter() - start, children_cpu() - cpu
    if out.returncode != 0:
        raise SystemExit("%s failed:\n%s%s" % (" ".join(command), out.stdout[-3000:], out.stderr[-2000:]))
    return elapsed, cpu, out.stdout


class ExecCounter:
    """Every `docker exec` on the node while it runs (a live `docker events` stream: the daemon keeps only the last
    few hundred events for --since), and the module runs among them (those that start Python)."""

    def __init__(self, node):
        self.events = subprocess.Popen(
            ["docker", "events", "--filter", "container=" + node, "--filter", "event=exec_start",
             "--format", "{{.Action}}"], stdout=subprocess.PIPE, text=True)
        time.sleep(0.5)

    def stop(self):
        time.sleep(1)  # the daemon's event stream lags the exec
        self.events.terminate()
        lines = self.events.communicate()[0].splitlines()
        return len(lines), sum("python3" in line for line in lines)


def rerun(args, env, tally, warm_up=False):
    command = ["ansible-playbook", "-i", args.inventory, "--limit", args.node, str(ROOT / "playbooks" / "site.yml"),
               "-e", json.dumps({"accelops_gpu_report_dir": str(ROOT / "build" / "bench" / "site-report")})]
    env = dict(env, ACCELOPS_TASK_TALLY=str(tally))
    counter = ExecCounter(args.node)
    elapsed, cpu, stdout = timed(command, env)
    execs, modules = counter.stop()
    tally.with_suffix(".log").write_text(stdout)
    ok, changed, unreachable, failed, skipped = map(int, RECAP.findall(stdout)[-1])
    if (changed and not warm_up) or unreachable or failed:
        raise SystemExit("not idempotent (changed=%d failed=%d):\n%s" % (changed, failed, stdout[-3000:]))
    return {"wall_s": elapsed, "cpu_s": cpu, "execs": execs, "modules": modules, "ok": ok, "skipped": skipped}


def measure(args, pipelining):
    env = dict(os.environ, ANSIBLE_PIPELINING=str(pipelining), ANSIBLE_CALLBACK_PLUGINS=str(HERE / "callback_plugins"),
               ANSIBLE_CALLBACKS_ENABLED="task_tally", ANSIBLE_NOCOLOR="1")
    ping = ["ansible", args.node, "-i", args.inventory, "-m", "ansible.builtin.ping", "-o"]
    tally = ROOT / "build" / "bench" / ("site_rerun_tally_%s.json" % ("pipelining" if pipelining else "plain"))
    tally.parent.mkdir(parents=True, exist_ok=True)
    timed(ping, env)  # warm caches (AnsiballZ payloads, Python bytecode on the node)
    rerun(args, env, tally, warm_up=True)  # the first may make the report's directory
    pings, runs = [], []
    for _run in range(args.runs):  # interleaved, so both see the same machine load
        pings.append(timed(ping, env)[0])
        runs.append(rerun(args, env, tally))
    ping_s = statistics.median(pings)
    median = {key: statistics.median(run[key] for run in runs) for key in ("wall_s", "cpu_s", "execs", "modules")}
    roles = {}
    for row in json.loads(tally.read_text()):
        role = roles.setdefault(row["role"], {"ran": 0, "skipped": 0, "seconds": 0.0})
        role["ran"] += row["ok"] + row["failed"]
        role["skipped"] += row["skipped"]
        role["seconds"] = round(role["seconds"] + row["seconds"], 1)
    return {"pipelining": pipelining, "runs": args.runs, "changed": 0, "tasks_ran": runs[-1]["ok"],
            "tasks_skipped": runs[-1]["skipped"], "module_runs_on_node": median["modules"],
            "docker_execs": median["execs"],
            "controller_cpu_s": round(median["cpu_s"], 2), "ping_median_s": round(ping_s, 3),
            "rerun_median_s": round(median["wall_s"], 2), "ratio": round(median["wall_s"] / ping_s, 1),
            "roles": roles}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--node", default="accelops-demo-dgx-h100")
    parser.add_argument("--inventory", default=str(ROOT / "build" / "demo" / "inventory.yml"))
    parser.add_argument("--pipelining", choices=["on", "off", "both"], default="both")
    args = parser.parse_args()
    modes = {"on": [True], "off": [False], "both": [False, True]}[args.pipelining]
    results = [measure(args, mode) for mode in modes]
    out = ROOT / "build" / "bench" / "site_rerun.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
