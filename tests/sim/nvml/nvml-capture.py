"""Write a fake-NVML fixture (tests/sim/nvml/fixtures/*.conf) from what NVML reports on this machine.

Run it on a node with a real NVIDIA GPU and driver, with nvidia-ml-py importable:

    python3 tests/sim/nvml/nvml-capture.py --name "one H200, driver 580" > tests/sim/nvml/fixtures/h200.conf

It asks NVML, through the same pynvml calls the collection's modules make, for everything the fake
libnvidia-ml.so.1 reads, and writes it in the fixture's key=value format, one key per GPU (no gpu.* defaults). A
query NVML does not support leaves its key out (the fake then answers NOT_SUPPORTED, as the real library did); any
other error is left out too and named in a comment. The CPUs of each NUMA node come from the machine's sysfs
(/sys/devices/system/node/node<n>/cpulist); a GPU whose CPU affinity in NVML is not its NUMA node's CPUs (no node
known, or a different set) gets its own gpu.N.cpu_affinity. Not captured: MIG instances and the MIG profile table
(the fake has its own tables, gpu.N.mig.profiles) and the processes' MIG placement. The same script run against the
fake library writes a fixture that gives the same facts as the one it read (tests/sim/nvml/test_nvml_capture.py).
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import sys

NVLINK_MAX_LINKS = 18
MIB = 1024 * 1024
NODE_ROOT = "/sys/devices/system/node"
CPU_SET_WORDS = 512  # what slurmd passes nvmlDeviceGetCpuAffinity: CPUs 0-32767
WORD_BITS = 64  # bits in each word of an NVML cpuSet (an unsigned long on 64-bit Linux)


class Capture:
    def __init__(self, pynvml):
        self.nvml = pynvml
        self.lines, self.notes = [], []
        self.node_cpus = {}  # NUMA node -> set of CPUs, from sysfs

    def put(self, key, value):
        self.lines.append("%s=%s" % (key, value))

    def ask(self, key, call, *args, convert=lambda value: value):
        """NVML's answer, or None (the key left out); NOT_SUPPORTED silently, other errors noted."""
        try:
            return convert(getattr(self.nvml, call)(*args))
        except self.nvml.NVMLError as error:
            if not isinstance(error, (self.nvml.NVMLError_NotSupported, self.nvml.NVMLError_FunctionNotFound)):
                self.notes.append("# %s: %s failed: %s" % (key, call, error))
            return None

    def field(self, key, call, *args, convert=lambda value: value):
        value = self.ask(key, call, *args, convert=convert)
        if value is not None:
            self.put(key, value)
        return value

    def fields(self, key, call, *args, parts):
        """One NVML answer written as several keys: parts maps each key to the function that takes it out."""
        answer = self.ask(key, call, *args)
        if answer:
            for name, part in parts.items():
                self.put(name, part(answer))
        return answer


def text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def parse_cpu_list(value):
    """The CPUs of a Linux CPU list ("0-55,112-167"; empty: none) as a set; ValueError if it does not parse."""
    cpus = set()
    for part in value.strip().split(","):
        if part:
            first, dash, last = part.partition("-")
            cpus.update(range(int(first), int(last if dash else first) + 1))
    return cpus


def cpu_list(cpus):
    """A set of CPUs as a Linux CPU list, neighbours joined into ranges: {0, 1, 2, 5} -> "0-2,5"."""
    ranges = []
    for cpu in sorted(cpus):
        if ranges and ranges[-1][1] == cpu - 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ",".join(str(first) if first == last else "%d-%d" % (first, last) for first, last in ranges)


def capture_numa_nodes(cap, root):
    """numa.<n>.cpus for each NUMA node with CPUs (a memory-only node has an empty cpulist); none without NUMA."""
    try:
        names = os.listdir(root)
    except OSError:
        return
    for name in names:
        match = re.fullmatch(r"node(\d+)", name)
        if not match:
            continue
        path = os.path.join(root, name, "cpulist")
        try:
            with open(path) as stream:
                cpus = parse_cpu_list(stream.read())
        except (OSError, ValueError) as error:
            cap.notes.append("# numa.%s.cpus: reading %s failed: %s" % (match.group(1), path, error))
            continue
        if cpus:
            cap.node_cpus[int(match.group(1))] = cpus
    if cap.node_cpus:
        cap.lines.append("")
        cap.lines.append("# CPUs of each NUMA node (%s/node<n>/cpulist)" % root)
        for node, cpus in sorted(cap.node_cpus.items()):
            cap.put("numa.%d.cpus" % node, cpu_list(cpus))


