"""Write a fake-NVML fixture (tests/sim/nvml/fixtures/*.conf) from what NVML reports on this machine.

Run it on a node with a real NVIDIA GPU and driver, with nvidia-ml-py importable:

    python3 tests/sim/nvml/nvml-capture.py --name "one H200, driver 580" > tests/sim/nvml/fixtures/h200.conf

It asks NVML, through the same pynvml calls the collection's modules make, for everything the fake
libnvidia-ml.so.1 reads, and writes it in the fixture's key=value format, one key per GPU (no gpu.* defaults). A
query NVML does not support leaves its key out (the fake then answers NOT_SUPPORTED, as the real library did); any
other error is left out too and named in a comment. Not captured: MIG instances and the MIG profile table (the fake
has its own tables, gpu.N.mig.profiles) and the processes' MIG placement. The same script run against the fake
library writes a fixture that gives the same facts as the one it read (tests/sim/nvml/test_nvml_capture.py).
"""

from __future__ import annotations

import argparse
import datetime
import sys

NVLINK_MAX_LINKS = 18
MIB = 1024 * 1024


class Capture:
    def __init__(self, pynvml):
        self.nvml = pynvml
        self.lines, self.notes = [], []

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
    cap.field(g + "numa_node", "nvmlDeviceGetNumaNodeId", handle)

    cap.fields(g + "memory", "nvmlDeviceGetMemoryInfo", handle,
               parts={g + "memory.total_mib": lambda memory: memory.total // MIB,
                      g + "memory.used_mib": lambda memory: memory.used // MIB})
    for threshold, name in enumerate(("shutdown_c", "slowdown_c", "mem_max_c", "gpu_max_c")):
        cap.field(g + "temperature." + name, "nvmlDeviceGetTemperatureThreshold", handle, threshold)
    cap.field(g + "temperature_c", "nvmlDeviceGetTemperature", handle, nvml.NVML_TEMPERATURE_GPU)

    cap.field(g + "power.usage_mw", "nvmlDeviceGetPowerUsage", handle)
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


def capture(pynvml, name="", now=None):
    """The fixture text for what NVML reports now."""
    cap = Capture(pynvml)
    pynvml.nvmlInit()
    try:
        cap.field("driver_version", "nvmlSystemGetDriverVersion", convert=text)
        cap.field("nvml_version", "nvmlSystemGetNVMLVersion", convert=text)
        cap.field("cuda_driver_version", "nvmlSystemGetCudaDriverVersion")
        count = pynvml.nvmlDeviceGetCount()
        cap.put("gpu_count", count)
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
