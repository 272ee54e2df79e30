"""Benchmark for the GPU exporter's scrape (figures go into docs/performance.md; nothing here is a test).

One scrape (_exporter.scrape: one NVML session, the facts with health and the PCI bus, the exposition text) on the
8-GPU DGX H100 fixture with the real pynvml and the fake libnvidia-ml.so.1, in-process: the median and the 90th
percentile of N scrapes, the NVML calls of one, the size of the text, and the process's peak resident memory.
--double reads a 16-GPU node made from the fixture: each GPU twice, the copies with a UUID, serial, minor number and
PCI domain of their own (a build/ file; no 16-GPU machine of one model is modelled). --jobs-per-gpu K reads a job
map (dcgm-exporter's HPC job mapping, as the slurm role's prolog writes it) with K jobs on every GPU, so that every GPU
series is there K times with its hpc_job label. --cdi judges a CDI spec at every scrape (the exporter's CdiJudge, with
the spec gpu_cdi writes for the fixture, in a node tree under build/bench/cdi-root): the median scrape as the service
makes it (the judgement kept while nothing changes) and, as "judgement_ms", the median of a judgement made anew.

Usage: python tests/bench/exporter.py [--runs N] [--fixture NAME] [--double] [--jobs-per-gpu K] [--cdi]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "sim"))

from simnode import FIXTURES, build_fake_nvml, expose_collection  # noqa: E402


def doubled(source, target):
    """The fixture with every GPU twice: gpu.<i+n>.* beside gpu.<i>.*, the copy's identity its own."""
    lines = source.read_text(encoding="utf-8").splitlines()
    count = int(next(line for line in lines if line.startswith("gpu_count=")).split("=", 1)[1])
    copies = []
    for line in lines:
        match = re.match(r"gpu\.(\d+)\.(.*?)=(.*)$", line)
        if not match:
            continue
        index, key, value = int(match.group(1)), match.group(2), match.group(3)
        if key == "uuid":
            value = value[:-4] + "%04x" % (index + count)
        elif key == "serial":
            value = str(int(value) + 1000)
        elif key == "minor_number":
            value = str(int(value) + count)
        elif key == "pci.bus_id":
            value = "00000001" + value[8:]
        copies.append("gpu.%d.%s=%s" % (index + count, key, value))
    text = "\n".join(line if not line.startswith("gpu_count=") else "gpu_count=%d" % (2 * count) for line in lines)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text + "\n" + "\n".join(copies) + "\n", encoding="utf-8")
    return target


