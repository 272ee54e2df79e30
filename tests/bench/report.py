"""Benchmark for the fleet report (figures go into docs/report.md; nothing here is a test).

A synthetic fleet of N simulated DGX H100 nodes (default 500; every tenth on an older driver, every 97th with a lost
GPU, five unreachable), its facts gathered once by the real collector on the fake NVML: the median time of the model
(fleet_report_model) and of the HTML (fleet_report_html), and the sizes of the JSON and the HTML.

Usage: python tests/bench/report.py [--nodes N] [--runs N]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "sim"))

from simnode import FIXTURES, build_fake_nvml, expose_collection  # noqa: E402


def gather(fixture):
    from ansible_collections.accelops.gpu.plugins.module_utils._gpu_facts import GpuFactsCollector, resolve_subsets
    from ansible_collections.accelops.gpu.plugins.module_utils._nvml import NvmlSession

    os.environ["FAKE_NVML_FIXTURE"] = str(FIXTURES / ("%s.conf" % fixture))
    with NvmlSession() as session:
        return GpuFactsCollector(session, resolve_subsets(["all", "!pci", "!processes"])).collect()


def fleet(count):
    healthy, lost = gather("dgx-h100"), gather("gpu-lost")
    old = dict(healthy, driver_version="535.161.08", cuda_driver_version="12.2")
    nodes = {}
    for i in range(count):
        facts = lost if i % 97 == 0 else old if i % 10 == 0 else healthy
        nodes["gpu%04d" % i] = {"nvidia": facts, "versions": {"cuda_toolkit": "12.4.1", "nccl": "2.21.5"}}
    return nodes, {"gpu%04d" % i: "timeout" for i in range(count, count + 5)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    expose_collection()
    ctypes.CDLL(str(build_fake_nvml()), mode=ctypes.RTLD_GLOBAL)
    from ansible_collections.accelops.gpu.plugins.plugin_utils._report_html import render_html
    from ansible_collections.accelops.gpu.plugins.plugin_utils._report_model import fleet_model

    nodes, unreachable = fleet(args.nodes)
    model_s, html_s = [], []
    for _run in range(args.runs):
        start = time.perf_counter()
        model = fleet_model(nodes, unreachable)
        middle = time.perf_counter()
        page = render_html(model, "Fleet", "2026-12-02 00:00 UTC")
        model_s.append(middle - start)
        html_s.append(time.perf_counter() - middle)
    print(json.dumps({"report": {
        "nodes": args.nodes + len(unreachable), "gpus": model["summary"]["gpus"], "runs": args.runs,
        "model_median_s": round(statistics.median(model_s), 3), "html_median_s": round(statistics.median(html_s), 3),
        "json_mib": round(len(json.dumps(model)) / 2 ** 20, 2),
        "html_mib": round(len(page.encode("utf-8")) / 2 ** 20, 2)}}, indent=1))


if __name__ == "__main__":
    main()
