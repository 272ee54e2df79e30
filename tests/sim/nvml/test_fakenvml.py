"""ABI tests of the fake libnvidia-ml.so.1, driven through the real pynvml (nvidia-ml-py)."""

import collections
import ctypes
import ctypes.util
import os
import pathlib
import subprocess
import sys

import pynvml
import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "sim" / "nvml" / "fixtures"
BUILD_SH = REPO / "tests" / "sim" / "nvml" / "fakenvml" / "build.sh"
BUILD_DIR = REPO / "build" / "fakenvml"
LIB_PATH = BUILD_DIR / "libnvidia-ml.so.1"

ALL_FIXTURES = sorted(p.name for p in FIXTURES.glob("*.conf"))
MIB = 1024 * 1024
CPU_SET_SIZE = 512  # unsigned longs slurmd passes nvmlDeviceGetCpuAffinity (gpu_nvml.c: MAX_CPUS 0x8000 / 64)


@pytest.fixture
def fixture_file(tmp_path, monkeypatch):
    """Copy a fixture to tmp_path, append extra lines, point FAKE_NVML_FIXTURE at the copy."""

    def make(name, *extra_lines):
        path = tmp_path / "nvml.conf"
        text = (FIXTURES / name).read_text() if name else ""
        if extra_lines:
            text += "".join(line + "\n" for line in extra_lines)
        path.write_text(text)
        monkeypatch.setenv("FAKE_NVML_FIXTURE", str(path))
        return path

    return make


@pytest.fixture
def nvml(fixture_file):
    """Initialise pynvml on a copy of a fixture; returns the copy's path."""

    def start(name, *extra_lines):
        path = fixture_file(name, *extra_lines)
        pynvml.nvmlInit()
        return path

    return start


def handle(i):
    return pynvml.nvmlDeviceGetHandleByIndex(i)


def snapshot(path):
    st = os.stat(path)
    return path.read_bytes(), st.st_ino, st.st_mtime_ns


def fixture_value(name, key):
    for line in (FIXTURES / name).read_text().splitlines():
        if line.startswith(key + "="):
            return line.split("=", 1)[1]
    return None


# --------------------------------------------------------------------------- every fixture


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_fixture_initialises_and_identifies_its_gpus(nvml, name):
    if name == "driver-not-loaded.conf":
        with pytest.raises(pynvml.NVMLError_DriverNotLoaded):
            nvml(name)
        return
    if name == "driver-mismatch.conf":  # a driver changed without a reboot: "Driver/library version mismatch"
        with pytest.raises(pynvml.NVMLError_LibRmVersionMismatch):
            nvml(name)
        return
    nvml(name)
    count = pynvml.nvmlDeviceGetCount()
    assert count == int(fixture_value(name, "gpu_count"))
    assert pynvml.nvmlSystemGetDriverVersion() == fixture_value(name, "driver_version")
    assert pynvml.nvmlSystemGetNVMLVersion().endswith(fixture_value(name, "driver_version"))
    uuids, buses = set(), set()
    for i in range(count):
        h = handle(i)
        try:
            uuid = pynvml.nvmlDeviceGetUUID(h)
        except pynvml.NVMLError_GpuIsLost:
            continue
        bus_id = pynvml.nvmlDeviceGetPciInfo(h).busId
        assert uuid.startswith("GPU-") and len(uuid) == 40
        assert pynvml.nvmlDeviceGetName(h).startswith(("NVIDIA ", "Tesla "))
        assert pynvml.nvmlDeviceGetIndex(pynvml.nvmlDeviceGetHandleByUUID(uuid)) == i
        assert pynvml.nvmlDeviceGetIndex(pynvml.nvmlDeviceGetHandleByPciBusId(bus_id)) == i
        # slurmd (gres.conf AutoDetect=nvml) stops with a fatal error on a GPU whose CPU affinity is empty;
        # it skips a lost GPU before asking, its minor number being unreadable
        assert any(pynvml.nvmlDeviceGetCpuAffinity(h, CPU_SET_SIZE)), "GPU %d has no CPU affinity" % i
        uuids.add(uuid)
        buses.add(bus_id)
    assert len(uuids) == len(buses) == count - (1 if name == "gpu-lost.conf" else 0)


def test_missing_fixture_file_is_driver_not_loaded(monkeypatch, tmp_path, lib):
    monkeypatch.setenv("FAKE_NVML_FIXTURE", str(tmp_path / "absent.conf"))
    with pytest.raises(pynvml.NVMLError_DriverNotLoaded):
        pynvml.nvmlInit()


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("NO_PERMISSION", pynvml.NVMLError_NoPermission),
        ("NVML_ERROR_LIB_RM_VERSION_MISMATCH", pynvml.NVMLError_LibRmVersionMismatch),
        ("9", pynvml.NVMLError_DriverNotLoaded),
        ("no_such_error", pynvml.NVMLError_Unknown),
    ],
)
def test_init_error(nvml, value, error):
    with pytest.raises(error):
        nvml("no-gpu.conf", f"init_error={value}")


# --------------------------------------------------------------------------- injected faults


def test_injected_fault_fails_exactly_the_nth_call_and_writes_nothing(nvml):
    path = nvml("dgx-h100.conf", "fail.nvmlDeviceSetPowerManagementLimit=3:GPU_IS_LOST")
    before = snapshot(path)
    pynvml.nvmlDeviceSetPowerManagementLimit(handle(0), 500000)
    pynvml.nvmlDeviceSetPowerManagementLimit(handle(1), 500000)
    written = path.read_bytes()
    assert written != before[0]
    with pytest.raises(pynvml.NVMLError_GpuIsLost):
        pynvml.nvmlDeviceSetPowerManagementLimit(handle(2), 500000)
    assert path.read_bytes() == written  # the failed call wrote nothing
    pynvml.nvmlDeviceSetPowerManagementLimit(handle(3), 500000)  # only the third call fails
    assert pynvml.nvmlDeviceGetPowerManagementLimit(handle(2)) == 700000


def test_injected_fault_from_the_nth_call_on_and_counted_from_init(nvml):
    nvml("dgx-h100.conf", "fail.nvmlDeviceGetCount_v2=2+:UNKNOWN")
    assert pynvml.nvmlDeviceGetCount() == 8
    for _attempt in range(3):
        with pytest.raises(pynvml.NVMLError_Unknown):
            pynvml.nvmlDeviceGetCount()
    pynvml.nvmlShutdown()
    pynvml.nvmlInit()  # a new init counts again
    assert pynvml.nvmlDeviceGetCount() == 8


@pytest.mark.parametrize("value", ["x:UNKNOWN", "0:UNKNOWN", "2", "2:not_an_error", "2-:UNKNOWN"])
def test_a_malformed_injected_fault_is_a_broken_fixture(nvml, value):
    nvml("dgx-h100.conf", "fail.nvmlDeviceGetCount_v2=" + value)
    with pytest.raises(pynvml.NVMLError_Unknown):
        pynvml.nvmlDeviceGetCount()