def main():
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--runs", type=int, default=101)
    parser.add_argument("--fixture", default="dgx-h100")
    parser.add_argument("--double", action="store_true", help="each GPU of the fixture twice")
    parser.add_argument("--jobs-per-gpu", type=int, default=0, help="K jobs on every GPU in a job map (0: no map)")
    parser.add_argument("--cdi", action="store_true", help="judge the fixture's CDI spec at every scrape")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    if not 0 <= args.jobs_per_gpu <= 128:
        parser.error("--jobs-per-gpu is from 0 to 128")
    if not (FIXTURES / ("%s.conf" % args.fixture)).is_file():
        parser.error("no fixture %s in %s" % (args.fixture, FIXTURES))
    expose_collection()
    ctypes.CDLL(str(build_fake_nvml()), mode=ctypes.RTLD_GLOBAL)
    fixture = FIXTURES / ("%s.conf" % args.fixture)
    if args.double:
        fixture = doubled(fixture, ROOT / "build" / "bench" / ("%s-doubled.conf" % args.fixture))
    os.environ["FAKE_NVML_FIXTURE"] = str(fixture)
    from ansible_collections.accelops.gpu.plugins.module_utils._exporter import scrape

    job_map = None
    if args.jobs_per_gpu:
        job_map = ROOT / "build" / "bench" / "job-map"
        job_map.mkdir(parents=True, exist_ok=True)
        for old in job_map.iterdir():
            old.unlink()
        count = int(next(line for line in fixture.read_text(encoding="utf-8").splitlines()
                         if line.startswith("gpu_count=")).split("=", 1)[1])
        for gpu in range(count):
            jobs = ["%d\n" % (100000 + gpu * 1000 + job) for job in range(args.jobs_per_gpu)]
            (job_map / str(gpu)).write_text("".join(jobs))
        job_map = str(job_map)
    cdi, judged = (cdi_judge(fixture), []) if args.cdi else (None, None)
    text = scrape("bench", job_map_dir=job_map, cdi=cdi)  # warm: imports, the library's first load
    times = []
    for _run in range(args.runs):
        start = time.perf_counter()
        text = scrape("bench", job_map_dir=job_map, cdi=cdi)
        times.append((time.perf_counter() - start) * 1000)
    if cdi is not None:
        assert "cdi_" not in text, "the spec written for the fixture should be true to it"
        cdi.recheck_s = 0
        for _run in range(args.runs):
            start = time.perf_counter()
            scrape("bench", job_map_dir=job_map, cdi=cdi)
            judged.append((time.perf_counter() - start) * 1000)
    calls = [line for line in text.splitlines() if line.startswith("accelops_gpu_scrape_nvml_calls")]
    times.sort()
    results = {"fixture": args.fixture + (" doubled" if args.double else ""), "runs": args.runs,
               "jobs_per_gpu": args.jobs_per_gpu, "cdi": args.cdi,
               "median_ms": round(statistics.median(times), 2),
               "p90_ms": round(times[int(len(times) * 0.9) - 1], 2), "nvml_calls": int(float(calls[0].split()[-1])),
               "text_bytes": len(text.encode("utf-8")),
               "series": sum(1 for line in text.splitlines() if not line.startswith("#")),
               "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}
    if judged:
        results["judgement_ms"] = round(statistics.median(judged) - statistics.median(times), 2)
    jobs = "-jobs%d" % args.jobs_per_gpu if args.jobs_per_gpu else ""
    name = "exporter%s%s%s.json" % ("-16" if args.double else "", jobs, "-cdi" if args.cdi else "")
    out = ROOT / "build" / "bench" / name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print("exporter scrape on %(fixture)s, %(jobs_per_gpu)d jobs per GPU: median %(median_ms).2f ms, "
          "p90 %(p90_ms).2f ms (%(runs)d runs); "
          "%(nvml_calls)d NVML calls, %(series)d series, %(text_bytes)d bytes; peak RSS %(peak_rss_mib).1f MiB"
          % results)
    if judged:
        print("a CDI judgement made anew adds %(judgement_ms).2f ms to a scrape" % results)
    print("written to %s" % out)


def cdi_judge(fixture):
    """A CdiJudge of the spec that gpu_cdi's code writes for the fixture, in a node tree of the fixture's device nodes
    and driver files (the unit tests' Node) under build/bench/cdi-root."""
    import shutil

    sys.path.insert(0, str(ROOT / "tests" / "unit" / "plugins" / "modules"))
    from test_gpu_cdi import Node, prepare  # the unit tests' node tree

    from ansible_collections.accelops.gpu.plugins.module_utils import _cdi
    from ansible_collections.accelops.gpu.plugins.module_utils._exporter import CdiJudge
    from ansible_collections.accelops.gpu.plugins.module_utils._nvml import NvmlSession

    class Patch:  # Node's monkeypatch, needed only where character devices cannot be made (not root)
        @staticmethod
        def setattr(target, name, value):
            setattr(target, name, value)

    root = ROOT / "build" / "bench" / "cdi-root"
    shutil.rmtree(root, ignore_errors=True)
    node = Node(root, Patch())
    os.makedirs(node.path("/sys/bus/pci/devices"))
    prepare(node, fixture)
    host = _cdi.Host(str(root), None, node.path("/sys"), node.path("/proc"))
    with NvmlSession() as session:
        session.open()
        spec, _owners = _cdi.build_spec(_cdi.read_gpus(session), host, {
            "strategies": ["index", "uuid"], "hooks": list(_cdi.DEFAULT_HOOKS), "hook_path": _cdi.DEFAULT_HOOK_PATH,
            "all_device": True})
    path = node.path("/etc/cdi/nvidia.yaml")
    os.makedirs(os.path.dirname(path))
    with open(path, "wb") as handle:
        handle.write(_cdi.render(spec, path))
    return CdiJudge([path], host)


if __name__ == "__main__":
    main()
