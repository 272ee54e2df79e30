"""Benchmark: an idempotent re-run of a set of roles on a converged simulated node (the one `make demo` starts),
against one `ansible -m ping` round trip to the same node. Figures go into docs/performance.md; nothing here is a test,
but a re-run that changes anything stops the benchmark.

  driver: cuda_repo and nvidia_driver (tests/bench/driver-rerun.yml)
  stack:  cuda_toolkit, pytorch and tensorflow, validation included (tests/bench/stack-rerun.yml)

Usage: python tests/bench/role_rerun.py {driver,stack} [--runs N] [--node NAME] [--inventory PATH]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
PLAYBOOKS = {"driver": HERE / "driver-rerun.yml", "stack": HERE / "stack-rerun.yml"}
RECAP = re.compile(r"ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=(\d+)")


def timed(command):
    start = time.perf_counter()
    out = subprocess.run(command, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if out.returncode != 0:
        raise SystemExit("%s failed:\n%s%s" % (" ".join(command), out.stdout[-3000:], out.stderr[-2000:]))
    return elapsed, out.stdout


def rerun(playbook, node, inventory):
    elapsed, stdout = timed(["ansible-playbook", "-i", str(inventory), "--limit", node, str(playbook)])
    ok, changed, unreachable, failed, skipped = map(int, RECAP.findall(stdout)[-1])
    if changed or unreachable or failed:
        raise SystemExit("not idempotent (changed=%d failed=%d):\n%s" % (changed, failed, stdout[-3000:]))
    return elapsed, ok, skipped


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("roles", choices=sorted(PLAYBOOKS))
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--node", default="accelops-demo-dgx-h100")
    parser.add_argument("--inventory", default=str(ROOT / "build" / "demo" / "inventory.yml"))
    args = parser.parse_args()
    ping = ["ansible", args.node, "-i", args.inventory, "-m", "ansible.builtin.ping", "-o"]
    timed(ping)  # warm caches (AnsiballZ payloads, Python bytecode on the node)
    playbook = PLAYBOOKS[args.roles]
    rerun(playbook, args.node, args.inventory)
    pings, reruns, tasks = [], [], set()
    for _run in range(args.runs):  # interleaved, so both see the same machine load
        pings.append(timed(ping)[0])
        elapsed, ok, skipped = rerun(playbook, args.node, args.inventory)
        reruns.append(elapsed)
        tasks.add((ok, skipped))
    ping_s, rerun_s = statistics.median(pings), statistics.median(reruns)
    (ok, skipped), = tasks
    results = {"roles": args.roles, "runs": args.runs, "changed": 0, "tasks_ran": ok, "tasks_skipped": skipped,
               "ping_median_s": round(ping_s, 3), "rerun_median_s": round(rerun_s, 3),
               "ratio": round(rerun_s / ping_s, 1)}
    out = ROOT / "build" / "bench" / ("%s_rerun.json" % args.roles)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
