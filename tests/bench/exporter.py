"""Benchmark for the GPU exporter's scrape (figures go into docs/performance.md; nothing here is a test).

One scrape (_exporter.scrape: one NVML session, the facts with health and the PCI bus, the exposition text) on the
8-GPU DGX H100 fixture with the real pynvml and the fake libnvidia-ml.so.1, in-process: the median and the 90th
percentile of N scrapes, the NVML calls of one, the size of the text, and the process's peak resident memory.

Usage: python tests/bench/exporter.py [--runs N] [--fixture NAME]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "sim"))

from simnode import FIXTURES, build_fake_nvml, expose_collection  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--runs", type=int, default=101)
    parser.add_argument("--fixture", default="dgx-h100")
    args = parser.parse_args()
    expose_collection()
    ctypes.CDLL(str(build_fake_nvml()), mode=ctypes.RTLD_GLOBAL)
    os.environ["FAKE_NVML_FIXTURE"] = str(FIXTURES / ("%s.conf" % args.fixture))
    from ansible_collections.accelops.gpu.plugins.module_utils._exporter import scrape

    text = scrape("bench")  # warm: imports, the library's first load
    times = []
    for _run in range(args.runs):
        start = time.perf_counter()
        text = scrape("bench")
        times.append((time.perf_counter() - start) * 1000)
    calls = [line for line in text.splitlines() if line.startswith("accelops_gpu_scrape_nvml_calls")]
    times.sort()
    results = {"fixture": args.fixture, "runs": args.runs, "median_ms": round(statistics.median(times), 2),
               "p90_ms": round(times[int(len(times) * 0.9) - 1], 2), "nvml_calls": int(calls[0].split()[-1]),
               "text_bytes": len(text.encode("utf-8")),
               "series": sum(1 for line in text.splitlines() if not line.startswith("#")),
               "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}
    out = ROOT / "build" / "bench" / "exporter.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print("exporter scrape on %(fixture)s: median %(median_ms).2f ms, p90 %(p90_ms).2f ms (%(runs)d runs); "
          "%(nvml_calls)d NVML calls, %(series)d series, %(text_bytes)d bytes; peak RSS %(peak_rss_mib).1f MiB"
          % results)
    print("written to %s" % out)


if __name__ == "__main__":
    main()
