# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: gathers ansible_facts.nvidia through one NVML session."""

from __future__ import annotations

import os
import re

from ansible_collections.accelops.gpu.plugins.module_utils import _health, _pci
from ansible_collections.accelops.gpu.plugins.module_utils._numbers import normalise_bus_id, ranges
from ansible_collections.accelops.gpu.plugins.module_utils._nvml import (
    NVML_ERROR_INVALID_ARGUMENT,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH,
    GpuLost,
    NvmlCallError,
)
from ansible_collections.accelops.gpu.plugins.module_utils._sysfs import read_attribute

SUBSETS = ("basic", "state", "memory", "thermal", "power", "utilization", "ecc", "clocks", "pcie", "nvlink", "mig",
           "processes", "topology", "pci", "health")
# What the health judgement reads; asking for health gathers these too.
HEALTH_NEEDS = ("state", "ecc", "thermal", "clocks", "nvlink", "pcie", "pci")

ARCHITECTURES = {2: "kepler", 3: "maxwell", 4: "pascal", 5: "volta", 6: "turing", 7: "ampere", 8: "ada", 9: "hopper",
                 10: "blackwell", 13: "rubin"}
COMPUTE_MODES = {0: "default", 1: "exclusive_thread", 2: "prohibited", 3: "exclusive_process"}
NVLINK_REMOTE_TYPES = {0: "gpu", 1: "ibmnpu", 2: "switch"}
# nvidia-smi topo -m labels for NVML's common-ancestor levels.
TOPOLOGY_LABELS = {0: "PIX", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
CLOCK_EVENT_REASONS = (
    (0x1, "gpu_idle"), (0x2, "applications_clocks_setting"), (0x4, "sw_power_cap"), (0x8, "hw_slowdown"),
    (0x10, "sync_boost"), (0x20, "sw_thermal_slowdown"), (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"), (0x100, "display_clock_setting"),
)
NVML_TEMPERATURE_GPU = 0
NVML_TEMPERATURE_THRESHOLD_SHUTDOWN = 0
NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1
NVML_CLOCK_GRAPHICS, NVML_CLOCK_SM, NVML_CLOCK_MEM = 0, 1, 2
NVML_NVLINK_MAX_LINKS = 36
# nvmlDeviceGetCpuAffinity's cpuSetSize: 64 words of 64 bits (pynvml passes unsigned long long words), 4096 CPUs.
CPU_SET_WORDS = 64
CPU_SET_WORD_BITS = 64
MIB = 1 << 20
MIG_PROFILE = re.compile(r"MIG (\S+)\s*$")


def check_subsets(requested):
    """One message for the ``gather_subset`` entries that are not ``all``, a subset, or ``!`` and a subset; None when
    all are."""
    bad = [item for item in requested if not isinstance(item, str) or not (
        item == "all" or item in SUBSETS or (item.startswith("!") and item[1:] in SUBSETS))]
    if bad:
        return ("gather_subset: %s not allowed; give all or a subset name, each subset optionally prefixed with one "
                "'!' to leave it out (%s)" % (", ".join(repr(b) for b in bad), ", ".join(SUBSETS)))
    return None


def resolve_subsets(requested):
    """Expand ``gather_subset`` (``all``, names, ``!name`` exclusions) into a set; ``basic`` is always in."""
    wanted = set()
    excluded = set()
    for item in requested or ["all"]:
        if item == "all":
            wanted.update(SUBSETS)
        elif item.startswith("!"):
            excluded.add(item[1:])
        else:
            wanted.add(item)
    if not wanted:
        wanted.update(SUBSETS)
    wanted -= excluded
    if "health" in wanted:
        wanted.update(HEALTH_NEEDS)
    wanted.add("basic")
    return wanted


def cuda_version_string(value):
    """NVML's CUDA driver version integer (12040) as ``major.minor`` ("12.4")."""
    if not value:
        return None
    return "%d.%d" % (value // 1000, (value % 1000) // 10)


def clock_event_reason_names(mask):
    if mask is None:
        return None
    return [name for bit, name in CLOCK_EVENT_REASONS if mask & bit]


def cpu_list(words, word_bits=CPU_SET_WORD_BITS):
    """An NVML CPU set (bit k of word w is CPU w*word_bits+k) as a Linux cpulist; None when it names no CPU."""
    return ranges(index * word_bits + bit for index, word in enumerate(words or ()) for bit in range(word_bits)
                  if int(word) >> bit & 1) or None


def mib(value):
    return None if value is None else int(value // MIB)


def watts(milliwatts):
    return None if milliwatts is None else round(milliwatts / 1000.0, 2)


def text(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def nvlink_counts(gpus):
    """Links between each pair of GPUs: direct links by remote bus id, plus links through a shared NVSwitch fabric."""
    by_bus = {gpu.get("pci_bus_id"): gpu["index"] for gpu in gpus if gpu.get("pci_bus_id")}
    direct = {}
    switched = {}
    for gpu in gpus:
        for link in gpu.get("nvlinks") or []:
            if not link.get("active"):
                continue
            if link.get("remote_type") == "switch":
                switched[gpu["index"]] = switched.get(gpu["index"], 0) + 1
            peer = by_bus.get(link.get("remote_pci_bus_id"))
            if link.get("remote_type") == "gpu" and peer is not None:
                key = (gpu["index"], peer)
                direct[key] = direct.get(key, 0) + 1
    counts = {}
    for a in gpus:
        for b in gpus:
            i, j = a["index"], b["index"]
            if i == j:
                continue
            n = direct.get((i, j), 0)
            if i in switched and j in switched:
                n += min(switched[i], switched[j])
            counts[(i, j)] = n
    return counts


def topology_matrix(gpus, pci_levels):
    """Rows of nvidia-smi ``topo -m`` labels; ``pci_levels[(i, j)]`` is NVML's common-ancestor level or None."""
    links = nvlink_counts(gpus)
    rows = []
    for a in gpus:
        row = []
        for b in gpus:
            i, j = a["index"], b["index"]
            if i == j:
                row.append("X")
            elif links.get((i, j)):
                row.append("NV%d" % links[(i, j)])
            else:
                row.append(TOPOLOGY_LABELS.get(pci_levels.get((i, j))))
        rows.append(row)
    return rows


SUBSET_FIELDS = {
    "basic": ("name", "uuid", "serial", "pci_bus_id", "architecture", "compute_capability", "vbios_version",
              "board_part_number", "minor_number"),
    "state": ("persistence_mode", "compute_mode"),
    "memory": ("memory_total_mib", "memory_used_mib", "memory_free_mib"),
    "thermal": ("temperature_c", "temperature_slowdown_c", "temperature_shutdown_c", "fan_speed_pct"),
    "power": ("power_draw_w", "power_limit_w", "power_limit_enforced_w", "power_limit_default_w",
              "power_limit_min_w", "power_limit_max_w", "energy_mj"),
    "utilization": ("utilization_gpu_pct", "utilization_memory_pct"),
    "ecc": ("ecc_enabled", "ecc_pending", "ecc_errors", "remapped_rows", "retired_pages_pending"),
    "clocks": ("clocks_mhz", "clocks_event_reasons"),
    "pcie": ("pcie",),
    "nvlink": ("nvlinks",),
    "mig": ("mig_mode", "mig_mode_pending", "mig_devices"),
    "processes": ("processes",),
    "topology": ("cpu_affinity",),
}


# /proc/driver/nvidia/version: "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 ..." (or "Open
# Kernel Module for x86_64").
_PROC_VERSION = re.compile(r"Kernel Module(?: for \S+)?\s+([0-9]+\.[0-9]+(?:\.[0-9]+)?)(?![\w.])")
_LIBRARY_FILE = re.compile(r"libnvidia-ml\.so\.([0-9]+\.[0-9]+(?:\.[0-9]+)?)$")


def loaded_module_release(sysfs_root="/sys", proc_version="/proc/driver/nvidia/version"):
    """The release of the loaded nvidia kernel module: <sysfs_root>/module/nvidia/version, else the NVRM line of
    /proc/driver/nvidia/version; None when neither says."""
    release = read_attribute("%s/module/nvidia/version" % sysfs_root.rstrip("/"))
    if release and re.match(r"^[0-9]+\.[0-9]+(\.[0-9]+)?$", release):
        return release
    found = _PROC_VERSION.search(read_attribute(proc_version) or "")
    return found.group(1) if found else None


def library_release(maps="/proc/self/maps"):
    """The release of the NVML library this process loaded: the name of the file libnvidia-ml.so.1 leads to
    (libnvidia-ml.so.550.127.08, as the driver packages install it); None when it names none."""
    try:
        with open(maps, encoding="utf-8", errors="replace") as handle:
            paths = {line.split(None, 5)[-1].strip() for line in handle if "libnvidia-ml.so" in line}
    except OSError:
        return None
    for path in sorted(paths):
        found = _LIBRARY_FILE.search(os.path.realpath(path))
        if found:
            return found.group(1)
    return None


class GpuFactsCollector:
    """Reads everything ``gather_subset`` asks for through an open :class:`NvmlSession`."""

    def __init__(self, session, subsets, sysfs_root="/sys"):
        self.nvml = session
        self.subsets = subsets
        self.sysfs_root = sysfs_root

    def collect(self):
        facts = {
            "pynvml_available": self.nvml.lib is not None, "nvml_available": False, "driver_loaded": False,
            "reason": None, "driver_version": None,
            "cuda_driver_version": None, "nvml_version": None, "gpu_count": 0, "gpus": [], "topology": None,
            "errors": [],
            "pci_devices": None, "health": None,
        }
        if "pci" in self.subsets:
            # An unreadable bus is not an empty one: pci_devices stays null and errors say why.
            try:
                facts["pci_devices"] = _pci.scan(self.sysfs_root, strict=True)
            except OSError as exc:
                facts["errors"].append("%s %s cannot be listed: %s" % (
                    _health.PCI_UNREADABLE, self.sysfs_root, exc.strerror or exc))
        available, loaded, reason = self.nvml.open()
        facts.update(nvml_available=available, driver_loaded=loaded, reason=reason, driver_mismatch=None)
        if self.nvml.init_error == NVML_ERROR_LIB_RM_VERSION_MISMATCH:
            facts["driver_mismatch"] = mismatch = {"loaded": loaded_module_release(self.sysfs_root),
                                                   "library": library_release()}
            facts["reason"] = "%s: the loaded kernel module is %s, the installed library %s; reboot to load it" % (
                reason, mismatch["loaded"] or "of unknown release", mismatch["library"] or "of unknown release")
        if loaded:
            self._system(facts)
        if "health" in self.subsets:
            facts["health"] = _health.assess_node(facts)
        return facts

    def _system(self, facts):
        def system(function):
            """A system-wide value; NVML answering "GPU lost" to a question about no GPU is kept as an error."""
            try:
                return self.nvml.query(function)
            except GpuLost:
                self.nvml.errors.append("%s: GPU is lost (NVML error 15)" % function)
                return None

        facts["driver_version"] = text(system("nvmlSystemGetDriverVersion"))
        facts["nvml_version"] = text(system("nvmlSystemGetNVMLVersion"))
        facts["cuda_driver_version"] = cuda_version_string(system("nvmlSystemGetCudaDriverVersion"))
        try:
            count = self.nvml.call("nvmlDeviceGetCount")
        except NvmlCallError as exc:
            count = None
            self.nvml.errors.append(str(exc))
        except GpuLost:
            count = None
            self.nvml.errors.append("nvmlDeviceGetCount: GPU is lost (NVML error 15)")
        facts["errors"].extend(self.nvml.errors)
        if count is None:  # never zero GPUs: the count is unknown
            facts["gpu_count"] = None
            why = facts["errors"][-1] if facts["errors"] else "nvmlDeviceGetCount gave no answer"
            facts["reason"] = "NVML cannot count the GPUs: %s" % why
            return
        handles = []
        for index in range(count):
            gpu, handle = self._gpu(index)
            facts["gpus"].append(gpu)
            handles.append(handle)
        facts["gpu_count"] = count
        if "topology" in self.subsets:
            seen = len(self.nvml.errors)
            facts["topology"] = topology_matrix(facts["gpus"], self._pci_levels(facts["gpus"], handles))
            facts["errors"].extend(self.nvml.errors[seen:])

    def _gpu(self, index):
        gpu = {"index": index, "lost": False, "errors": []}
        seen = len(self.nvml.errors)
        for subset, fields in SUBSET_FIELDS.items():
            if subset in self.subsets:
                gpu.update(dict.fromkeys(fields))
        handle = None
        try:
            handle = self.nvml.call("nvmlDeviceGetHandleByIndex", index)
            for subset in SUBSET_FIELDS:
                if subset in self.subsets:
                    getattr(self, "_" + subset)(handle, gpu)
        except GpuLost:
            gpu["lost"] = True
            handle = None
        except NvmlCallError as exc:
            gpu["error"] = str(exc)
        gpu["errors"] = self.nvml.errors[seen:]
        return gpu, handle

    def _basic(self, h, gpu):
        q = self.nvml.query
        gpu["name"] = text(q("nvmlDeviceGetName", h))
        gpu["uuid"] = text(q("nvmlDeviceGetUUID", h))
        pci = q("nvmlDeviceGetPciInfo", h)
        gpu["pci_bus_id"] = normalise_bus_id(text(pci.busId)) if pci is not None else None
        gpu["architecture"] = ARCHITECTURES.get(q("nvmlDeviceGetArchitecture", h))
        cc = q("nvmlDeviceGetCudaComputeCapability", h)
        gpu["compute_capability"] = "%d.%d" % tuple(cc) if cc else None
        gpu["serial"] = text(q("nvmlDeviceGetSerial", h))
        gpu["vbios_version"] = text(q("nvmlDeviceGetVbiosVersion", h))
        gpu["board_part_number"] = text(q("nvmlDeviceGetBoardPartNumber", h))
        gpu["minor_number"] = q("nvmlDeviceGetMinorNumber", h)

    def _state(self, h, gpu):
        persistence = self.nvml.query("nvmlDeviceGetPersistenceMode", h)
        gpu["persistence_mode"] = None if persistence is None else bool(persistence)
        gpu["compute_mode"] = COMPUTE_MODES.get(self.nvml.query("nvmlDeviceGetComputeMode", h))

    def _memory(self, h, gpu):
        info = self.nvml.query("nvmlDeviceGetMemoryInfo", h)
        if info is not None:
            gpu.update(memory_total_mib=mib(info.total), memory_used_mib=mib(info.used), memory_free_mib=mib(info.free))

    def _thermal(self, h, gpu):
        q = self.nvml.query
        gpu["temperature_c"] = q("nvmlDeviceGetTemperature", h, NVML_TEMPERATURE_GPU)
        gpu["temperature_slowdown_c"] = q("nvmlDeviceGetTemperatureThreshold", h, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN)
        gpu["temperature_shutdown_c"] = q("nvmlDeviceGetTemperatureThreshold", h, NVML_TEMPERATURE_THRESHOLD_SHUTDOWN)
        if q("nvmlDeviceGetNumFans", h):
            gpu["fan_speed_pct"] = q("nvmlDeviceGetFanSpeed", h)

    def _power(self, h, gpu):
        q = self.nvml.query
        gpu["power_draw_w"] = watts(q("nvmlDeviceGetPowerUsage", h))
        gpu["energy_mj"] = q("nvmlDeviceGetTotalEnergyConsumption", h)
        gpu["power_limit_w"] = watts(q("nvmlDeviceGetPowerManagementLimit", h))
        gpu["power_limit_enforced_w"] = watts(q("nvmlDeviceGetEnforcedPowerLimit", h))
        gpu["power_limit_default_w"] = watts(q("nvmlDeviceGetPowerManagementDefaultLimit", h))
        limits = q("nvmlDeviceGetPowerManagementLimitConstraints", h)
        if limits:
            gpu["power_limit_min_w"], gpu["power_limit_max_w"] = watts(limits[0]), watts(limits[1])

    def _utilization(self, h, gpu):
        rates = self.nvml.query("nvmlDeviceGetUtilizationRates", h)
        if rates is not None:
            gpu["utilization_gpu_pct"], gpu["utilization_memory_pct"] = rates.gpu, rates.memory

    def _ecc(self, h, gpu):
        q = self.nvml.query
        modes = q("nvmlDeviceGetEccMode", h)
        if modes:
            gpu["ecc_enabled"], gpu["ecc_pending"] = bool(modes[0]), bool(modes[1])
        if gpu["ecc_enabled"]:
            gpu["ecc_errors"] = {
                counter: {kind: q("nvmlDeviceGetTotalEccErrors", h, error_type, counter_type)
                          for kind, error_type in (("corrected", 0), ("uncorrected", 1))}
                for counter, counter_type in (("volatile", 0), ("aggregate", 1))
            }
        rows = q("nvmlDeviceGetRemappedRows", h)
        if rows is not None:
            gpu["remapped_rows"] = {"correctable": rows[0], "uncorrectable": rows[1], "pending": bool(rows[2]),
                                    "failure": bool(rows[3])}
        pending = q("nvmlDeviceGetRetiredPagesPendingStatus", h)
        gpu["retired_pages_pending"] = None if pending is None else bool(pending)

    def _clocks(self, h, gpu):
        q = self.nvml.query
        reasons = q("nvmlDeviceGetCurrentClocksEventReasons", h)
        if reasons is None:  # the name before R535
            reasons = q("nvmlDeviceGetCurrentClocksThrottleReasons", h)
        gpu["clocks_event_reasons"] = clock_event_reason_names(reasons)
        gpu["clocks_mhz"] = {
            "graphics": q("nvmlDeviceGetClockInfo", h, NVML_CLOCK_GRAPHICS),
            "sm": q("nvmlDeviceGetClockInfo", h, NVML_CLOCK_SM),
            "memory": q("nvmlDeviceGetClockInfo", h, NVML_CLOCK_MEM),
            "max_graphics": q("nvmlDeviceGetMaxClockInfo", h, NVML_CLOCK_GRAPHICS),
            "max_memory": q("nvmlDeviceGetMaxClockInfo", h, NVML_CLOCK_MEM),
        }

    def _pcie(self, h, gpu):
        q = self.nvml.query
        pcie = {
            "gen_current": q("nvmlDeviceGetCurrPcieLinkGeneration", h),
            "gen_max": q("nvmlDeviceGetMaxPcieLinkGeneration", h),
            "width_current": q("nvmlDeviceGetCurrPcieLinkWidth", h),
            "width_max": q("nvmlDeviceGetMaxPcieLinkWidth", h),
        }
        gpu["pcie"] = pcie if any(v is not None for v in pcie.values()) else None

    def _nvlink(self, h, gpu):
        links = []
        seen = len(self.nvml.errors)
        for link in range(NVML_NVLINK_MAX_LINKS):
            try:
                state = self.nvml.call("nvmlDeviceGetNvLinkState", h, link)
            except NvmlCallError as exc:
                if exc.code == NVML_ERROR_INVALID_ARGUMENT:
                    break  # past the last link of this GPU
                # Any other answer is a link whose state NVML could not give: an error of this GPU, never a shorter
                # list of healthy links.
                self.nvml.errors.append(str(exc))
                continue
            if state is None:
                break  # "not supported": no (further) NVLink on this GPU, as Slurm's NVML plugin also reads it
            remote = self.nvml.query("nvmlDeviceGetNvLinkRemotePciInfo", h, link) if state else None
            remote_type = self.nvml.query("nvmlDeviceGetNvLinkRemoteDeviceType", h, link) if state else None
            links.append({
                "index": link,
                "active": bool(state),
                "remote_pci_bus_id": normalise_bus_id(text(remote.busId)) if remote is not None else None,
                "remote_type": NVLINK_REMOTE_TYPES.get(remote_type),
            })
        # One error per distinct answer, not one per link (up to NVML_NVLINK_MAX_LINKS of each).
        self.nvml.errors[seen:] = list(dict.fromkeys(self.nvml.errors[seen:]))
        gpu["nvlinks"] = links or None

    def _mig(self, h, gpu):
        q = self.nvml.query
        modes = q("nvmlDeviceGetMigMode", h)
        if modes is None:
            return
        gpu["mig_mode"], gpu["mig_mode_pending"] = bool(modes[0]), bool(modes[1])
        devices = []
        if gpu["mig_mode"]:
            for slot in range(q("nvmlDeviceGetMaxMigDeviceCount", h) or 0):
                mig = q("nvmlDeviceGetMigDeviceHandleByIndex", h, slot)
                if mig is None:
                    continue
                name = text(q("nvmlDeviceGetName", mig))
                profile = MIG_PROFILE.search(name or "")
                memory = q("nvmlDeviceGetMemoryInfo", mig)
                devices.append({
                    "index": slot,
                    "uuid": text(q("nvmlDeviceGetUUID", mig)),
                    "name": name,
                    "profile": profile.group(1) if profile else None,
                    "gpu_instance_id": q("nvmlDeviceGetGpuInstanceId", mig),
                    "compute_instance_id": q("nvmlDeviceGetComputeInstanceId", mig),
                    "memory_total_mib": mib(memory.total) if memory is not None else None,
                    "memory_used_mib": mib(memory.used) if memory is not None else None,
                })
        gpu["mig_devices"] = devices

    def _processes(self, h, gpu):
        # The _v3 entry point came with R510; older drivers answer the _v2 one (same record layout).
        procs = self.nvml.query("nvmlDeviceGetComputeRunningProcesses_v3", h)
        if procs is None:
            procs = self.nvml.query("nvmlDeviceGetComputeRunningProcesses_v2", h)
        if procs is None:
            return
        gpu["processes"] = [{
            "pid": proc.pid,
            "name": text(self.nvml.query("nvmlSystemGetProcessName", proc.pid)),
            "used_memory_mib": mib(proc.usedGpuMemory),
        } for proc in procs]

    def _topology(self, h, gpu):
        gpu["cpu_affinity"] = cpu_list(self.nvml.query("nvmlDeviceGetCpuAffinity", h, CPU_SET_WORDS))

    def _pci_levels(self, gpus, handles):
        levels = {}
        for a, ha in zip(gpus, handles):
            for b, hb in zip(gpus, handles):
                if a["index"] < b["index"] and ha is not None and hb is not None:
                    try:
                        level = self.nvml.query("nvmlDeviceGetTopologyCommonAncestor", ha, hb)
                    except GpuLost:
                        level = None
                        self.nvml.errors.append("nvmlDeviceGetTopologyCommonAncestor: GPU %d or %d is lost (NVML "
                                                "error 15)" % (a["index"], b["index"]))
                    levels[(a["index"], b["index"])] = levels[(b["index"], a["index"])] = level
        return levels
