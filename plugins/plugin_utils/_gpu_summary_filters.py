# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gpu_summary, topology_table and gpu_processes filters; each documented in its own <name>.yml."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.accelops.gpu.plugins.plugin_utils._filters import malformed_input

FACTS = "ansible_facts.nvidia as gpu_facts sets it"

SEVERITY_RANK = {"ok": 0, "warning": 1, "critical": 2}


def _value(value, fmt, unit=""):
    return "n/a" if value is None else (fmt % value) + unit


def _gpu_health(facts, index):
    findings = [f for f in ((facts.get("health") or {}).get("findings") or []) if f.get("gpu") == index]
    if not findings:
        return "ok"
    worst = max(findings, key=lambda f: SEVERITY_RANK.get(f.get("severity"), 0))
    return "%s (%s)" % (worst["severity"], ", ".join(sorted({f["code"] for f in findings})))


@malformed_input("gpu_summary", FACTS)
def gpu_summary(facts):
    if not isinstance(facts, dict):
        raise AnsibleFilterError("gpu_summary expects ansible_facts.nvidia (a dict), got %s" % type(facts).__name__)
    if not facts.get("driver_loaded"):
        devices = [d for d in facts.get("pci_devices") or [] if d.get("kind") == "gpu"]
        return ["no usable NVIDIA driver: %s; %d NVIDIA GPU(s) on the PCI bus" % (facts.get("reason"), len(devices))]
    header = (facts.get("driver_version"), facts.get("cuda_driver_version"), facts.get("gpu_count", 0))
    lines = ["driver %s, CUDA %s, %d GPU(s)" % header]
    for gpu in facts.get("gpus") or []:
        if gpu.get("lost"):
            lines.append("GPU %s  LOST  health: %s" % (gpu["index"], _gpu_health(facts, gpu["index"])))
            continue
        links = gpu.get("nvlinks")
        nvlink = "none" if not links else "%d/%d up" % (sum(1 for x in links if x.get("active")), len(links))
        lines.append("GPU %s  %s  %s  %s  %s / %s  NVLink %s  health: %s" % (
            gpu["index"], gpu.get("name") or "unknown",
            _value(gpu.get("memory_total_mib"), "%d", " MiB"),
            _value(gpu.get("temperature_c"), "%d", " C"),
            _value(gpu.get("power_draw_w"), "%.0f", " W"),
            _value(gpu.get("power_limit_w"), "%.0f", " W"),
            nvlink, _gpu_health(facts, gpu["index"])))
    return lines


@malformed_input("topology_table", FACTS)
def topology_table(facts):
    """The topology matrix as aligned text rows, like ``nvidia-smi topo -m``."""
    if not isinstance(facts, dict):
        raise AnsibleFilterError("topology_table expects ansible_facts.nvidia (a dict), got %s" % type(facts).__name__)
    matrix = facts.get("topology") or []
    if not matrix:
        return []
    if not isinstance(matrix, list) or not all(isinstance(row, list) and all(isinstance(c, (str, type(None)))
                                                                             for c in row) for row in matrix):
        raise AnsibleFilterError("topology_table: topology must be a matrix (a list of lists of labels), got %s"
                                 % type(matrix).__name__)
    names = ["GPU%d" % gpu["index"] for gpu in facts.get("gpus") or []]
    width = max(len(cell or "?") for row in matrix for cell in row + names) + 2
    lines = [" " * 6 + "".join(n.ljust(width) for n in names)]
    for name, row in zip(names, matrix):
        lines.append(name.ljust(6) + "".join((cell or "?").ljust(width) for cell in row))
    return [line.rstrip() for line in lines]


_PROCESS_READERS = ("nvmlDeviceGetComputeRunningProcesses", "nvmlSystemGetProcessName")


@malformed_input("gpu_processes", FACTS)
def gpu_processes(facts, unreadable=False):
    """The compute processes on the GPUs, one line each ("GPU 3 pid 4242 (train.py)"). With unreadable, also one line
    for each GPU whose processes could not be read (lost, an NVML error, or listing not supported), and for GPUs that
    NVML did not count or list: an empty list then means that no compute process runs."""
    gpus = facts.get("gpus") if isinstance(facts, dict) else None
    if not isinstance(gpus, list) or not all(isinstance(gpu, dict) for gpu in gpus):
        raise AnsibleFilterError("gpu_processes expects ansible_facts.nvidia (a dict with gpus, a list of dicts), "
                                 "got %s" % type(facts).__name__)
    lines = []
    for gpu in gpus:
        for entry in gpu.get("processes") or []:
            proc = entry if isinstance(entry, dict) else {}
            lines.append("GPU %s pid %s (%s)" % (gpu.get("index"), proc.get("pid"), proc.get("name") or "unknown"))
        if unreadable and not isinstance(gpu.get("processes"), list):
            errors = [e for e in gpu.get("errors") or [] if str(e).startswith(_PROCESS_READERS)]
            why = ("lost" if gpu.get("lost") else gpu.get("error") or (errors[0] if errors else
                   "NVML does not list them on this GPU"))
            lines.append("GPU %s: its processes cannot be read (%s)" % (gpu.get("index"), why))
    if unreadable:
        if not facts.get("driver_loaded", True):
            lines.append("no GPU can be read: %s" % (facts.get("reason") or "the driver is not loaded"))
        elif facts.get("gpu_count") != len(gpus):
            lines.append("NVML counts %s GPU(s) but %d could be listed" % (facts.get("gpu_count"), len(gpus)))
    return lines


class FilterModule:
    def filters(self):
        return {"gpu_summary": gpu_summary, "topology_table": topology_table, "gpu_processes": gpu_processes}
