"""Benchmark: the time from `srun` to the job's first line, without and with Slurm's accounting (figures go into
docs/slurm.md and docs/performance.md; nothing here is a test).

The `make demo` node is a one-node Slurm cluster (slurmctld and slurmd on the node, Debian 12's Slurm 22.05, the DGX
H100 fixture's eight GPUs as gres). On the node, one Python process starts `srun` and reads the job's first line: the
clock runs from just before the start to that line, and on to srun's exit, so `docker exec`'s own cost is in neither.
Three jobs, interleaved, after one warm-up each: a task without GPUs, one with one GPU, one with all eight. Each job
prints the CUDA_VISIBLE_DEVICES that Slurm gave it, and a wrong count stops the benchmark.

With --accounting, the same jobs are timed first as the node is (`make demo` leaves accounting off), then again after
playbooks/slurm.yml has turned accounting on with the demo's inventory (slurm_accounting: true: MariaDB and slurmdbd
from Debian on the node, AccountingStorageTRES=gres/gpu, a job accounting gather plugin): each job then also goes
through slurmdbd's records and the gather plugin's polls. The node keeps accounting afterwards (`make demo` starts
afresh). MariaDB on the node gets `skip-networking` first, as in the slurm scenario, so that nothing listens on the
host's port 3306.

Usage: python tests/bench/slurm_srun.py [--runs N] [--node NAME] [--accounting]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INVENTORY = ROOT / "build" / "demo" / "inventory.yml"
# Only for the benchmark's throw-away node; a site chooses its own (docs/slurm.md, accounting).
BENCH_DBD_PASSWORD = "bench-accounting-password-0001"

# Runs on the node, with the jobs and the number of runs as its arguments; prints {job: [[first_s, exit_s], ...]}.
ON_NODE = r"""
import json, subprocess, sys, time
jobs, runs = json.loads(sys.argv[1]), int(sys.argv[2])

def once(name, argv, gpus):
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    first = time.perf_counter() - start
    rest, err = proc.communicate()
    done = time.perf_counter() - start
    seen = line.split()[-1] if line.strip() else ""
    count = 0 if seen == "none" else len([g for g in seen.split(",") if g])
    if proc.returncode or count != gpus:
        sys.exit("%s: rc %s, first line %r, stderr %r" % (name, proc.returncode, line, err))
    return [round(first, 4), round(done, 4)]

for name, (argv, gpus) in jobs.items():
    once(name, argv, gpus)
times = {name: [] for name in jobs}
for _run in range(runs):
    for name, (argv, gpus) in jobs.items():
        times[name].append(once(name, argv, gpus))
print(json.dumps(times))
"""


def jobs():
    line = ["sh", "-c", 'echo "first line: ${CUDA_VISIBLE_DEVICES:-none}"']
    plain = ["srun", "--ntasks=1", "--time=1"]
    return {"no GPU": (plain + line, 0),
            "1 GPU (--gres=gpu:1)": ([*plain, "--gres=gpu:1", *line], 1),
            "8 GPUs (--gres=gpu:8)": ([*plain, "--gres=gpu:8", *line], 8)}


def timed(node, runs):
    """{job: [[first_s, exit_s], ...]} of the jobs run on the node."""
    out = subprocess.run(["docker", "exec", "-i", node, "python3", "-", json.dumps(jobs()), str(runs)],
                         input=ON_NODE, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit("srun on %s failed (is the demo node up, with Slurm? make demo):\n%s%s"
                         % (node, out.stdout, out.stderr))
    return json.loads(out.stdout)


def figures(times):
    result = {}
    for name, pairs in times.items():
        first = [pair[0] for pair in pairs]
        done = [pair[1] for pair in pairs]
        result[name] = {"first_line_median_s": round(statistics.median(first), 3),
                        "first_line_max_s": round(max(first), 3),
                        "exit_median_s": round(statistics.median(done), 3)}
    return result


def accounting_type(node):
    out = subprocess.run(["docker", "exec", node, "scontrol", "show", "config"], capture_output=True, text=True,
                         check=False)
    for line in out.stdout.splitlines():
        if line.startswith("AccountingStorageType"):
            return line.partition("=")[2].strip()
    raise SystemExit("scontrol show config on %s gave no AccountingStorageType:\n%s" % (node, out.stderr))


def turn_accounting_on(node):
    """playbooks/slurm.yml with slurm_accounting on, with the demo's inventory; MariaDB kept off the network first."""
    if not INVENTORY.is_file():
        raise SystemExit("%s is missing: run make demo first" % INVENTORY)
    subprocess.run(["docker", "exec", node, "sh", "-c",
                    "mkdir -p /etc/mysql/mariadb.conf.d && printf '[mysqld]\\nskip-networking\\n'"
                    " > /etc/mysql/mariadb.conf.d/70-bench.cnf"], check=True)
    log = ROOT / "build" / "bench" / "slurm_srun_accounting.log"
    argv = ["ansible-playbook", "-i", str(INVENTORY), str(ROOT / "playbooks" / "slurm.yml"),
            "-e", "slurm_accounting=true", "-e", "slurm_dbd_password=" + BENCH_DBD_PASSWORD]
    with open(log, "w", encoding="utf-8") as out:
        rc = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, check=False).returncode
    if rc != 0:
        tail = log.read_text(encoding="utf-8").splitlines()[-30:]
        raise SystemExit("turning accounting on failed (rc %d), the end of %s:\n%s" % (rc, log, "\n".join(tail)))


def report(title, results):
    print(title)
    for name, value in results.items():
        print("  %-22s %6.3f s (%.3f s)   exit %6.3f s"
              % (name, value["first_line_median_s"], value["first_line_max_s"], value["exit_median_s"]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--node", default="accelops-demo-dgx-h100")
    parser.add_argument("--accounting", action="store_true",
                        help="time the jobs as the node is, then again with accounting turned on (the node keeps it)")
    args = parser.parse_args()
    if args.runs < 1:
        raise SystemExit("--runs must be at least 1")
    target = ROOT / "build" / "bench" / "slurm_srun.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    before = accounting_type(args.node)
    if args.accounting and before != "accounting_storage/none":
        raise SystemExit("%s already has %s: --accounting needs the node without accounting (make demo)"
                         % (args.node, before))
    results = {"node": args.node, "runs": args.runs, "accounting": before, "jobs": figures(timed(args.node, args.runs))}
    report("srun to the job's first line on %s (%s), median of %d (max), and to srun's exit:"
           % (args.node, before, args.runs), results["jobs"])
    if args.accounting:
        turn_accounting_on(args.node)
        after = accounting_type(args.node)
        if after != "accounting_storage/slurmdbd":
            raise SystemExit("after the playbook, %s has %s, not accounting_storage/slurmdbd" % (args.node, after))
        results["with_accounting"] = {"accounting": after, "jobs": figures(timed(args.node, args.runs))}
        report("the same with %s:" % after, results["with_accounting"]["jobs"])
    target.write_text(json.dumps(results, indent=2) + "\n")
    print("written to %s" % target)


if __name__ == "__main__":
    main()
