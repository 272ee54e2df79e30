"""Benchmarks for gpu_facts (figures go into docs/performance.md; nothing here is a test).

1. In-process NVML gather: GpuFactsCollector on the 8-GPU DGX H100 fixture with the real pynvml and the fake
   libnvidia-ml.so.1; median milliseconds and the number of NVML calls per gather.
2. Round trip through Ansible to a simulated node (the one `make demo` starts): `ansible NODE -m
   accelops.gpu.gpu_facts` against `ansible NODE -m ansible.builtin.ping`, interleaved, median of N runs each.

Usage: python tests/bench/gpu_facts.py [--runs N] [--node NAME] [--inventory PATH]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "unit"))

from simnode import FIXTURES, build_fake_nvml, expose_collection  # noqa: E402


def in_process(runs):
    expose_collection()
    ctypes.CDLL(str(build_fake_nvml()), mode=ctypes.RTLD_GLOBAL)
    os.environ["FAKE_NVML_FIXTURE"] = str(FIXTURES / "dgx-h100.conf")
    from ansible_collections.accelops.gpu.plugins.module_utils._gpu_facts import GpuFactsCollector, resolve_subsets
    from ansible_collections.accelops.gpu.plugins.module_utils._nvml import NvmlSession

    times, calls = [], set()
    for _run in range(runs):
        start = time.perf_counter()
        with NvmlSession() as session:
            facts = GpuFactsCollector(session, resolve_subsets(["all", "!pci"])).collect()
        times.append((time.perf_counter() - start) * 1000)
        calls.add(session.calls)
    assert facts["gpu_count"] == 8
    return {"runs": runs, "median_ms": round(statistics.median(times), 2), "min_ms": round(min(times), 2),
            "nvml_calls": sorted(calls)}


def ansible_once(node, inventory, module):
    start = time.perf_counter()
    out = subprocess.run(["ansible", node, "-i", str(inventory), "-m", module, "-o"], capture_output=True, text=True,
                         check=False)
    elapsed = time.perf_counter() - start
    if out.returncode != 0:
        raise SystemExit("ansible -m %s failed:\n%s%s" % (module, out.stdout, out.stderr))
    return elapsed


def round_trips(runs, node, inventory):
    modules = ("ansible.builtin.ping", "accelops.gpu.gpu_facts")
    for module in modules:  # warm caches (AnsiballZ payloads, Python bytecode on the node)
        ansible_once(node, inventory, module)
    times = {m: [] for m in modules}
    for _run in range(runs):
        for module in modules:
            times[module].append(ansible_once(node, inventory, module))
    ping, facts = (statistics.median(times[m]) for m in modules)
    return {"runs": runs, "ping_median_s": round(ping, 3), "gpu_facts_median_s": round(facts, 3),
            "ratio": round(facts / ping, 3)}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--node", default="accelops-demo-dgx-h100")
    parser.add_argument("--inventory", default=str(ROOT / "build" / "demo" / "inventory.yml"))
    args = parser.parse_args()
    results = {"in_process": in_process(max(args.runs, 50)),
               "round_trip": round_trips(args.runs, args.node, args.inventory)}
    out = ROOT / "build" / "bench" / "gpu_facts.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
