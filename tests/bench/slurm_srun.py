"""Benchmark: the time from `srun` to the job's first line (figures go into docs/slurm.md; nothing here is a test).

The `make demo` node is a one-node Slurm cluster (slurmctld and slurmd on the node, Debian 12's Slurm 22.05, the DGX
H100 fixture's eight GPUs as gres). On the node, one Python process starts `srun` and reads the job's first line: the
clock runs from just before the start to that line, and on to srun's exit, so `docker exec`'s own cost is in neither.
Three jobs, interleaved, after one warm-up each: a task without GPUs, one with one GPU, one with all eight. Each job
prints the CUDA_VISIBLE_DEVICES that Slurm gave it, and a wrong count stops the benchmark.

Usage: python tests/bench/slurm_srun.py [--runs N] [--node NAME]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

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


def main():
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--node", default="accelops-demo-dgx-h100")
    args = parser.parse_args()
    if args.runs < 1:
        raise SystemExit("--runs must be at least 1")
    out = subprocess.run(["docker", "exec", "-i", args.node, "python3", "-", json.dumps(jobs()), str(args.runs)],
                         input=ON_NODE, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit("srun on %s failed (is the demo node up, with Slurm? make demo):\n%s%s"
                         % (args.node, out.stdout, out.stderr))
    times = json.loads(out.stdout)
    results = {"node": args.node, "runs": args.runs, "jobs": {}}
    for name, pairs in times.items():
        first = [pair[0] for pair in pairs]
        done = [pair[1] for pair in pairs]
        results["jobs"][name] = {"first_line_median_s": round(statistics.median(first), 3),
                                 "first_line_max_s": round(max(first), 3),
                                 "exit_median_s": round(statistics.median(done), 3)}
    target = ROOT / "build" / "bench" / "slurm_srun.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(results, indent=2) + "\n")
    print("srun to the job's first line on %s, median of %d (max), and to srun's exit:" % (args.node, args.runs))
    for name, figures in results["jobs"].items():
        print("  %-22s %6.3f s (%.3f s)   exit %6.3f s"
              % (name, figures["first_line_median_s"], figures["first_line_max_s"], figures["exit_median_s"]))
    print("written to %s" % target)


if __name__ == "__main__":
    main()