def test_fixture_is_reread_at_every_init(fixture_file, monkeypatch):
    fixture_file("dgx-h100.conf")
    pynvml.nvmlInit()
    assert pynvml.nvmlDeviceGetCount() == 8
    stale = handle(5)
    pynvml.nvmlShutdown()
    monkeypatch.setenv("FAKE_NVML_FIXTURE", str(FIXTURES / "pcie-l40s.conf"))
    pynvml.nvmlInit()
    assert pynvml.nvmlDeviceGetCount() == 2
    assert pynvml.nvmlDeviceGetName(handle(0)) == "NVIDIA L40S"
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlDeviceGetName(stale)


def test_uninitialized_and_reference_count(nvml, lib):
    assert lib.nvmlDeviceGetCount_v2(ctypes.byref(ctypes.c_uint())) == pynvml.NVML_ERROR_UNINITIALIZED
    nvml("no-gpu.conf")
    pynvml.nvmlInit()
    pynvml.nvmlShutdown()
    assert pynvml.nvmlDeviceGetCount() == 0
    pynvml.nvmlShutdown()
    with pytest.raises(pynvml.NVMLError_Uninitialized):
        pynvml.nvmlDeviceGetCount()
    with pytest.raises(pynvml.NVMLError_Uninitialized):
        pynvml.nvmlSystemGetDriverVersion()
    with pytest.raises(pynvml.NVMLError_Uninitialized):
        pynvml.nvmlShutdown()


@pytest.mark.parametrize(
    ("code", "text"),
    [(3, "Not Supported"), (9, "Driver Not Loaded"), (13, "Function Not Found"), (15, "GPU is lost"),
     (25, "Argument version mismatch"), (12345, "Unknown Error")],
)
def test_error_strings(lib, code, text):
    lib.nvmlErrorString.restype = ctypes.c_char_p
    assert lib.nvmlErrorString(code).decode() == text


# --------------------------------------------------------------------------- DGX H100


def test_dgx_h100_values(nvml):
    nvml("dgx-h100.conf")
    assert pynvml.nvmlSystemGetCudaDriverVersion() == 12040
    assert pynvml.nvmlSystemGetCudaDriverVersion_v2() == 12040
    h = handle(3)
    assert pynvml.nvmlDeviceGetName(h) == "NVIDIA H100 80GB HBM3"
    assert pynvml.nvmlDeviceGetVbiosVersion(h) == "96.00.89.00.01"
    assert pynvml.nvmlDeviceGetMinorNumber(h) == 3
    pci = pynvml.nvmlDeviceGetPciInfo(h)
    assert (pci.busId, pci.busIdLegacy) == ("00000000:5D:00.0", "0000:5D:00.0")
    assert (pci.domain, pci.bus, pci.device, pci.pciDeviceId) == (0, 0x5D, 0, 0x233010DE)
    assert pynvml.nvmlDeviceGetArchitecture(h) == pynvml.NVML_DEVICE_ARCH_HOPPER
    assert pynvml.nvmlDeviceGetCudaComputeCapability(h) == (9, 0)
    mem = pynvml.nvmlDeviceGetMemoryInfo(h)
    assert (mem.total, mem.used, mem.free) == (81559 * MIB, 1 * MIB, 81558 * MIB)
    mem2 = pynvml.nvmlDeviceGetMemoryInfo(h, version=pynvml.nvmlMemory_v2)
    assert (mem2.total, mem2.reserved, mem2.used, mem2.free) == (81559 * MIB, 0, MIB, 81558 * MIB)
    assert pynvml.nvmlDeviceGetPowerManagementLimit(h) == 700000
    assert pynvml.nvmlDeviceGetEnforcedPowerLimit(h) == 700000
    assert pynvml.nvmlDeviceGetPowerManagementDefaultLimit(h) == 700000
    assert pynvml.nvmlDeviceGetPowerManagementLimitConstraints(h) == [200000, 700000]
    assert 30 <= pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU) <= 40
    assert pynvml.nvmlDeviceGetTemperatureThreshold(h, pynvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN) == 87
    assert pynvml.nvmlDeviceGetPersistenceMode(h) == 1
    assert pynvml.nvmlDeviceGetComputeMode(h) == pynvml.NVML_COMPUTEMODE_DEFAULT
    assert pynvml.nvmlDeviceGetEccMode(h) == [1, 1]
    assert pynvml.nvmlDeviceGetTotalEccErrors(
        h, pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, pynvml.NVML_AGGREGATE_ECC) == 0
    assert pynvml.nvmlDeviceGetRemappedRows(h) == (0, 0, 0, 0)
    assert pynvml.nvmlDeviceGetCurrentClocksEventReasons(h) == pynvml.nvmlClocksEventReasonGpuIdle
    assert pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM) == 345
    assert pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_MEM) == 2619
    assert pynvml.nvmlDeviceGetCurrPcieLinkGeneration(h) == pynvml.nvmlDeviceGetMaxPcieLinkGeneration(h) == 5
    assert pynvml.nvmlDeviceGetCurrPcieLinkWidth(h) == pynvml.nvmlDeviceGetMaxPcieLinkWidth(h) == 16
    assert pynvml.nvmlDeviceGetNumaNodeId(h) == 0
    assert pynvml.nvmlDeviceGetNumaNodeId(handle(4)) == 1
    assert pynvml.nvmlDeviceGetMigMode(h) == [0, 0]
    assert pynvml.nvmlDeviceGetMaxMigDeviceCount(h) == 7
    with pytest.raises(pynvml.NVMLError_NotFound):
        pynvml.nvmlDeviceGetMigDeviceHandleByIndex(h, 0)
    assert pynvml.nvmlDeviceGetNumFans(h) == 0
    with pytest.raises(pynvml.NVMLError_NotSupported):
        pynvml.nvmlDeviceGetFanSpeed(h)
    with pytest.raises(pynvml.NVMLError_NotSupported):
        pynvml.nvmlDeviceGetRetiredPagesPendingStatus(h)
    assert pynvml.nvmlDeviceGetComputeRunningProcesses(h) == []
    assert pynvml.nvmlDeviceGetTopologyCommonAncestor(h, handle(0)) == pynvml.NVML_TOPOLOGY_NODE
    assert pynvml.nvmlDeviceGetTopologyCommonAncestor(handle(0), h) == pynvml.NVML_TOPOLOGY_NODE
    assert pynvml.nvmlDeviceGetTopologyCommonAncestor(h, handle(7)) == pynvml.NVML_TOPOLOGY_SYSTEM
    assert pynvml.nvmlDeviceGetTopologyCommonAncestor(h, h) == pynvml.NVML_TOPOLOGY_INTERNAL


