"""Benchmark for Spark's GPU discovery script (figures go into docs/performance.md; nothing here is a test).

The script as Spark runs it: a fresh process each time, started through a /bin/sh wrapper that execs the program
(node_programs/accelops-gpu-spark-discovery.py) with its options, as Spark's worker starts a discoveryScript with no
arguments. Python, the real pynvml and the fake libnvidia-ml.so.1 load in every run. Four nodes: the 8-GPU DGX H100
fixture and a 16-GPU node made from it (each GPU twice, as tests/bench/exporter.py --double makes it), the DGX A100
with MIG on two GPUs (--mig devices: 16 addresses) and its double (32). The cases take turns, run by run, so that
what else the machine does falls on all of them alike. Reported: the median and the 95th percentile of the wall time
of N runs, against the target of 250 ms; and the bare interpreter's start (python -c pass) the same way, the floor
under any Python script.

Usage: python tests/bench/spark_discovery.py [--runs N]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "sim"))

from exporter import doubled  # noqa: E402  (tests/bench/exporter.py: the 16-GPU node of the exporter's bench)

from simnode import COLLECTIONS, FAKENVML_DIR, FIXTURES, build_fake_nvml, expose_collection  # noqa: E402

PROGRAM = ROOT / "node_programs" / "accelops-gpu-spark-discovery.py"
TARGET_MS = 250
BENCH = ROOT / "build" / "bench"


def doubled_with_mig(source, target):
    """doubled(), with the copies' MIG devices given UUIDs of their own (doubled() renews the GPUs' only)."""
    doubled(source, target)
    count = int(re.search(r"^gpu_count=(\d+)$", source.read_text(encoding="utf-8"), re.M).group(1))
    lines = []
    for line in target.read_text(encoding="utf-8").splitlines():
        match = re.match(r"gpu\.(\d+)\.gi\.(\d+)\.ci\.(\d+)\.uuid=", line)
        if match and int(match.group(1)) >= count:
            gpu, gi, ci = (int(group) for group in match.groups())
            lines.append(line[:-6] + "%02x%02x%02x" % (gpu, gi, ci))
        else:
            lines.append(line)
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return target


def wrapper(path, argv):
    """What the Spark role is to write: a shell script that Spark can exec, which runs the program with options."""
    path.write_text("#!/bin/sh\nexec %s %s --lib %s %s\n" % (sys.executable, PROGRAM, COLLECTIONS, " ".join(argv)),
                    encoding="utf-8")
    path.chmod(0o755)
    return path


def once(command, env):
    start = time.perf_counter()
    out = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    elapsed = (time.perf_counter() - start) * 1000
    if out.returncode != 0:
        raise SystemExit("%s failed (%d): %s" % (" ".join(command), out.returncode, out.stderr.strip()))
    return elapsed, out.stdout


def summary(times):
    times = sorted(times)
    return {"median_ms": round(statistics.median(times), 1), "p95_ms": round(times[-(-len(times) * 95 // 100) - 1], 1),
            "min_ms": round(times[0], 1), "max_ms": round(times[-1], 1)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--runs", type=int, default=101)
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    expose_collection()
    build_fake_nvml()
    BENCH.mkdir(parents=True, exist_ok=True)
    script = wrapper(BENCH / "spark-discovery.sh", ["--mig", "devices"])
    h100, a100 = FIXTURES / "dgx-h100.conf", FIXTURES / "dgx-a100-mig.conf"
    cases = {
        "dgx-h100 (8 GPUs)": (h100, 8),
        "dgx-h100 doubled (16 GPUs)": (doubled(h100, BENCH / "dgx-h100-doubled.conf"), 16),
        "dgx-a100-mig (8 GPUs, 10 MIG devices)": (a100, 16),
        "dgx-a100-mig doubled (16 GPUs, 20 MIG devices)": (doubled_with_mig(a100, BENCH / "dgx-a100-mig-doubled.conf"),
                                                           32),
    }
    env = dict(os.environ, LD_LIBRARY_PATH=str(FAKENVML_DIR))
    times = {name: [] for name in cases}
    floor = []
    for name, (fixture, addresses) in cases.items():  # warm: the page cache, the bytecode of the collection's code
        _elapsed, out = once([str(script)], dict(env, FAKE_NVML_FIXTURE=str(fixture)))
        assert len(set(json.loads(out)["addresses"])) == addresses, (name, out)
    for _run in range(args.runs):
        for name, (fixture, addresses) in cases.items():
            elapsed, out = once([str(script)], dict(env, FAKE_NVML_FIXTURE=str(fixture)))
            if len(json.loads(out)["addresses"]) != addresses:
                raise SystemExit("%s: %s" % (name, out))
            times[name].append(elapsed)
        floor.append(once([sys.executable, "-c", "pass"], env)[0])
    results = {"runs": args.runs, "target_ms": TARGET_MS, "python": sys.version.split()[0], "cpus": os.cpu_count(),
               "cases": {name: dict(summary(times[name]), addresses=cases[name][1]) for name in cases},
               "python_start": summary(floor)}
    out = BENCH / "spark_discovery.json"
    out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    for name, figures in results["cases"].items():
        print("spark discovery on %s: %d addresses, median %.1f ms, p95 %.1f ms (%d runs; target %d ms: %s)" % (
            name, figures["addresses"], figures["median_ms"], figures["p95_ms"], args.runs, TARGET_MS,
            "met" if figures["p95_ms"] <= TARGET_MS else "MISSED"))
    print("python -c pass: median %(median_ms).1f ms, p95 %(p95_ms).1f ms" % results["python_start"])
    print("written to %s" % out)


if __name__ == "__main__":
    main()
