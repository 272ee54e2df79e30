"""Benchmark for apt_mirror's selection (figures go into docs/performance.md; nothing here is a test).

NVIDIA's repository for one distribution carries many thousands of packages: every release of every driver branch,
every CUDA component at every release. The selection reads the whole index and walks the dependencies of what the
nodes install; its cost grows with the index, not with the fleet. This reads a synthetic index shaped like NVIDIA's
(N releases of each of B driver branches with the driver's 18 packages each, C CUDA releases of 60 components each,
cuDNN and NCCL builds) and times, in-process: parsing the index (Index), and selecting a driver branch with its pins,
two toolkits, cuDNN and NCCL (Selection). Downloads and signatures are left out: they cost what the network and gpg
cost.

Usage: python tests/bench/apt_mirror.py [--branches B] [--releases N] [--cuda C] [--runs R]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "sim"))

from simnode import expose_collection  # noqa: E402

expose_collection()

from ansible_collections.accelops.gpu.plugins.module_utils import _apt_mirror as mirror  # noqa: E402

DRIVER = ["libnvidia-ml1", "libcuda1", "libnvidia-ptxjitcompiler1", "libnvidia-cfg1", "libnvidia-glcore",
          "libglx-nvidia0", "nvidia-smi", "nvidia-persistenced", "nvidia-modprobe", "nvidia-kernel-support",
          "firmware-nvidia-gsp", "nvidia-kernel-dkms", "nvidia-kernel-open-dkms", "nvidia-driver-libs", "nvidia-driver",
          "nvidia-driver-cuda", "nvidia-settings", "nvidia-xconfig"]


def paragraph(name, version, depends=()):
    lines = ["Package: %s" % name, "Version: %s" % version, "Architecture: amd64"]
    if depends:
        lines.append("Depends: %s" % ", ".join(depends))
    lines += ["Filename: ./%s_%s_amd64.deb" % (name, version), "Size: 1000", "SHA256: %s" % ("ab" * 32),
              "Description: %s" % name]
    return "\n".join(lines)


def synthetic_index(branches, releases, cudas):
    out = []
    for branch in range(550, 550 + 10 * branches, 10):
        out.append(paragraph("nvidia-driver-pinning-%d" % branch, "%d-1" % branch))
        for release in range(releases):
            version = "%d.%d.%02d-1" % (branch, 40 + release, release)
            for name in DRIVER:
                out.append(paragraph(name, version, ["%s (= %s)" % (DRIVER[0], version)] if name != DRIVER[0] else []))
            out.append(paragraph("cuda-drivers-%d" % branch, version, ["nvidia-driver (>= %d.0)" % branch, "dkms"]))
            out.append(paragraph("nvidia-fabricmanager-%d" % branch, version))
    for minor in range(cudas):
        cuda = "12-%d" % minor
        version = "12.%d.%d-1" % (minor, 100 + minor)
        components = ["cuda-component%02d-%s" % (n, cuda) for n in range(60)]
        for component in components:
            out.append(paragraph(component, version, ["cuda-toolkit-config-common"]))
        out.append(paragraph("cuda-toolkit-%s" % cuda, version, ["%s (>= %s)" % (c, version) for c in components]))
        out.append(paragraph("libnccl2", "2.%d.1-1+cuda12.%d" % (20 + minor, minor)))
        out.append(paragraph("libcudnn9-cuda-12", "9.%d.0.1-1" % minor))
        out.append(paragraph("cudnn9-cuda-12", "9.%d.0.1-1" % minor, ["libcudnn9-cuda-12 (= 9.%d.0.1-1)" % minor]))
    out.append(paragraph("cuda-toolkit-config-common", "12.8.90-1"))
    return "\n\n".join(out) + "\n"


def median_ms(function, runs):
    times = []
    for _run in range(runs):
        started = time.perf_counter()
        result = function()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--branches", type=int, default=6)
    parser.add_argument("--releases", type=int, default=12)
    parser.add_argument("--cuda", type=int, default=9)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    text = synthetic_index(args.branches, args.releases, args.cuda)
    parse_ms, index = median_ms(lambda: mirror.Index(text), args.runs)
    pins = [(("cuda-drivers*", "nvidia-*", "libnvidia-*", "libcuda*", "libglx-nvidia*", "firmware-nvidia-*"), "560.*")]

    def select():
        selection = mirror.Selection(index, pins, exempt=["nvidia-driver-pinning-560"])
        for name, version in (("nvidia-driver-pinning-560", ""), ("cuda-drivers-560", ""), ("nvidia-driver", ""),
                              ("nvidia-fabricmanager-560", ""), ("cuda-toolkit-12-4", ""), ("cuda-toolkit-12-8", ""),
                              ("cudnn9-cuda-12", ""), ("libnccl2", "*+cuda12.8")):
            selection.request(name, version)
        return selection

    select_ms, selection = median_ms(select, args.runs)
    packages = sum(len(stanzas) for stanzas in index.by_name.values())
    print("index: %d packages, %.1f MiB; parse %.0f ms; selection of %d packages (%d outside) %.0f ms (median of %d)"
          % (packages, len(text) / 2**20, parse_ms, len(selection.chosen), len(selection.outside), select_ms,
             args.runs))


if __name__ == "__main__":
    main()