def test_dgx_h100_nvlinks_reach_four_switches(nvml):
    nvml("dgx-h100.conf")
    for i in range(8):
        h = handle(i)
        per_switch = collections.Counter()
        for link in range(18):
            assert pynvml.nvmlDeviceGetNvLinkState(h, link) == pynvml.NVML_FEATURE_ENABLED
            assert pynvml.nvmlDeviceGetNvLinkRemoteDeviceType(h, link) == pynvml.NVML_NVLINK_DEVICE_TYPE_SWITCH
            per_switch[pynvml.nvmlDeviceGetNvLinkRemotePciInfo(h, link).busId] += 1
        assert sorted(per_switch.values()) == [4, 4, 5, 5]
        with pytest.raises(pynvml.NVMLError_InvalidArgument):
            pynvml.nvmlDeviceGetNvLinkState(h, 18)


# --------------------------------------------------------------------------- DGX A100 with MIG


def mig_devices(h):
    found = []
    for index in range(pynvml.nvmlDeviceGetMaxMigDeviceCount(h)):
        try:
            found.append(pynvml.nvmlDeviceGetMigDeviceHandleByIndex(h, index))
        except pynvml.NVMLError_NotFound:
            continue
    return found


def test_a100_mig_devices(nvml):
    nvml("dgx-a100-mig.conf")
    gpu0, gpu1, gpu2 = handle(0), handle(1), handle(2)
    assert pynvml.nvmlDeviceGetMigMode(gpu0) == [1, 1]
    assert pynvml.nvmlDeviceGetMigMode(gpu2) == [0, 0]
    assert mig_devices(gpu2) == []

    migs0 = mig_devices(gpu0)
    assert [pynvml.nvmlDeviceGetName(m) for m in migs0] == ["NVIDIA A100-SXM4-80GB MIG 1g.10gb"] * 7
    assert [pynvml.nvmlDeviceGetGpuInstanceId(m) for m in migs0] == list(range(7, 14))
    assert {pynvml.nvmlDeviceGetMemoryInfo(m).total for m in migs0} == {9856 * MIB}
    uuids = [pynvml.nvmlDeviceGetUUID(m) for m in migs0]
    assert len(set(uuids)) == 7 and all(u.startswith("MIG-") for u in uuids)
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlDeviceGetMigDeviceHandleByIndex(gpu0, 7)

    migs1 = mig_devices(gpu1)
    assert [pynvml.nvmlDeviceGetName(m).rsplit(" ", 1)[1] for m in migs1] == ["3g.40gb", "2g.20gb", "1g.10gb"]
    big = migs1[0]
    assert pynvml.nvmlDeviceIsMigDeviceHandle(big)
    assert not pynvml.nvmlDeviceIsMigDeviceHandle(gpu1)
    parent = pynvml.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(big)
    assert pynvml.nvmlDeviceGetUUID(parent) == pynvml.nvmlDeviceGetUUID(gpu1)
    by_uuid = pynvml.nvmlDeviceGetHandleByUUID(pynvml.nvmlDeviceGetUUID(big))
    assert pynvml.nvmlDeviceGetGpuInstanceId(by_uuid) == 2
    assert pynvml.nvmlDeviceGetComputeInstanceId(by_uuid) == 0
    mem2 = pynvml.nvmlDeviceGetMemoryInfo(big, version=pynvml.nvmlMemory_v2)
    assert (mem2.total, mem2.used) == (40192 * MIB, 24595 * MIB)

    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlDeviceGetGpuInstanceId(gpu1)
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(gpu1)
    with pytest.raises(pynvml.NVMLError_NotSupported):
        pynvml.nvmlDeviceGetPowerUsage(big)

    procs = pynvml.nvmlDeviceGetComputeRunningProcesses(gpu1)
    assert [(p.pid, p.usedGpuMemory, p.gpuInstanceId, p.computeInstanceId) for p in procs] == [
        (48213, 24576 * MIB, 2, 0)]
    assert [p.pid for p in pynvml.nvmlDeviceGetComputeRunningProcesses(big)] == [48213]
    assert pynvml.nvmlDeviceGetComputeRunningProcesses(migs1[1]) == []


def test_a100_links_and_minor_numbers(nvml):
    nvml("dgx-a100-mig.conf")
    h = handle(6)
    switches = collections.Counter(pynvml.nvmlDeviceGetNvLinkRemotePciInfo(h, link).busId for link in range(12))
    assert len(switches) == 6 and set(switches.values()) == {2}
    assert [pynvml.nvmlDeviceGetMinorNumber(handle(i)) for i in range(8)] == [2, 3, 0, 1, 6, 7, 4, 5]
    assert pynvml.nvmlDeviceGetTopologyCommonAncestor(handle(0), handle(1)) == pynvml.NVML_TOPOLOGY_MULTIPLE


# --------------------------------------------------------------------------- PCIe, busy, lost, old driver


def test_l40s_has_no_nvlink_no_mig_no_fans(nvml):
    nvml("pcie-l40s.conf")
    h = handle(1)
    assert pynvml.nvmlDeviceGetArchitecture(h) == pynvml.NVML_DEVICE_ARCH_ADA
    assert pynvml.nvmlDeviceGetCudaComputeCapability(h) == (8, 9)
    assert pynvml.nvmlDeviceGetMemoryInfo(h).total == 46068 * MIB
    assert pynvml.nvmlDeviceGetMaxPcieLinkGeneration(h) == 4
    for call in (
        lambda: pynvml.nvmlDeviceGetNvLinkState(h, 0),
        lambda: pynvml.nvmlDeviceGetNvLinkRemotePciInfo(h, 0),
        lambda: pynvml.nvmlDeviceGetNvLinkRemoteDeviceType(h, 0),
        lambda: pynvml.nvmlDeviceGetMigMode(h),
        lambda: pynvml.nvmlDeviceGetMaxMigDeviceCount(h),
        lambda: pynvml.nvmlDeviceGetMigDeviceHandleByIndex(h, 0),
        lambda: pynvml.nvmlDeviceGetFanSpeed_v2(h, 0),
        lambda: pynvml.nvmlDeviceSetMigMode(h, 1),
    ):
        with pytest.raises(pynvml.NVMLError_NotSupported):
            call()
    assert pynvml.nvmlDeviceGetNumFans(h) == 0
    assert pynvml.nvmlDeviceGetTopologyCommonAncestor(handle(0), h) == pynvml.NVML_TOPOLOGY_SYSTEM