def capture_cpu_affinity(cap, g, handle, node):
    """gpu.N.cpu_affinity where NVML's answer is not what numa.<numa_node>.cpus gives the fake."""
    words = cap.ask(g + "cpu_affinity", "nvmlDeviceGetCpuAffinity", handle, CPU_SET_WORDS)
    if words is None:
        return
    cpus = {index * WORD_BITS + bit for index, word in enumerate(words) if word
            for bit in range(WORD_BITS) if word >> bit & 1}
    if not cpus:  # a fixture cannot list no CPUs: the fake would answer from the NUMA node
        cap.notes.append("# %scpu_affinity: nvmlDeviceGetCpuAffinity answered no CPU" % g)
    elif cpus != cap.node_cpus.get(node):
        cap.put(g + "cpu_affinity", cpu_list(cpus))


def capture_gpu(cap, index, handle):
    nvml, g = cap.nvml, "gpu.%d." % index
    cap.field(g + "name", "nvmlDeviceGetName", handle, convert=text)
    cap.field(g + "uuid", "nvmlDeviceGetUUID", handle, convert=text)
    cap.field(g + "serial", "nvmlDeviceGetSerial", handle, convert=text)
    cap.field(g + "minor_number", "nvmlDeviceGetMinorNumber", handle)
    cap.field(g + "vbios_version", "nvmlDeviceGetVbiosVersion", handle, convert=text)
    cap.field(g + "board_part_number", "nvmlDeviceGetBoardPartNumber", handle, convert=text)
    cap.field(g + "architecture", "nvmlDeviceGetArchitecture", handle)
    cap.fields(g + "cc", "nvmlDeviceGetCudaComputeCapability", handle,
               parts={g + "cc_major": lambda cc: cc[0], g + "cc_minor": lambda cc: cc[1]})
    cap.fields(g + "pci", "nvmlDeviceGetPciInfo_v3", handle,
               parts={g + "pci.bus_id": lambda pci: text(pci.busId),
                      g + "pci.device_id": lambda pci: "0x%08X" % pci.pciDeviceId,
                      g + "pci.subsystem_id": lambda pci: "0x%08X" % pci.pciSubSystemId})
    node = cap.field(g + "numa_node", "nvmlDeviceGetNumaNodeId", handle)
    capture_cpu_affinity(cap, g, handle, node)

    cap.fields(g + "memory", "nvmlDeviceGetMemoryInfo", handle,
               parts={g + "memory.total_mib": lambda memory: memory.total // MIB,
                      g + "memory.used_mib": lambda memory: memory.used // MIB})
    for threshold, name in enumerate(("shutdown_c", "slowdown_c", "mem_max_c", "gpu_max_c")):
        cap.field(g + "temperature." + name, "nvmlDeviceGetTemperatureThreshold", handle, threshold)
    cap.field(g + "temperature_c", "nvmlDeviceGetTemperature", handle, nvml.NVML_TEMPERATURE_GPU)

    cap.field(g + "power.usage_mw", "nvmlDeviceGetPowerUsage", handle)
    cap.field(g + "power.energy_mj", "nvmlDeviceGetTotalEnergyConsumption", handle)
    limit = cap.field(g + "power.limit_mw", "nvmlDeviceGetPowerManagementLimit", handle)
    enforced = cap.ask(g + "power.enforced_mw", "nvmlDeviceGetEnforcedPowerLimit", handle)
    if enforced is not None and enforced != limit:
        cap.put(g + "power.enforced_mw", enforced)
    cap.field(g + "power.default_mw", "nvmlDeviceGetPowerManagementDefaultLimit", handle)
    cap.fields(g + "power.min_mw", "nvmlDeviceGetPowerManagementLimitConstraints", handle,
               parts={g + "power.min_mw": lambda limits: limits[0], g + "power.max_mw": lambda limits: limits[1]})

    cap.fields(g + "utilization", "nvmlDeviceGetUtilizationRates", handle,
               parts={g + "utilization.gpu": lambda rates: rates.gpu,
                      g + "utilization.memory": lambda rates: rates.memory})
    cap.field(g + "persistence_mode", "nvmlDeviceGetPersistenceMode", handle)
    cap.field(g + "compute_mode", "nvmlDeviceGetComputeMode", handle)

    ecc = cap.fields(g + "ecc", "nvmlDeviceGetEccMode", handle,
                     parts={g + "ecc.current": lambda mode: mode[0], g + "ecc.pending": lambda mode: mode[1]})
    if ecc:
        for counter, counter_name in enumerate(("volatile", "aggregate")):
            for error, error_name in enumerate(("corrected", "uncorrected")):
                cap.field("%secc.%s.%s" % (g, counter_name, error_name), "nvmlDeviceGetTotalEccErrors", handle, error,
                          counter)
    cap.fields(g + "remapped", "nvmlDeviceGetRemappedRows", handle,
               parts={g + "remapped." + name: (lambda rows, i=i: int(rows[i]))
                      for i, name in enumerate(("correctable", "uncorrectable", "pending", "failure"))})
    cap.field(g + "retired_pages_pending", "nvmlDeviceGetRetiredPagesPendingStatus", handle)

    reasons = cap.ask(g + "clocks_event_reasons", "nvmlDeviceGetCurrentClocksEventReasons", handle)
    if reasons is None:
        reasons = cap.ask(g + "clocks_event_reasons", "nvmlDeviceGetCurrentClocksThrottleReasons", handle)
    if reasons is not None:
        cap.put(g + "clocks_event_reasons", "0x%016X" % reasons)
    for clock, name in ((nvml.NVML_CLOCK_GRAPHICS, "graphics"), (nvml.NVML_CLOCK_SM, "sm"),
                        (nvml.NVML_CLOCK_MEM, "mem"), (nvml.NVML_CLOCK_VIDEO, "video")):
        cap.field("%sclocks.%s_mhz" % (g, name), "nvmlDeviceGetClockInfo", handle, clock)
        cap.field("%sclocks.max_%s_mhz" % (g, name), "nvmlDeviceGetMaxClockInfo", handle, clock)
    memory_clocks = cap.ask(g + "clocks.supported_mem_mhz", "nvmlDeviceGetSupportedMemoryClocks", handle)
    if memory_clocks:
        cap.put(g + "clocks.supported_mem_mhz", ",".join(str(c) for c in memory_clocks))
        graphics = cap.ask(g + "clocks.supported_graphics_mhz", "nvmlDeviceGetSupportedGraphicsClocks", handle,
                           max(memory_clocks))
        if graphics:
            cap.put(g + "clocks.supported_graphics_mhz", ",".join(str(c) for c in graphics))
    for clock, name in ((nvml.NVML_CLOCK_GRAPHICS, "graphics"), (nvml.NVML_CLOCK_MEM, "mem")):
        default = cap.field("%sclocks.default_applications_%s_mhz" % (g, name),
                            "nvmlDeviceGetDefaultApplicationsClock", handle, clock)
        # the clock now in use only where someone set another one: the fake answers the default without it
        current = cap.ask("%sclocks.applications_%s_mhz" % (g, name), "nvmlDeviceGetApplicationsClock", handle, clock)
        if current is not None and current != default:
            cap.put("%sclocks.applications_%s_mhz" % (g, name), current)

    for name, call in (("gen_current", "nvmlDeviceGetCurrPcieLinkGeneration"),
                       ("gen_max", "nvmlDeviceGetMaxPcieLinkGeneration"),
                       ("width_current", "nvmlDeviceGetCurrPcieLinkWidth"),
                       ("width_max", "nvmlDeviceGetMaxPcieLinkWidth")):
        cap.field(g + "pcie." + name, call, handle)
    fans = cap.field(g + "fan_count", "nvmlDeviceGetNumFans", handle)
    for fan in range(fans or 0):
        cap.field("%sfan.%d.speed_pct" % (g, fan), "nvmlDeviceGetFanSpeed_v2", handle, fan)

    if cap.fields(g + "mig", "nvmlDeviceGetMigMode", handle,
                  parts={g + "mig.current": lambda mode: mode[0], g + "mig.pending": lambda mode: mode[1]}):
        cap.field(g + "mig.max_devices", "nvmlDeviceGetMaxMigDeviceCount", handle)

    capture_nvlinks(cap, g, handle)
    capture_processes(cap, g, handle)


def capture_nvlinks(cap, g, handle):
    nvml, links = cap.nvml, []
    for link in range(NVLINK_MAX_LINKS):
        try:
            links.append((link, nvml.nvmlDeviceGetNvLinkState(handle, link)))
        except nvml.NVMLError:
            break
    if not links:
        return
    cap.put(g + "nvlink.count", len(links))
    names = {0: "gpu", 1: "ibmnpu", 2: "switch"}
    for link, active in links:
        n = "%snvlink.%d." % (g, link)
        cap.put(n + "active", int(active))
        remote = cap.ask(n + "remote_type", "nvmlDeviceGetNvLinkRemoteDeviceType", handle, link)
        if remote is not None:
            cap.put(n + "remote_type", names.get(remote, "unknown"))
        pci = cap.ask(n + "remote_bus_id", "nvmlDeviceGetNvLinkRemotePciInfo", handle, link)
        if pci:
            cap.put(n + "remote_bus_id", text(pci.busId))
            cap.put(n + "remote_device_id", "0x%08X" % pci.pciDeviceId)


def capture_processes(cap, g, handle):
    # The _v3 entry point came with R510; older drivers answer the _v2 one (same record layout).
    processes = cap.ask(g + "process.count", "nvmlDeviceGetComputeRunningProcesses_v3", handle)
    if processes is None:
        processes = cap.ask(g + "process.count", "nvmlDeviceGetComputeRunningProcesses_v2", handle)
    if processes is None:
        return
    cap.put(g + "process.count", len(processes))
    for p, process in enumerate(processes):
        n = "%sprocess.%d." % (g, p)
        cap.put(n + "pid", process.pid)
        name = cap.ask(n + "name", "nvmlSystemGetProcessName", process.pid, convert=text)
        if name is not None:
            cap.put(n + "name", name)
        used = getattr(process, "usedGpuMemory", None)
        if isinstance(used, int):  # None where NVML cannot tell
            cap.put(n + "used_mib", used // MIB)


def capture(pynvml, name="", now=None, node_root=NODE_ROOT):
    """The fixture text for what NVML reports now; the NUMA nodes' CPUs from node_root (sysfs)."""
    cap = Capture(pynvml)
    pynvml.nvmlInit()
    try:
        cap.field("driver_version", "nvmlSystemGetDriverVersion", convert=text)
        cap.field("nvml_version", "nvmlSystemGetNVMLVersion", convert=text)
        cap.field("cuda_driver_version", "nvmlSystemGetCudaDriverVersion")
        count = pynvml.nvmlDeviceGetCount()
        cap.put("gpu_count", count)
        capture_numa_nodes(cap, node_root)
        handles = []
        for index in range(count):
            try:
                handles.append(pynvml.nvmlDeviceGetHandleByIndex(index))
            except pynvml.NVMLError as error:
                cap.notes.append("# gpu %d: no handle: %s" % (index, error))
                handles.append(None)
        for index, handle in enumerate(handles):
            cap.lines.append("")
            cap.lines.append("# GPU %d" % index)
            try:
                if handle is None:
                    raise pynvml.NVMLError_GpuIsLost(pynvml.NVML_ERROR_GPU_IS_LOST)
                pynvml.nvmlDeviceGetName(handle)
            except pynvml.NVMLError_GpuIsLost:
                cap.put("gpu.%d.lost" % index, 1)
                continue
            capture_gpu(cap, index, handle)
        levels = {}
        for i in range(count):
            for j in range(i + 1, count):
                if handles[i] is not None and handles[j] is not None:
                    level = cap.ask("topology.%d.%d" % (i, j), "nvmlDeviceGetTopologyCommonAncestor", handles[i],
                                    handles[j])
                    if level is not None:
                        levels[(i, j)] = level
        if levels:
            cap.lines.append("")
            cap.lines.append("# Common ancestor of each pair of GPUs (nvmlGpuTopologyLevel_t)")
            for (i, j), level in sorted(levels.items()):
                cap.put("topology.%d.%d" % (i, j), level)
    finally:
        pynvml.nvmlShutdown()
    when = (now or datetime.datetime.now(datetime.timezone.utc)).strftime("%Y-%m-%d")
    head = ["# Captured from NVML by tests/sim/nvml/nvml-capture.py on %s%s." % (when, ": " + name if name else ""),
            "# Keys NVML did not support are left out."]
    return "\n".join(head + cap.notes + [""] + cap.lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", default="", help="what the machine is, for the fixture's first comment")
    args = parser.parse_args()
    try:
        import pynvml
    except ImportError as error:
        sys.exit("nvidia-ml-py is needed: %s" % error)
    sys.stdout.write(capture(pynvml, args.name))


if __name__ == "__main__":
    main()