def test_busy_processes_and_fans(nvml):
    nvml("busy.conf")
    gpu0, gpu1 = handle(0), handle(1)
    procs = pynvml.nvmlDeviceGetComputeRunningProcesses(gpu0)
    assert [(p.pid, p.usedGpuMemory // MIB) for p in procs] == [(21347, 30412), (21590, 8120)]
    assert procs[0].gpuInstanceId == 0xFFFFFFFF
    assert [pynvml.nvmlSystemGetProcessName(p.pid) for p in procs] == ["python3", "python3"]
    (server,) = pynvml.nvmlDeviceGetComputeRunningProcesses_v2(gpu1)
    assert pynvml.nvmlSystemGetProcessName(server.pid) == "/opt/tritonserver/bin/tritonserver"
    with pytest.raises(pynvml.NVMLError_NotFound):
        pynvml.nvmlSystemGetProcessName(1)
    util = pynvml.nvmlDeviceGetUtilizationRates(gpu0)
    assert (util.gpu, util.memory) == (99, 64)
    assert pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(gpu0) == pynvml.nvmlClocksThrottleReasonSwPowerCap
    assert pynvml.nvmlDeviceGetClockInfo(gpu0, pynvml.NVML_CLOCK_SM) == 2280
    assert (pynvml.nvmlDeviceGetFanSpeed(gpu0), pynvml.nvmlDeviceGetFanSpeed_v2(gpu1, 0)) == (71, 46)
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlDeviceGetFanSpeed_v2(gpu1, 1)


def test_process_list_size_protocol(nvml, lib):
    nvml("busy.conf")
    fn = lib.nvmlDeviceGetComputeRunningProcesses_v3
    fn.argtypes = [pynvml.c_nvmlDevice_t, ctypes.POINTER(ctypes.c_uint), ctypes.c_void_p]
    count = ctypes.c_uint(0)
    assert fn(handle(0), ctypes.byref(count), None) == pynvml.NVML_ERROR_INSUFFICIENT_SIZE
    assert count.value == 2
    buf = (pynvml.c_nvmlProcessInfo_v3_t * 2)()
    count.value = 1
    assert fn(handle(0), ctypes.byref(count), buf) == pynvml.NVML_ERROR_INSUFFICIENT_SIZE
    count.value = 2
    assert fn(handle(0), ctypes.byref(count), buf) == pynvml.NVML_SUCCESS
    assert [p.pid for p in buf] == [21347, 21590]


def test_lost_gpu_only(nvml):
    nvml("gpu-lost.conf")
    lost = handle(2)
    for call in (
        pynvml.nvmlDeviceGetName,
        pynvml.nvmlDeviceGetUUID,
        pynvml.nvmlDeviceGetPciInfo,
        pynvml.nvmlDeviceGetMemoryInfo,
        lambda h: pynvml.nvmlDeviceGetTemperature(h, 0),
        pynvml.nvmlDeviceGetPersistenceMode,
        pynvml.nvmlDeviceGetComputeRunningProcesses,
        lambda h: pynvml.nvmlDeviceGetNvLinkState(h, 0),
        lambda h: pynvml.nvmlDeviceSetPersistenceMode(h, 0),
        lambda h: pynvml.nvmlDeviceGetTopologyCommonAncestor(handle(0), h),
    ):
        with pytest.raises(pynvml.NVMLError_GpuIsLost):
            call(lost)
    for i in (0, 1, 3):
        h = handle(i)
        assert pynvml.nvmlDeviceGetName(h) == "NVIDIA H100 80GB HBM3"
        peers = {pynvml.nvmlDeviceGetNvLinkRemotePciInfo(h, link).busId for link in range(18)}
        assert len(peers) == 3
        assert pynvml.nvmlDeviceGetNvLinkRemoteDeviceType(h, 0) == pynvml.NVML_NVLINK_DEVICE_TYPE_GPU


DROPPED = {
    "nvmlDeviceGetComputeRunningProcesses_v3": pynvml.nvmlDeviceGetComputeRunningProcesses_v3,
    "nvmlDeviceGetMemoryInfo_v2": lambda h: pynvml.nvmlDeviceGetMemoryInfo(h, version=pynvml.nvmlMemory_v2),
    "nvmlDeviceGetCurrentClocksEventReasons": pynvml.nvmlDeviceGetCurrentClocksEventReasons,
    "nvmlDeviceGetNvLinkRemoteDeviceType": lambda h: pynvml.nvmlDeviceGetNvLinkRemoteDeviceType(h, 0),
    "nvmlDeviceGetNumaNodeId": pynvml.nvmlDeviceGetNumaNodeId,
}


@pytest.mark.parametrize("symbol", sorted(DROPPED))
def test_old_driver_dropped_symbols(nvml, symbol):
    nvml("old-driver.conf")
    with pytest.raises(pynvml.NVMLError_FunctionNotFound):
        DROPPED[symbol](handle(0))


def test_old_driver_values(nvml):
    nvml("old-driver.conf")
    h = handle(0)
    assert pynvml.nvmlSystemGetDriverVersion().startswith("470.")
    assert pynvml.nvmlDeviceGetName(h) == "Tesla V100-SXM2-16GB"
    assert pynvml.nvmlDeviceGetArchitecture(h) == pynvml.NVML_DEVICE_ARCH_VOLTA
    assert pynvml.nvmlDeviceGetCudaComputeCapability(h) == (7, 0)
    assert pynvml.nvmlDeviceGetMemoryInfo(h).total == 16160 * MIB
    assert pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(h) == 1
    assert pynvml.nvmlDeviceGetRetiredPagesPendingStatus(h) == 0
    assert pynvml.nvmlDeviceGetComputeRunningProcesses_v2(h) == []
    with pytest.raises(pynvml.NVMLLibraryMismatchError):
        pynvml.nvmlDeviceGetComputeRunningProcesses(h)
    for call in (pynvml.nvmlDeviceGetRemappedRows, pynvml.nvmlDeviceGetMigMode):
        with pytest.raises(pynvml.NVMLError_NotSupported):
            call(h)
    # hybrid cube-mesh: 6 links per GPU, every link to a peer GPU, link counts symmetric
    buses = [pynvml.nvmlDeviceGetPciInfo(handle(i)).busId for i in range(8)]
    links = collections.Counter()
    for i in range(8):
        for link in range(6):
            peer = buses.index(pynvml.nvmlDeviceGetNvLinkRemotePciInfo(handle(i), link).busId)
            links[(i, peer)] += 1
    assert all(links[(a, b)] == links[(b, a)] for a, b in links)
    assert pynvml.nvmlDeviceGetTopologyCommonAncestor(handle(0), handle(1)) == pynvml.NVML_TOPOLOGY_SINGLE


# --------------------------------------------------------------------------- lookup rules


def test_absent_keys_are_not_supported(nvml):
    nvml(None, "gpu_count=1", "gpu.0.name=Bare GPU")
    h = handle(0)
    assert pynvml.nvmlDeviceGetName(h) == "Bare GPU"
    for call in (
        pynvml.nvmlDeviceGetUUID, pynvml.nvmlDeviceGetSerial, pynvml.nvmlDeviceGetPciInfo,
        pynvml.nvmlDeviceGetMemoryInfo, pynvml.nvmlDeviceGetPowerUsage, pynvml.nvmlDeviceGetEccMode,
        pynvml.nvmlDeviceGetUtilizationRates, pynvml.nvmlDeviceGetNumFans, pynvml.nvmlDeviceGetArchitecture,
        pynvml.nvmlDeviceGetComputeRunningProcesses, pynvml.nvmlDeviceGetMinorNumber,
        lambda h: pynvml.nvmlDeviceGetClockInfo(h, 0),
        lambda h: pynvml.nvmlDeviceSetPowerManagementLimit(h, 100000),
    ):
        with pytest.raises(pynvml.NVMLError_NotSupported):
            call(h)
    for call in (pynvml.nvmlSystemGetDriverVersion, pynvml.nvmlSystemGetCudaDriverVersion):
        with pytest.raises(pynvml.NVMLError_NotSupported):
            call()


def test_malformed_value_is_unknown_error(nvml):
    nvml(None, "gpu_count=1", "gpu.0.power.usage_mw=lots")
    with pytest.raises(pynvml.NVMLError_Unknown):
        pynvml.nvmlDeviceGetPowerUsage(handle(0))


def test_wildcard_precedence(nvml):
    nvml(None, "gpu_count=2", "gpu.*.name=Default", "gpu.1.name=Exact",
         "gpu.*.nvlink.count=6", "gpu.*.nvlink.*.active=1", "gpu.*.nvlink.3.active=0",
         "gpu.0.nvlink.*.active=0", "gpu.0.nvlink.5.active=1",
         "gpu.0.temperature_c=40", "gpu.0.temperature_c=41")
    assert [pynvml.nvmlDeviceGetName(handle(i)) for i in range(2)] == ["Default", "Exact"]
    state = [[pynvml.nvmlDeviceGetNvLinkState(handle(i), link) for link in range(6)] for i in range(2)]
    assert state == [[0, 0, 0, 0, 0, 1], [1, 1, 1, 0, 1, 1]]
    assert pynvml.nvmlDeviceGetTemperature(handle(0), 0) == 41


def test_memory_reserved_and_version_check(nvml):
    nvml("dgx-h100.conf", "gpu.0.memory.reserved_mib=551", "gpu.0.memory.used_mib=100")
    h = handle(0)
    v1 = pynvml.nvmlDeviceGetMemoryInfo(h)
    assert (v1.used, v1.free) == (651 * MIB, (81559 - 651) * MIB)
    v2 = pynvml.nvmlDeviceGetMemoryInfo(h, version=pynvml.nvmlMemory_v2)
    assert (v2.reserved, v2.used, v2.free) == (551 * MIB, 100 * MIB, (81559 - 651) * MIB)
    with pytest.raises(pynvml.NVMLError_ArgumentVersionMismatch):
        pynvml.nvmlDeviceGetMemoryInfo(h, version=0x01000028)


def test_drop_symbols_any_entry_point(nvml):
    nvml("pcie-l40s.conf", "drop_symbols=nvmlSystemGetDriverVersion ,nvmlDeviceGetPowerUsage")
    with pytest.raises(pynvml.NVMLError_FunctionNotFound):
        pynvml.nvmlSystemGetDriverVersion()
    with pytest.raises(pynvml.NVMLError_FunctionNotFound):
        pynvml.nvmlDeviceGetPowerUsage(handle(0))
    assert pynvml.nvmlDeviceGetPowerManagementLimit(handle(0)) == 350000


# --------------------------------------------------------------------------- setters


SETTERS = [
    pytest.param(lambda h: pynvml.nvmlDeviceSetPersistenceMode(h, 0),
                 pynvml.nvmlDeviceGetPersistenceMode, 0,
                 {"gpu.1.persistence_mode": "0"}, id="persistence"),
    pytest.param(lambda h: pynvml.nvmlDeviceSetPowerManagementLimit(h, 450000),
                 lambda h: (pynvml.nvmlDeviceGetPowerManagementLimit(h), pynvml.nvmlDeviceGetEnforcedPowerLimit(h)),
                 (450000, 450000), {"gpu.1.power.limit_mw": "450000"}, id="power-limit"),
    pytest.param(lambda h: pynvml.nvmlDeviceSetComputeMode(h, pynvml.NVML_COMPUTEMODE_EXCLUSIVE_PROCESS),
                 pynvml.nvmlDeviceGetComputeMode, 3,
                 {"gpu.1.compute_mode": "3"}, id="compute-mode"),
    pytest.param(lambda h: pynvml.nvmlDeviceSetEccMode(h, 0),
                 pynvml.nvmlDeviceGetEccMode, [1, 0],
                 {"gpu.1.ecc.pending": "0"}, id="ecc"),
    pytest.param(lambda h: pynvml.nvmlDeviceSetMigMode(h, pynvml.NVML_DEVICE_MIG_ENABLE),
                 pynvml.nvmlDeviceGetMigMode, [0, 1],
                 {"gpu.1.mig.pending": "1"}, id="mig"),
    pytest.param(lambda h: pynvml.nvmlDeviceSetGpuLockedClocks(h, 1200, 1755),
                 lambda h: None, None,
                 {"gpu.1.clocks.locked_min_mhz": "1200", "gpu.1.clocks.locked_max_mhz": "1755"},
                 id="locked-clocks"),
    pytest.param(lambda h: pynvml.nvmlDeviceSetMemoryLockedClocks(h, 2619, 2619),
                 lambda h: None, None,
                 {"gpu.1.clocks.locked_mem_min_mhz": "2619", "gpu.1.clocks.locked_mem_max_mhz": "2619"},
                 id="locked-memory-clocks"),
]


def conf_lines(path):
    return path.read_text().splitlines()


@pytest.mark.parametrize(("setter", "getter", "expected", "written"), SETTERS)
def test_setter_writes_back_and_persists(nvml, setter, getter, expected, written):
    path = nvml("dgx-h100.conf")
    before = conf_lines(path)
    mode = os.stat(path).st_mode
    assert setter(handle(1)) in (None, pynvml.NVML_SUCCESS)
    assert getter(handle(1)) == expected
    after = conf_lines(path)
    for key, value in written.items():
        assert after.count(f"{key}={value}") == 1
    assert [line for line in after if line.split("=", 1)[0] not in written] == before
    assert os.stat(path).st_mode == mode
    pynvml.nvmlShutdown()
    pynvml.nvmlInit()
    assert getter(handle(1)) == expected


def test_setter_replaces_existing_line_in_place(nvml):
    path = nvml("busy.conf")
    before = conf_lines(path)
    pynvml.nvmlDeviceSetPowerManagementLimit(handle(0), 250000)
    pynvml.nvmlDeviceSetPowerManagementLimit(handle(0), 275000)
    after = conf_lines(path)
    assert after[:len(before)] == before
    assert after[len(before):] == ["gpu.0.power.limit_mw=275000"]
    pynvml.nvmlDeviceSetPersistenceMode(handle(0), 1)
    assert conf_lines(path)[len(before):] == ["gpu.0.power.limit_mw=275000", "gpu.0.persistence_mode=1"]


def test_reset_locked_clocks_removes_keys(nvml):
    path = nvml("pcie-l40s.conf")
    original = path.read_text()
    pynvml.nvmlDeviceSetGpuLockedClocks(handle(0), 2100, 2520)
    assert "gpu.0.clocks.locked_max_mhz=2520" in conf_lines(path)
    pynvml.nvmlDeviceResetGpuLockedClocks(handle(0))
    assert path.read_text() == original


def test_setter_state_seen_by_another_process(nvml):
    path = nvml("dgx-h100.conf")
    pynvml.nvmlDeviceSetComputeMode(handle(6), pynvml.NVML_COMPUTEMODE_PROHIBITED)
    code = (
        "import pynvml; pynvml.nvmlInit()\n"
        "print(pynvml.nvmlDeviceGetComputeMode(pynvml.nvmlDeviceGetHandleByIndex(6)))\n"
    )
    env = dict(os.environ, LD_LIBRARY_PATH=str(BUILD_DIR), FAKE_NVML_FIXTURE=str(path))
    env.pop("LD_PRELOAD", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "2"


REJECTED = [
    pytest.param("dgx-h100.conf", (), lambda h: pynvml.nvmlDeviceSetPowerManagementLimit(h, 199999),
                 pynvml.NVMLError_InvalidArgument, id="power-below-min"),
    pytest.param("dgx-h100.conf", (), lambda h: pynvml.nvmlDeviceSetPowerManagementLimit(h, 700001),
                 pynvml.NVMLError_InvalidArgument, id="power-above-max"),
    pytest.param("dgx-h100.conf", (), lambda h: pynvml.nvmlDeviceSetComputeMode(h, 1),
                 pynvml.NVMLError_InvalidArgument, id="compute-exclusive-thread"),
    pytest.param("dgx-h100.conf", (), lambda h: pynvml.nvmlDeviceSetComputeMode(h, 7),
                 pynvml.NVMLError_InvalidArgument, id="compute-unknown"),
    pytest.param("dgx-h100.conf", (), lambda h: pynvml.nvmlDeviceSetPersistenceMode(h, 2),
                 pynvml.NVMLError_InvalidArgument, id="persistence-unknown"),
    pytest.param("dgx-h100.conf", (), lambda h: pynvml.nvmlDeviceSetEccMode(h, 5),
                 pynvml.NVMLError_InvalidArgument, id="ecc-unknown"),
    pytest.param("dgx-h100.conf", (), lambda h: pynvml.nvmlDeviceSetMigMode(h, 3),
                 pynvml.NVMLError_InvalidArgument, id="mig-unknown"),
    pytest.param("dgx-h100.conf", (), lambda h: pynvml.nvmlDeviceSetGpuLockedClocks(h, 1500, 1000),
                 pynvml.NVMLError_InvalidArgument, id="clocks-min-above-max"),
    pytest.param("dgx-h100.conf", (), lambda h: pynvml.nvmlDeviceSetGpuLockedClocks(h, 1000, 2500),
                 pynvml.NVMLError_InvalidArgument, id="clocks-above-max"),
    pytest.param("pcie-l40s.conf", (), lambda h: pynvml.nvmlDeviceSetMigMode(h, 1),
                 pynvml.NVMLError_NotSupported, id="mig-unsupported"),
    pytest.param("gpu-lost.conf", (), lambda h: pynvml.nvmlDeviceSetPowerManagementLimit(handle(2), 500000),
                 pynvml.NVMLError_GpuIsLost, id="lost-gpu"),
    pytest.param("dgx-h100.conf", ("setters_error=NO_PERMISSION",),
                 lambda h: pynvml.nvmlDeviceSetPersistenceMode(h, 0),
                 pynvml.NVMLError_NoPermission, id="non-root"),
    pytest.param("dgx-h100.conf", ("setters_error=NO_PERMISSION",),
                 pynvml.nvmlDeviceResetGpuLockedClocks,
                 pynvml.NVMLError_NoPermission, id="non-root-reset"),
    pytest.param("old-driver.conf", ("drop_symbols=nvmlDeviceSetMigMode",),
                 lambda h: pynvml.nvmlDeviceSetMigMode(h, 1),
                 pynvml.NVMLError_FunctionNotFound, id="dropped-setter"),
]


@pytest.mark.parametrize(("name", "extra", "call", "error"), REJECTED)
def test_rejected_setter_leaves_file_untouched(nvml, name, extra, call, error):
    path = nvml(name, *extra)
    before = snapshot(path)
    with pytest.raises(error):
        call(handle(0))
    assert snapshot(path) == before


# --------------------------------------------------------------------------- supported clocks


SUPPORTED_CLOCKS = [
    # fixture, memory clocks, (first, last, count) of the graphics clocks
    pytest.param("dgx-h100.conf", [2619], (1980, 345, 110), id="h100-sxm"),
    pytest.param("dgx-a100-mig.conf", [1593], (1410, 210, 81), id="a100-sxm4-80gb"),
    pytest.param("pcie-l40s.conf", [9001], (2520, 210, 155), id="l40s"),
]


@pytest.mark.parametrize(("name", "memory", "graphics"), SUPPORTED_CLOCKS)
def test_supported_clocks_of_real_boards(nvml, name, memory, graphics):
    nvml(name)
    for i in range(pynvml.nvmlDeviceGetCount()):
        h = handle(i)
        assert pynvml.nvmlDeviceGetSupportedMemoryClocks(h) == memory
        clocks = pynvml.nvmlDeviceGetSupportedGraphicsClocks(h, memory[0])
        assert (clocks[0], clocks[-1], len(clocks)) == graphics
        assert all(high - low == 15 for high, low in zip(clocks, clocks[1:]))
        assert clocks[0] == pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_GRAPHICS)


def test_h100_graphics_clocks_include_the_locked_values_used_elsewhere(nvml):
    nvml("dgx-h100.conf")
    clocks = pynvml.nvmlDeviceGetSupportedGraphicsClocks(handle(2), 2619)
    assert {1200, 1410, 1500, 1755, 1980} <= set(clocks)


def test_supported_clock_lists_are_highest_first(nvml):
    nvml(None, "gpu_count=1", "gpu.0.clocks.supported_mem_mhz=405, 9001,5001,810",
         "gpu.0.clocks.supported_graphics_mhz=1500,2000, 1000")
    h = handle(0)
    assert pynvml.nvmlDeviceGetSupportedMemoryClocks(h) == [9001, 5001, 810, 405]
    for mem in (9001, 405):
        assert pynvml.nvmlDeviceGetSupportedGraphicsClocks(h, mem) == [2000, 1500, 1000]


def test_supported_clocks_size_protocol(nvml, lib):
    nvml("dgx-h100.conf")
    mem_fn = lib.nvmlDeviceGetSupportedMemoryClocks
    mem_fn.argtypes = [pynvml.c_nvmlDevice_t, ctypes.POINTER(ctypes.c_uint), ctypes.c_void_p]
    gfx_fn = lib.nvmlDeviceGetSupportedGraphicsClocks
    gfx_fn.argtypes = [pynvml.c_nvmlDevice_t, ctypes.c_uint, ctypes.POINTER(ctypes.c_uint), ctypes.c_void_p]
    count = ctypes.c_uint(0)
    assert mem_fn(handle(0), ctypes.byref(count), None) == pynvml.NVML_ERROR_INSUFFICIENT_SIZE
    assert count.value == 1
    count.value = 0
    assert gfx_fn(handle(0), 2619, ctypes.byref(count), None) == pynvml.NVML_ERROR_INSUFFICIENT_SIZE
    assert count.value == 110
    buf = (ctypes.c_uint * 200)()
    count.value = 109
    assert gfx_fn(handle(0), 2619, ctypes.byref(count), buf) == pynvml.NVML_ERROR_INSUFFICIENT_SIZE
    assert count.value == 110
    count.value = 200
    assert gfx_fn(handle(0), 2619, ctypes.byref(count), buf) == pynvml.NVML_SUCCESS
    assert (count.value, buf[0], buf[109], buf[110]) == (110, 1980, 345, 0)
    assert gfx_fn(handle(0), 2619, None, buf) == pynvml.NVML_ERROR_INVALID_ARGUMENT


@pytest.mark.parametrize("memory", [1593, 0, 2620])
def test_graphics_clocks_for_an_unsupported_memory_clock_are_not_found(nvml, memory):
    nvml("dgx-h100.conf")
    with pytest.raises(pynvml.NVMLError_NotFound):
        pynvml.nvmlDeviceGetSupportedGraphicsClocks(handle(0), memory)


def test_supported_clocks_absent_are_not_supported(nvml):
    nvml("busy.conf", "gpu.1.clocks.supported_graphics_mhz=300-2505/15")
    for i in (0, 1):  # GPU 1 lists graphics clocks but no memory clocks
        with pytest.raises(pynvml.NVMLError_NotSupported):
            pynvml.nvmlDeviceGetSupportedMemoryClocks(handle(i))
        with pytest.raises(pynvml.NVMLError_NotSupported):
            pynvml.nvmlDeviceGetSupportedGraphicsClocks(handle(i), 10001)


@pytest.mark.parametrize("value", ["345-1980/16", "1980-345/15", "345-1980/0", "345-1980", "fast", "1980,,345"])
def test_malformed_supported_graphics_clocks_are_unknown(nvml, value):
    nvml("dgx-h100.conf", f"gpu.0.clocks.supported_graphics_mhz={value}")
    with pytest.raises(pynvml.NVMLError_Unknown):
        pynvml.nvmlDeviceGetSupportedGraphicsClocks(handle(0), 2619)
    with pytest.raises(pynvml.NVMLError_Unknown):
        pynvml.nvmlDeviceSetGpuLockedClocks(handle(0), 1410, 1980)


def test_supported_clocks_entry_checks(nvml):
    nvml("dgx-a100-mig.conf")
    mig = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(handle(0), 0)
    with pytest.raises(pynvml.NVMLError_NotSupported):
        pynvml.nvmlDeviceGetSupportedMemoryClocks(mig)
    with pytest.raises(pynvml.NVMLError_NotSupported):
        pynvml.nvmlDeviceGetSupportedGraphicsClocks(mig, 1593)
    pynvml.nvmlShutdown()
    nvml("gpu-lost.conf", "gpu.*.clocks.supported_mem_mhz=2619", "gpu.*.clocks.supported_graphics_mhz=345-1980/15")
    assert len(pynvml.nvmlDeviceGetSupportedGraphicsClocks(handle(0), 2619)) == 110
    with pytest.raises(pynvml.NVMLError_GpuIsLost):
        pynvml.nvmlDeviceGetSupportedMemoryClocks(handle(2))
    with pytest.raises(pynvml.NVMLError_GpuIsLost):
        pynvml.nvmlDeviceGetSupportedGraphicsClocks(handle(2), 2619)
    pynvml.nvmlShutdown()
    nvml("dgx-h100.conf", "drop_symbols=nvmlDeviceGetSupportedMemoryClocks,nvmlDeviceGetSupportedGraphicsClocks")
    with pytest.raises(pynvml.NVMLError_FunctionNotFound):
        pynvml.nvmlDeviceGetSupportedMemoryClocks(handle(0))
    with pytest.raises(pynvml.NVMLError_FunctionNotFound):
        pynvml.nvmlDeviceGetSupportedGraphicsClocks(handle(0), 2619)


def test_supported_clocks_need_init(nvml, lib):
    nvml("dgx-h100.conf")
    h = handle(0)
    pynvml.nvmlShutdown()
    fn = lib.nvmlDeviceGetSupportedMemoryClocks
    fn.argtypes = [pynvml.c_nvmlDevice_t, ctypes.POINTER(ctypes.c_uint), ctypes.c_void_p]
    count = ctypes.c_uint(0)
    assert fn(h, ctypes.byref(count), None) == pynvml.NVML_ERROR_UNINITIALIZED
    with pytest.raises(pynvml.NVMLError_Uninitialized):
        pynvml.nvmlDeviceGetSupportedGraphicsClocks(h, 2619)


@pytest.mark.parametrize(("low", "high"), [(1410, 1980), (345, 345), (1500, 1980), (1980, 1980)])
def test_locked_clocks_on_supported_graphics_clocks(nvml, low, high):
    path = nvml("dgx-h100.conf")
    pynvml.nvmlDeviceSetGpuLockedClocks(handle(3), low, high)
    values = dict(line.split("=", 1) for line in conf_lines(path) if "=" in line)
    assert (values["gpu.3.clocks.locked_min_mhz"], values["gpu.3.clocks.locked_max_mhz"]) == (str(low), str(high))


LOCK_REJECTED = [
    pytest.param("dgx-h100.conf", 1400, 1980, id="min-off-grid"),
    pytest.param("dgx-h100.conf", 1410, 1979, id="max-off-grid"),
    pytest.param("dgx-h100.conf", 330, 1980, id="min-below-lowest"),
    pytest.param("dgx-h100.conf", 1410, 1995, id="max-above-highest"),
    pytest.param("dgx-h100.conf", 1980, 1410, id="min-above-max"),
    pytest.param("dgx-a100-mig.conf", 1410, 1980, id="a100-max-not-listed"),
    pytest.param("old-driver.conf", 1000, 1531, id="no-list-above-max-graphics"),
    pytest.param("old-driver.conf", 1001, 1000, id="no-list-min-above-max"),
]


@pytest.mark.parametrize(("name", "low", "high"), LOCK_REJECTED)
def test_locked_clocks_rejected_leave_file_untouched(nvml, name, low, high):
    path = nvml(name)
    before = snapshot(path)
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlDeviceSetGpuLockedClocks(handle(1), low, high)
    assert snapshot(path) == before


def test_locked_clocks_without_a_list_only_need_max_graphics(nvml):
    path = nvml("old-driver.conf")  # V100 fixture: clocks.max_graphics_mhz=1530, no supported clocks
    with pytest.raises(pynvml.NVMLError_NotSupported):
        pynvml.nvmlDeviceGetSupportedGraphicsClocks(handle(1), 877)
    pynvml.nvmlDeviceSetGpuLockedClocks(handle(1), 1001, 1530)
    assert conf_lines(path)[-2:] == ["gpu.1.clocks.locked_min_mhz=1001", "gpu.1.clocks.locked_max_mhz=1530"]


def test_locked_clocks_with_only_a_list(nvml):
    path = nvml(None, "gpu_count=1", "gpu.0.clocks.supported_graphics_mhz=900,1200")
    original = path.read_text()
    pynvml.nvmlDeviceSetGpuLockedClocks(handle(0), 900, 1200)
    assert conf_lines(path)[-1] == "gpu.0.clocks.locked_max_mhz=1200"
    pynvml.nvmlDeviceResetGpuLockedClocks(handle(0))
    assert path.read_text() == original


def read_everything(h):
    """Call every getter on one handle, ignoring NVML errors."""
    calls = [
        pynvml.nvmlDeviceGetName, pynvml.nvmlDeviceGetUUID, pynvml.nvmlDeviceGetSerial,
        pynvml.nvmlDeviceGetMinorNumber, pynvml.nvmlDeviceGetBoardPartNumber, pynvml.nvmlDeviceGetVbiosVersion,
        pynvml.nvmlDeviceGetPciInfo, pynvml.nvmlDeviceGetArchitecture, pynvml.nvmlDeviceGetCudaComputeCapability,
        pynvml.nvmlDeviceGetMemoryInfo, lambda h: pynvml.nvmlDeviceGetMemoryInfo(h, version=pynvml.nvmlMemory_v2),
        lambda h: pynvml.nvmlDeviceGetTemperature(h, 0),
        lambda h: pynvml.nvmlDeviceGetTemperatureThreshold(h, 1), pynvml.nvmlDeviceGetPowerUsage,
        pynvml.nvmlDeviceGetPowerManagementLimit, pynvml.nvmlDeviceGetEnforcedPowerLimit,
        pynvml.nvmlDeviceGetPowerManagementLimitConstraints, pynvml.nvmlDeviceGetPowerManagementDefaultLimit,
        pynvml.nvmlDeviceGetUtilizationRates, pynvml.nvmlDeviceGetPersistenceMode, pynvml.nvmlDeviceGetComputeMode,
        pynvml.nvmlDeviceGetEccMode, lambda h: pynvml.nvmlDeviceGetTotalEccErrors(h, 0, 0),
        pynvml.nvmlDeviceGetRemappedRows, pynvml.nvmlDeviceGetRetiredPagesPendingStatus,
        pynvml.nvmlDeviceGetCurrentClocksEventReasons, pynvml.nvmlDeviceGetCurrentClocksThrottleReasons,
        lambda h: pynvml.nvmlDeviceGetClockInfo(h, 0), lambda h: pynvml.nvmlDeviceGetMaxClockInfo(h, 2),
        pynvml.nvmlDeviceGetSupportedMemoryClocks, lambda h: pynvml.nvmlDeviceGetSupportedGraphicsClocks(h, 2619),
        pynvml.nvmlDeviceGetCurrPcieLinkGeneration, pynvml.nvmlDeviceGetMaxPcieLinkGeneration,
        pynvml.nvmlDeviceGetCurrPcieLinkWidth, pynvml.nvmlDeviceGetMaxPcieLinkWidth, pynvml.nvmlDeviceGetNumFans,
        pynvml.nvmlDeviceGetFanSpeed, lambda h: pynvml.nvmlDeviceGetFanSpeed_v2(h, 0), pynvml.nvmlDeviceGetNumaNodeId,
        pynvml.nvmlDeviceGetMigMode, pynvml.nvmlDeviceGetMaxMigDeviceCount, mig_devices,
        lambda h: pynvml.nvmlDeviceGetNvLinkState(h, 0), lambda h: pynvml.nvmlDeviceGetNvLinkRemotePciInfo(h, 0),
        lambda h: pynvml.nvmlDeviceGetNvLinkRemoteDeviceType(h, 0), pynvml.nvmlDeviceGetComputeRunningProcesses_v3,
        lambda h: pynvml.nvmlDeviceGetTopologyCommonAncestor(h, handle(0)),
        lambda h: pynvml.nvmlDeviceGetCpuAffinity(h, 4), pynvml.nvmlDeviceGetGraphicsRunningProcesses_v3,
        lambda h: pynvml.nvmlDeviceGetProcessUtilization(h, 0), lambda h: pynvml.nvmlDeviceGetApplicationsClock(h, 0),
    ]
    for call in calls:
        try:
            call(h)
        except (pynvml.NVMLError, pynvml.NVMLLibraryMismatchError):
            pass


NVML_STARTS = [n for n in ALL_FIXTURES if n not in ("driver-not-loaded.conf", "driver-mismatch.conf")]


@pytest.mark.parametrize("name", NVML_STARTS)
def test_getters_never_modify_the_fixture(nvml, name):
    path = nvml(name)
    before = snapshot(path)
    pynvml.nvmlSystemGetDriverVersion()
    for i in range(pynvml.nvmlDeviceGetCount()):
        read_everything(handle(i))
    assert snapshot(path) == before


# --------------------------------------------------------------------------- loading


def test_soname_lookup_through_ld_library_path():
    subprocess.run([str(BUILD_SH), str(BUILD_DIR)], check=True)
    code = "import pynvml; pynvml.nvmlInit(); print(pynvml.nvmlSystemGetDriverVersion())"
    env = dict(os.environ, LD_LIBRARY_PATH=str(BUILD_DIR), FAKE_NVML_FIXTURE=str(FIXTURES / "dgx-h100.conf"))
    env.pop("LD_PRELOAD", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "550.54.15"


@pytest.mark.skipif(ctypes.util.find_library("nvidia-ml") is not None, reason="a real libnvidia-ml is installed")
def test_without_the_library_pynvml_reports_library_not_found():
    code = (
        "import pynvml\n"
        "try:\n"
        "    pynvml.nvmlInit()\n"
        "except pynvml.NVMLError_LibraryNotFound:\n"
        "    print('library not found')\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "FAKE_NVML_FIXTURE")}
    env["LD_LIBRARY_PATH"] = ""
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "library not found"


def test_build_is_incremental_and_quiet(tmp_path):
    out = tmp_path / "lib"
    first = subprocess.run([str(BUILD_SH), str(out)], capture_output=True, text=True, check=True)
    built = (out / "libnvidia-ml.so.1").stat().st_mtime_ns
    second = subprocess.run([str(BUILD_SH), str(out)], capture_output=True, text=True, check=True)
    assert first.stdout == first.stderr == second.stdout == second.stderr == ""
    assert (out / "libnvidia-ml.so.1").stat().st_mtime_ns == built
