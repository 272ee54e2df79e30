"""The entry points Slurm's gpu/nvml plugin (src/plugins/gpu/nvml/gpu_nvml.c) calls beyond inventory, in the fake
libnvidia-ml.so.1, driven through the real pynvml (nvidia-ml-py): CPU affinity (gres.conf AutoDetect=nvml), graphics
processes and per-process utilization (job accounting), locked memory and graphics clocks (--gpu-freq on a Slurm
built with HAVE_NVML_MEMORY_CLOCK) and applications clocks (--gpu-freq without it).
"""

import ctypes
import os
import pathlib
import time

import pynvml
import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "sim" / "nvml" / "fixtures"
MIB = 1024 * 1024
WORD = 64  # bits in an unsigned long on x86_64 and aarch64 Linux


@pytest.fixture
def nvml(tmp_path, monkeypatch, lib):
    """Initialise pynvml on a copy of a fixture (None: an empty one) plus extra lines; returns the copy's path."""

    def start(name, *extra_lines):
        path = tmp_path / "nvml.conf"
        text = (FIXTURES / name).read_text() if name else ""
        path.write_text(text + "".join(line + "\n" for line in extra_lines))
        monkeypatch.setenv("FAKE_NVML_FIXTURE", str(path))
        pynvml.nvmlInit()
        return path

    return start


def handle(i=0):
    return pynvml.nvmlDeviceGetHandleByIndex(i)


def reinit():
    pynvml.nvmlShutdown()
    pynvml.nvmlInit()


def snapshot(path):
    st = os.stat(path)
    return path.read_bytes(), st.st_ino, st.st_mtime_ns


def cpus(words):
    """The CPU numbers whose bits are set in an NVML cpuSet (a sequence of unsigned longs)."""
    return {index * WORD + bit for index, word in enumerate(words) for bit in range(WORD) if word >> bit & 1}


def cpu_range(first, last):
    return set(range(first, last + 1))


def now_us():
    return time.time_ns() // 1000


# --------------------------------------------------------------------------- CPU affinity


H100_NODE0 = cpu_range(0, 55) | cpu_range(112, 167)
H100_NODE1 = cpu_range(56, 111) | cpu_range(168, 223)


def test_dgx_h100_cpu_affinity_is_the_gpus_numa_node(nvml):
    nvml("dgx-h100.conf")
    # slurmd passes 512 words (MAX_CPUS 0x8000); pynvml sizes the array from the argument
    for i in range(8):
        assert cpus(pynvml.nvmlDeviceGetCpuAffinity(handle(i), 512)) == (H100_NODE0 if i < 4 else H100_NODE1)
    assert list(pynvml.nvmlDeviceGetCpuAffinity(handle(0), 4)) == [
        0x00FFFFFFFFFFFFFF, 0xFFFF000000000000, 0x000000FFFFFFFFFF, 0]
    assert list(pynvml.nvmlDeviceGetCpuAffinity(handle(4), 4)) == [
        0xFF00000000000000, 0x0000FFFFFFFFFFFF, 0xFFFFFF0000000000, 0x00000000FFFFFFFF]


def test_l40s_cpu_affinity(nvml):
    nvml("pcie-l40s.conf")
    assert cpus(pynvml.nvmlDeviceGetCpuAffinity(handle(0), 2)) == cpu_range(0, 31) | cpu_range(64, 95)
    assert cpus(pynvml.nvmlDeviceGetCpuAffinity(handle(1), 2)) == cpu_range(32, 63) | cpu_range(96, 127)


def test_cpus_past_cpu_set_size_are_left_out(nvml, lib):
    nvml("dgx-h100.conf")
    assert cpus(pynvml.nvmlDeviceGetCpuAffinity(handle(0), 2)) == cpu_range(0, 55) | cpu_range(112, 127)
    assert cpus(pynvml.nvmlDeviceGetCpuAffinity(handle(4), 1)) == cpu_range(56, 63)
    fn = lib.nvmlDeviceGetCpuAffinity
    fn.argtypes = [pynvml.c_nvmlDevice_t, ctypes.c_uint, ctypes.c_void_p]
    words = (ctypes.c_ulong * 4)(*([0xAAAAAAAAAAAAAAAA] * 4))
    assert fn(handle(0), 2, words) == pynvml.NVML_SUCCESS
    assert list(words) == [0x00FFFFFFFFFFFFFF, 0xFFFF000000000000, 0xAAAAAAAAAAAAAAAA, 0xAAAAAAAAAAAAAAAA]
    assert fn(handle(0), 0, words) == pynvml.NVML_ERROR_INVALID_ARGUMENT
    assert fn(handle(0), 4, None) == pynvml.NVML_ERROR_INVALID_ARGUMENT


def test_per_gpu_cpu_affinity_overrides_the_numa_node(nvml):
    nvml("dgx-h100.conf", "gpu.1.cpu_affinity=0-3, 112-115", "gpu.*.cpu_affinity=200")
    assert cpus(pynvml.nvmlDeviceGetCpuAffinity(handle(1), 4)) == cpu_range(0, 3) | cpu_range(112, 115)
    assert cpus(pynvml.nvmlDeviceGetCpuAffinity(handle(6), 4)) == {200}


@pytest.mark.parametrize(("scope", "expected"), [(0, H100_NODE1), (1, H100_NODE1)])
def test_cpu_affinity_within_scope(nvml, scope, expected):
    nvml("dgx-h100.conf")
    assert cpus(pynvml.nvmlDeviceGetCpuAffinityWithinScope(handle(5), 4, scope)) == expected


def test_cpu_affinity_scope_out_of_range_is_invalid(nvml):
    nvml("dgx-h100.conf")
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlDeviceGetCpuAffinityWithinScope(handle(5), 4, 2)


@pytest.mark.parametrize(
    ("name", "extra"),
    [
        pytest.param("busy.conf", ("gpu.0.numa_node=1",), id="numa-node-without-cpus"),
        pytest.param(None, ("gpu_count=1", "numa.0.cpus=0-7"), id="no-numa-node"),
        pytest.param("dgx-h100.conf", ("gpu.0.numa_node=-1",), id="numa-node-unknown"),
    ],
)
def test_cpu_affinity_without_cpus_is_not_supported(nvml, name, extra):
    nvml(name, *extra)
    with pytest.raises(pynvml.NVMLError_NotSupported):
        pynvml.nvmlDeviceGetCpuAffinity(handle(0), 4)


@pytest.mark.parametrize("value", ["", "0-", "-3", "7-3", "0,,4", "0-3,x", "0-3:2"])
def test_malformed_cpu_list_is_unknown(nvml, value):
    nvml("dgx-h100.conf", "numa.0.cpus=" + value)
    with pytest.raises(pynvml.NVMLError_Unknown):
        pynvml.nvmlDeviceGetCpuAffinity(handle(0), 4)
    assert cpus(pynvml.nvmlDeviceGetCpuAffinity(handle(4), 4)) == H100_NODE1


# --------------------------------------------------------------------------- graphics processes


DISPLAY = (
    "gpu.0.graphics_process.count=2",
    "gpu.0.graphics_process.0.pid=1811",
    "gpu.0.graphics_process.0.name=/usr/lib/xorg/Xorg",
    "gpu.0.graphics_process.0.used_mib=45",
    "gpu.0.graphics_process.1.pid=2290",
    "gpu.0.graphics_process.1.name=/usr/bin/gnome-shell",
)


def test_no_graphics_process_key_lists_none(nvml):
    nvml("dgx-h100.conf")
    for call in (pynvml.nvmlDeviceGetGraphicsRunningProcesses, pynvml.nvmlDeviceGetGraphicsRunningProcesses_v2):
        assert call(handle(0)) == []


def test_graphics_processes(nvml):
    nvml("busy.conf", *DISPLAY)
    procs = pynvml.nvmlDeviceGetGraphicsRunningProcesses(handle(0))
    assert [(p.pid, p.usedGpuMemory) for p in procs] == [(1811, 45 * MIB), (2290, None)]
    assert procs[0].gpuInstanceId == procs[0].computeInstanceId == 0xFFFFFFFF
    assert [p.pid for p in pynvml.nvmlDeviceGetGraphicsRunningProcesses_v2(handle(0))] == [1811, 2290]
    assert pynvml.nvmlSystemGetProcessName(2290) == "/usr/bin/gnome-shell"
    assert [p.pid for p in pynvml.nvmlDeviceGetComputeRunningProcesses(handle(0))] == [21347, 21590]
    assert pynvml.nvmlDeviceGetGraphicsRunningProcesses(handle(1)) == []


def test_graphics_processes_without_compute_processes(nvml):
    nvml(None, "gpu_count=1", *DISPLAY)
    assert len(pynvml.nvmlDeviceGetGraphicsRunningProcesses(handle(0))) == 2
    with pytest.raises(pynvml.NVMLError_NotSupported):
        pynvml.nvmlDeviceGetComputeRunningProcesses(handle(0))


def test_graphics_process_size_protocol(nvml, lib):
    nvml("busy.conf", *DISPLAY)
    fn = lib.nvmlDeviceGetGraphicsRunningProcesses_v3
    fn.argtypes = [pynvml.c_nvmlDevice_t, ctypes.c_void_p, ctypes.c_void_p]
    count = ctypes.c_uint(0)
    assert fn(handle(0), ctypes.byref(count), None) == pynvml.NVML_ERROR_INSUFFICIENT_SIZE
    assert count.value == 2
    buf = (pynvml.c_nvmlProcessInfo_v3_t * 2)()
    assert fn(handle(0), ctypes.byref(count), buf) == pynvml.NVML_SUCCESS
    assert [p.pid for p in buf] == [1811, 2290]
    assert fn(handle(0), None, buf) == pynvml.NVML_ERROR_INVALID_ARGUMENT
    count.value = 0
    assert fn(handle(1), ctypes.byref(count), None) == pynvml.NVML_SUCCESS
    assert count.value == 0


def test_graphics_processes_of_a_mig_device(nvml):
    nvml("dgx-a100-mig.conf", "gpu.1.graphics_process.count=1", "gpu.1.graphics_process.0.pid=1811")
    mig = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(handle(1), 0)
    assert pynvml.nvmlDeviceGetGraphicsRunningProcesses(mig) == []
    assert [p.pid for p in pynvml.nvmlDeviceGetGraphicsRunningProcesses(handle(1))] == [1811]


# --------------------------------------------------------------------------- per-process utilization


BUSY_SAMPLES = (
    "gpu.0.process.0.sm_util=97",
    "gpu.0.process.0.mem_util=61",
    "gpu.0.process.1.sm_util=3",
    "gpu.0.process.1.enc_util=12",
    "gpu.0.process.1.util_timestamp_us=1700000000000000",
)


def test_process_utilization_without_samples_is_not_found(nvml, lib):
    nvml("busy.conf")
    with pytest.raises(pynvml.NVMLError_NotFound):
        pynvml.nvmlDeviceGetProcessUtilization(handle(0), 0)
    # the size query of an idle GPU still asks for room, as NVML's does; the read then finds nothing
    fn = lib.nvmlDeviceGetProcessUtilization
    fn.argtypes = [pynvml.c_nvmlDevice_t, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_ulonglong]
    count = ctypes.c_uint(0)
    assert fn(handle(1), None, ctypes.byref(count), 0) == pynvml.NVML_ERROR_INSUFFICIENT_SIZE
    assert count.value == 1
    buf = (pynvml.c_nvmlProcessUtilizationSample_t * 1)()
    assert fn(handle(1), buf, ctypes.byref(count), 0) == pynvml.NVML_ERROR_NOT_FOUND


def test_process_utilization_samples(nvml):
    nvml("busy.conf", *BUSY_SAMPLES)
    before = now_us()
    samples = pynvml.nvmlDeviceGetProcessUtilization(handle(0), 0)
    after = now_us()
    assert [(s.pid, s.smUtil, s.memUtil, s.encUtil, s.decUtil) for s in samples] == [
        (21347, 97, 61, 0, 0), (21590, 3, 0, 12, 0)]
    assert before <= samples[0].timeStamp <= after  # no util_timestamp_us: stamped at the call
    assert samples[1].timeStamp == 1700000000000000
    with pytest.raises(pynvml.NVMLError_NotFound):
        pynvml.nvmlDeviceGetProcessUtilization(handle(1), 0)


def test_process_utilization_since_last_seen(nvml):
    nvml("busy.conf", *BUSY_SAMPLES)
    newer = pynvml.nvmlDeviceGetProcessUtilization(handle(0), 1700000000000000)
    assert [s.pid for s in newer] == [21347]
    again = pynvml.nvmlDeviceGetProcessUtilization(handle(0), newer[0].timeStamp)
    assert [s.pid for s in again] == [21347] and again[0].timeStamp > newer[0].timeStamp
    with pytest.raises(pynvml.NVMLError_NotFound):
        pynvml.nvmlDeviceGetProcessUtilization(handle(0), now_us() + 3600 * 1000000)


def test_process_utilization_the_way_slurmstepd_reads_it(nvml, lib):
    """gpu_nvml.c _get_gpuutil(): a size query with NULL, then the read into that many samples."""
    nvml("busy.conf", *BUSY_SAMPLES)
    fn = lib.nvmlDeviceGetProcessUtilization
    fn.argtypes = [pynvml.c_nvmlDevice_t, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_ulonglong]
    count = ctypes.c_uint(0)
    assert fn(handle(0), None, ctypes.byref(count), 0) == pynvml.NVML_ERROR_INSUFFICIENT_SIZE
    assert count.value == 2
    buf = (pynvml.c_nvmlProcessUtilizationSample_t * 2)()
    count.value = 1
    assert fn(handle(0), buf, ctypes.byref(count), 0) == pynvml.NVML_ERROR_INSUFFICIENT_SIZE
    assert count.value == 2
    assert fn(handle(0), buf, ctypes.byref(count), 0) == pynvml.NVML_SUCCESS
    assert (count.value, buf[0].pid, buf[0].smUtil, buf[1].pid) == (2, 21347, 97, 21590)
    assert fn(handle(0), buf, None, 0) == pynvml.NVML_ERROR_INVALID_ARGUMENT


# A Slurm job's processes on its GPUs (molecule's slurm verification, docs/slurm.md): the job writes its pid to a file
# that the fixture names, and slurmstepd, whose NVML was initialised before the job started, sees the process from
# then on at every read, until the process ends.
JOB_ON_TWO_GPUS = (
    "gpu.0.process.count=1", "gpu.0.process.0.used_mib=2048", "gpu.0.process.0.sm_util=80",
    "gpu.0.process.0.mem_util=35",
    "gpu.1.process.count=1", "gpu.1.process.0.used_mib=1024", "gpu.1.process.0.sm_util=40",
    "gpu.1.process.0.mem_util=10",
)


def job_lines(pid_file):
    return (*JOB_ON_TWO_GPUS, "gpu.0.process.0.pid_file=%s" % pid_file, "gpu.1.process.0.pid_file=%s" % pid_file)


def test_a_pid_file_lists_the_process_only_while_it_runs(nvml, tmp_path):
    pid_file = tmp_path / "job.pid"
    nvml("dgx-h100.conf", *job_lines(pid_file))
    # No file yet (the job has not started): nothing runs, no sample, the GPU is idle.
    assert pynvml.nvmlDeviceGetComputeRunningProcesses(handle(0)) == []
    with pytest.raises(pynvml.NVMLError_NotFound):
        pynvml.nvmlDeviceGetProcessUtilization(handle(0), 0)
    # The job starts: the same initialised library lists it from the next call on, with the fixture's use.
    pid_file.write_text("%d\n" % os.getpid())
    for gpu, mib, sm, mem in ((0, 2048, 80, 35), (1, 1024, 40, 10)):
        procs = pynvml.nvmlDeviceGetComputeRunningProcesses(handle(gpu))
        assert [(p.pid, p.usedGpuMemory) for p in procs] == [(os.getpid(), mib * MIB)]
        samples = pynvml.nvmlDeviceGetProcessUtilization(handle(gpu), 0)
        assert [(s.pid, s.smUtil, s.memUtil) for s in samples] == [(os.getpid(), sm, mem)]
    assert pynvml.nvmlDeviceGetComputeRunningProcesses(handle(2)) == []
    # The job ends (its pid runs no more), or the file is emptied or holds no number: listed no longer.
    for text in ("4194304\n", "", "not-a-pid\n", "0\n"):
        pid_file.write_text(text)
        assert pynvml.nvmlDeviceGetComputeRunningProcesses(handle(0)) == []
        with pytest.raises(pynvml.NVMLError_NotFound):
            pynvml.nvmlDeviceGetProcessUtilization(handle(0), 0)


def test_a_pid_file_the_way_slurmstepd_reads_a_jobs_use(nvml, lib, tmp_path):
    """gpu_nvml.c gpu_p_usage_read(pid) of Slurm 24.11: for every GPU NVML counts, the compute and the graphics lists
    (size query with 0 and NULL, then the read) add up usedGpuMemory of the entry whose pid is the job's, and the
    utilisation samples (size query with NULL, then the read) add up smUtil; gres/gpumem and gres/gpuutil of the task
    are those sums: 3 GiB and 120 here."""
    pid_file = tmp_path / "job.pid"
    nvml("dgx-h100.conf", *job_lines(pid_file))
    pid_file.write_text("%d\n" % os.getpid())
    procs = lib.nvmlDeviceGetComputeRunningProcesses_v3
    graphics = lib.nvmlDeviceGetGraphicsRunningProcesses_v3
    util = lib.nvmlDeviceGetProcessUtilization
    for fn in (procs, graphics):
        fn.argtypes = [pynvml.c_nvmlDevice_t, ctypes.c_void_p, ctypes.c_void_p]
    util.argtypes = [pynvml.c_nvmlDevice_t, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_ulonglong]
    count = ctypes.c_uint(0)
    assert lib.nvmlDeviceGetCount_v2(ctypes.byref(count)) == pynvml.NVML_SUCCESS
    gpumem = gpuutil = 0
    for gpu in range(count.value):
        device = handle(gpu)
        for fn in (procs, graphics):
            n = ctypes.c_uint(0)
            rc = fn(device, ctypes.byref(n), None)
            assert rc in (pynvml.NVML_SUCCESS, pynvml.NVML_ERROR_INSUFFICIENT_SIZE)
            if n.value:
                infos = (pynvml.c_nvmlProcessInfo_v3_t * n.value)()
                assert fn(device, ctypes.byref(n), infos) == pynvml.NVML_SUCCESS
                gpumem += sum(info.usedGpuMemory for info in infos[:n.value] if info.pid == os.getpid())
        n = ctypes.c_uint(0)
        rc = util(device, None, ctypes.byref(n), 0)
        if rc == pynvml.NVML_SUCCESS or not n.value:
            continue
        assert rc == pynvml.NVML_ERROR_INSUFFICIENT_SIZE
        samples = (pynvml.c_nvmlProcessUtilizationSample_t * n.value)()
        rc = util(device, samples, ctypes.byref(n), 0)
        if rc == pynvml.NVML_ERROR_NOT_FOUND:
            continue
        assert rc == pynvml.NVML_SUCCESS
        gpuutil += sum(sample.smUtil for sample in samples[:n.value] if sample.pid == os.getpid())
    assert (gpumem, gpuutil) == (3072 * MIB, 120)


def test_a_pid_file_names_the_process_while_it_runs(nvml, tmp_path):
    pid_file = tmp_path / "job.pid"
    nvml("dgx-h100.conf", *job_lines(pid_file), "gpu.0.process.0.name=python3")
    with pytest.raises(pynvml.NVMLError_NotFound):
        pynvml.nvmlSystemGetProcessName(os.getpid())
    pid_file.write_text(str(os.getpid()))
    assert pynvml.nvmlSystemGetProcessName(os.getpid()) in ("python3", b"python3")


def test_graphics_processes_have_samples_once_per_pid(nvml):
    nvml("busy.conf", *DISPLAY, "gpu.0.graphics_process.0.sm_util=4", "gpu.0.graphics_process.1.pid=21347",
         "gpu.0.graphics_process.1.sm_util=50", "gpu.0.process.0.sm_util=90")
    samples = pynvml.nvmlDeviceGetProcessUtilization(handle(0), 0)
    assert [(s.pid, s.smUtil) for s in samples] == [(21347, 90), (1811, 4)]


@pytest.mark.parametrize("value", ["101", "x", "-1"])
def test_malformed_utilization_is_unknown(nvml, value):
    nvml("busy.conf", "gpu.0.process.0.sm_util=" + value)
    with pytest.raises(pynvml.NVMLError_Unknown):
        pynvml.nvmlDeviceGetProcessUtilization(handle(0), 0)


# --------------------------------------------------------------------------- applications clocks


GRAPHICS, SM, MEM, VIDEO = pynvml.NVML_CLOCK_GRAPHICS, pynvml.NVML_CLOCK_SM, pynvml.NVML_CLOCK_MEM, 3


def app_clocks(h):
    return [pynvml.nvmlDeviceGetApplicationsClock(h, t) for t in (GRAPHICS, SM, MEM)]


def test_applications_clocks_default_to_the_maximum(nvml):
    nvml("dgx-h100.conf")
    assert app_clocks(handle(2)) == [1980, 1980, 2619]
    assert [pynvml.nvmlDeviceGetDefaultApplicationsClock(handle(2), t) for t in (GRAPHICS, MEM)] == [1980, 2619]
    with pytest.raises(pynvml.NVMLError_NotSupported):
        pynvml.nvmlDeviceGetApplicationsClock(handle(2), VIDEO)
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlDeviceGetApplicationsClock(handle(2), 4)


def test_applications_clocks_board_defaults(nvml):
    nvml("dgx-a100-mig.conf", "gpu.*.clocks.default_applications_graphics_mhz=1275",
         "gpu.*.clocks.default_applications_mem_mhz=1593")
    assert app_clocks(handle(3)) == [1275, 1275, 1593]
    assert pynvml.nvmlDeviceGetMaxClockInfo(handle(3), GRAPHICS) == 1410


def test_set_and_reset_applications_clocks(nvml):
    path = nvml("dgx-h100.conf")
    original = path.read_text()
    mode = os.stat(path).st_mode
    pynvml.nvmlDeviceSetApplicationsClocks(handle(3), 2619, 1410)
    assert app_clocks(handle(3)) == [1410, 1410, 2619]
    assert app_clocks(handle(2)) == [1980, 1980, 2619]
    assert pynvml.nvmlDeviceGetDefaultApplicationsClock(handle(3), GRAPHICS) == 1980
    assert path.read_text().splitlines()[-2:] == [
        "gpu.3.clocks.applications_graphics_mhz=1410", "gpu.3.clocks.applications_mem_mhz=2619"]
    assert os.stat(path).st_mode == mode
    reinit()  # the next process sees the same clocks
    assert app_clocks(handle(3)) == [1410, 1410, 2619]
    pynvml.nvmlDeviceSetApplicationsClocks(handle(3), 2619, 1755)
    assert path.read_text().count("applications_graphics_mhz") == 1
    pynvml.nvmlDeviceResetApplicationsClocks(handle(3))
    assert app_clocks(handle(3)) == [1980, 1980, 2619]
    assert path.read_text() == original


APPLICATIONS_REJECTED = [
    # fixture, a pair set first (memory, graphics), the pair refused
    pytest.param("dgx-h100.conf", (2619, 1410), (2619, 1979), id="graphics-off-grid"),
    pytest.param("dgx-h100.conf", (2619, 1410), (2619, 1995), id="graphics-above-highest"),
    pytest.param("dgx-h100.conf", (2619, 1410), (2619, 330), id="graphics-below-lowest"),
    pytest.param("dgx-h100.conf", (2619, 1410), (1593, 1410), id="memory-not-listed"),
    pytest.param("dgx-h100.conf", (2619, 1410), (0, 1410), id="memory-zero"),
    pytest.param("dgx-h100.conf", (2619, 1410), (2619, 0), id="graphics-zero"),
    pytest.param("pcie-l40s.conf", (9001, 1695), (405, 2520), id="l40s-memory-not-listed"),
    pytest.param("old-driver.conf", (877, 1312), (878, 1312), id="no-list-memory-above-max"),
    pytest.param("old-driver.conf", (877, 1312), (877, 1531), id="no-list-graphics-above-max"),
]


@pytest.mark.parametrize(("name", "accepted", "refused"), APPLICATIONS_REJECTED)
def test_unsupported_applications_clocks_are_refused_and_change_nothing(nvml, name, accepted, refused):
    path = nvml(name)
    pynvml.nvmlDeviceSetApplicationsClocks(handle(1), *accepted)
    before = snapshot(path)
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlDeviceSetApplicationsClocks(handle(1), *refused)
    assert snapshot(path) == before
    assert app_clocks(handle(1)) == [accepted[1], accepted[1], accepted[0]]


def test_applications_clocks_without_supported_lists_use_the_maximum(nvml):
    path = nvml("old-driver.conf")  # V100, R470: clocks.max_graphics_mhz=1530, max_mem_mhz=877, no lists
    pynvml.nvmlDeviceSetApplicationsClocks(handle(5), 877, 1312)
    assert app_clocks(handle(5)) == [1312, 1312, 877]
    assert "gpu.5.clocks.applications_graphics_mhz=1312" in path.read_text()


def test_applications_clocks_absent_are_not_supported(nvml):
    path = nvml(None, "gpu_count=1", "gpu.0.name=Bare GPU")
    before = snapshot(path)
    for call in (
        lambda h: pynvml.nvmlDeviceGetApplicationsClock(h, GRAPHICS),
        lambda h: pynvml.nvmlDeviceGetApplicationsClock(h, MEM),
        lambda h: pynvml.nvmlDeviceGetDefaultApplicationsClock(h, GRAPHICS),
        lambda h: pynvml.nvmlDeviceSetApplicationsClocks(h, 2619, 1410),
        pynvml.nvmlDeviceResetApplicationsClocks,
    ):
        with pytest.raises(pynvml.NVMLError_NotSupported):
            call(handle(0))
    assert snapshot(path) == before


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda h: pynvml.nvmlDeviceSetApplicationsClocks(h, 2619, 1410), id="set-applications"),
        pytest.param(pynvml.nvmlDeviceResetApplicationsClocks, id="reset-applications"),
        pytest.param(lambda h: pynvml.nvmlDeviceSetMemoryLockedClocks(h, 2619, 2619), id="lock-memory"),
        pytest.param(pynvml.nvmlDeviceResetMemoryLockedClocks, id="unlock-memory"),
    ],
)
def test_clock_setters_error(nvml, call):
    path = nvml("dgx-h100.conf", "setters_error=NO_PERMISSION")
    before = snapshot(path)
    with pytest.raises(pynvml.NVMLError_NoPermission):
        call(handle(0))
    assert snapshot(path) == before


def test_gpu_freq_the_way_slurmd_sets_it(nvml):
    """gpu_nvml.c without nvmlDeviceSetMemoryLockedClocks: the nearest supported pair, set, read back, reset."""
    nvml("pcie-l40s.conf")
    h = handle(1)
    memory = pynvml.nvmlDeviceGetSupportedMemoryClocks(h)[0]
    graphics = min(pynvml.nvmlDeviceGetSupportedGraphicsClocks(h, memory), key=lambda clock: abs(clock - 1700))
    pynvml.nvmlDeviceSetApplicationsClocks(h, memory, graphics)
    assert (pynvml.nvmlDeviceGetApplicationsClock(h, GRAPHICS), pynvml.nvmlDeviceGetApplicationsClock(h, MEM)) == (
        1695, 9001)
    pynvml.nvmlDeviceResetApplicationsClocks(h)
    assert app_clocks(h) == [2520, 2520, 9001]


# --------------------------------------------------------------------------- locked memory clocks


GDDR_MEMORY_CLOCKS = "gpu.*.clocks.supported_mem_mhz=9001,5001,810,405"  # as a GDDR6 board lists them
LOCKED_KEYS = ("locked_min_mhz", "locked_max_mhz", "locked_mem_min_mhz", "locked_mem_max_mhz")


def locked_clocks(path, gpu):
    """The GPU's locked clocks in the fixture, as ints: graphics min and max, memory min and max (None: unset)."""
    values = dict(line.split("=", 1) for line in path.read_text().splitlines()
                  if "=" in line and not line.startswith("#"))
    return tuple(int(v) if v else None for v in (values.get("gpu.%d.clocks.%s" % (gpu, k)) for k in LOCKED_KEYS))


def test_lock_and_unlock_memory_clocks(nvml):
    path = nvml("pcie-l40s.conf", GDDR_MEMORY_CLOCKS)
    original = path.read_text()
    mode = os.stat(path).st_mode
    pynvml.nvmlDeviceSetMemoryLockedClocks(handle(1), 810, 9001)
    assert locked_clocks(path, 1) == (None, None, 810, 9001)
    assert locked_clocks(path, 0) == (None, None, None, None)
    assert path.read_text().splitlines()[-2:] == [
        "gpu.1.clocks.locked_mem_min_mhz=810", "gpu.1.clocks.locked_mem_max_mhz=9001"]
    assert os.stat(path).st_mode == mode
    pynvml.nvmlDeviceSetMemoryLockedClocks(handle(1), 405, 405)
    assert path.read_text().count("locked_mem_min_mhz") == 1
    assert locked_clocks(path, 1) == (None, None, 405, 405)
    pynvml.nvmlDeviceResetMemoryLockedClocks(handle(1))
    assert path.read_text() == original
    pynvml.nvmlDeviceResetMemoryLockedClocks(handle(1))  # nothing locked: still SUCCESS, nothing written
    assert path.read_text() == original


def test_memory_and_graphics_locks_are_separate(nvml):
    path = nvml("dgx-h100.conf")
    original = path.read_text()
    pynvml.nvmlDeviceSetGpuLockedClocks(handle(4), 1410, 1410)
    pynvml.nvmlDeviceSetMemoryLockedClocks(handle(4), 2619, 2619)
    assert locked_clocks(path, 4) == (1410, 1410, 2619, 2619)
    pynvml.nvmlDeviceResetMemoryLockedClocks(handle(4))
    assert locked_clocks(path, 4) == (1410, 1410, None, None)
    pynvml.nvmlDeviceSetMemoryLockedClocks(handle(4), 2619, 2619)
    pynvml.nvmlDeviceResetGpuLockedClocks(handle(4))
    assert locked_clocks(path, 4) == (None, None, 2619, 2619)
    pynvml.nvmlDeviceResetMemoryLockedClocks(handle(4))
    assert path.read_text() == original


MEMORY_LOCK_REJECTED = [
    # fixture, extra lines, a pair locked first (min, max), the pair refused
    pytest.param("dgx-h100.conf", (), (2619, 2619), (2619, 2620), id="max-not-listed"),
    pytest.param("dgx-h100.conf", (), (2619, 2619), (1593, 2619), id="min-not-listed"),
    pytest.param("dgx-h100.conf", (), (2619, 2619), (0, 2619), id="min-zero"),
    pytest.param("pcie-l40s.conf", (GDDR_MEMORY_CLOCKS,), (405, 9001), (9001, 405), id="min-above-max"),
    pytest.param("pcie-l40s.conf", (GDDR_MEMORY_CLOCKS,), (405, 9001), (405, 5000), id="max-off-list"),
    pytest.param("old-driver.conf", (), (810, 877), (810, 878), id="no-list-above-max-mem"),
    pytest.param("old-driver.conf", (), (810, 877), (877, 810), id="no-list-min-above-max"),
]


@pytest.mark.parametrize(("name", "extra", "accepted", "refused"), MEMORY_LOCK_REJECTED)
def test_unsupported_memory_locks_are_refused_and_change_nothing(nvml, name, extra, accepted, refused):
    path = nvml(name, *extra)
    pynvml.nvmlDeviceSetMemoryLockedClocks(handle(1), *accepted)
    before = snapshot(path)
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlDeviceSetMemoryLockedClocks(handle(1), *refused)
    assert snapshot(path) == before
    assert locked_clocks(path, 1)[2:] == accepted


def test_memory_locks_without_a_list_only_need_max_mem(nvml):
    path = nvml("old-driver.conf")  # V100, R470: clocks.max_mem_mhz=877, no supported clocks
    with pytest.raises(pynvml.NVMLError_NotSupported):
        pynvml.nvmlDeviceGetSupportedMemoryClocks(handle(6))
    pynvml.nvmlDeviceSetMemoryLockedClocks(handle(6), 0, 877)
    assert locked_clocks(path, 6) == (None, None, 0, 877)


def test_memory_locks_with_only_a_list(nvml):
    path = nvml(None, "gpu_count=1", "gpu.0.clocks.supported_mem_mhz=5001,9001")
    original = path.read_text()
    pynvml.nvmlDeviceSetMemoryLockedClocks(handle(0), 5001, 9001)
    assert locked_clocks(path, 0) == (None, None, 5001, 9001)
    pynvml.nvmlDeviceResetMemoryLockedClocks(handle(0))
    assert path.read_text() == original


def test_memory_locks_absent_are_not_supported(nvml):
    path = nvml(None, "gpu_count=1", "gpu.0.name=Bare GPU", "gpu.0.clocks.max_graphics_mhz=1980")
    before = snapshot(path)
    for call in (lambda h: pynvml.nvmlDeviceSetMemoryLockedClocks(h, 2619, 2619),
                 pynvml.nvmlDeviceResetMemoryLockedClocks):
        with pytest.raises(pynvml.NVMLError_NotSupported):
            call(handle(0))
    assert snapshot(path) == before


@pytest.mark.parametrize("value", ["fast", "2619,,1593", "1593-2619/1026"])
def test_malformed_supported_memory_clocks_are_unknown(nvml, value):
    path = nvml("dgx-h100.conf", "gpu.0.clocks.supported_mem_mhz=" + value)
    before = snapshot(path)
    with pytest.raises(pynvml.NVMLError_Unknown):
        pynvml.nvmlDeviceSetMemoryLockedClocks(handle(0), 2619, 2619)
    assert snapshot(path) == before


def test_gpu_freq_the_way_slurmd_locks_clocks(nvml):
    """gpu_nvml.c with nvmlDeviceSetMemoryLockedClocks (HAVE_NVML_MEMORY_CLOCK): --gpu-freq=memory=5500,1700 takes
    the nearest supported clocks, locks each at that one clock, and unlocks both when the step ends."""
    path = nvml("pcie-l40s.conf", GDDR_MEMORY_CLOCKS)
    original = path.read_text()
    h = handle(0)
    memory = min(pynvml.nvmlDeviceGetSupportedMemoryClocks(h), key=lambda clock: abs(clock - 5500))
    graphics = min(pynvml.nvmlDeviceGetSupportedGraphicsClocks(h, memory), key=lambda clock: abs(clock - 1700))
    pynvml.nvmlDeviceSetMemoryLockedClocks(h, memory, memory)
    pynvml.nvmlDeviceSetGpuLockedClocks(h, graphics, graphics)
    assert locked_clocks(path, 0) == (1695, 1695, 5001, 5001)
    pynvml.nvmlDeviceResetMemoryLockedClocks(h)
    pynvml.nvmlDeviceResetGpuLockedClocks(h)
    assert path.read_text() == original


# --------------------------------------------------------------------------- the checks every entry point makes


SETTERS = {"nvmlDeviceSetApplicationsClocks", "nvmlDeviceResetApplicationsClocks", "nvmlDeviceSetMemoryLockedClocks",
           "nvmlDeviceResetMemoryLockedClocks"}
NEW_ENTRY_POINTS = {
    "nvmlDeviceGetCpuAffinity": lambda h: pynvml.nvmlDeviceGetCpuAffinity(h, 4),
    "nvmlDeviceGetCpuAffinityWithinScope": lambda h: pynvml.nvmlDeviceGetCpuAffinityWithinScope(h, 4, 0),
    "nvmlDeviceGetGraphicsRunningProcesses_v3": pynvml.nvmlDeviceGetGraphicsRunningProcesses_v3,
    "nvmlDeviceGetGraphicsRunningProcesses_v2": pynvml.nvmlDeviceGetGraphicsRunningProcesses_v2,
    "nvmlDeviceGetProcessUtilization": lambda h: pynvml.nvmlDeviceGetProcessUtilization(h, 0),
    "nvmlDeviceGetApplicationsClock": lambda h: pynvml.nvmlDeviceGetApplicationsClock(h, GRAPHICS),
    "nvmlDeviceGetDefaultApplicationsClock": lambda h: pynvml.nvmlDeviceGetDefaultApplicationsClock(h, MEM),
    "nvmlDeviceSetApplicationsClocks": lambda h: pynvml.nvmlDeviceSetApplicationsClocks(h, 2619, 1410),
    "nvmlDeviceResetApplicationsClocks": pynvml.nvmlDeviceResetApplicationsClocks,
    "nvmlDeviceSetMemoryLockedClocks": lambda h: pynvml.nvmlDeviceSetMemoryLockedClocks(h, 2619, 2619),
    "nvmlDeviceResetMemoryLockedClocks": pynvml.nvmlDeviceResetMemoryLockedClocks,
}
ENTRY_POINT_NAMES = sorted(NEW_ENTRY_POINTS)


@pytest.mark.parametrize("symbol", ENTRY_POINT_NAMES)
def test_lost_gpu(nvml, symbol):
    path = nvml("gpu-lost.conf", "gpu.*.clocks.supported_mem_mhz=2619",
                "gpu.*.clocks.supported_graphics_mhz=345-1980/15")
    before = snapshot(path)
    with pytest.raises(pynvml.NVMLError_GpuIsLost):
        NEW_ENTRY_POINTS[symbol](handle(2))
    assert snapshot(path) == before
    if symbol == "nvmlDeviceGetProcessUtilization":  # GPU 3, on the same fixture, answers: no samples
        with pytest.raises(pynvml.NVMLError_NotFound):
            NEW_ENTRY_POINTS[symbol](handle(3))
    else:
        NEW_ENTRY_POINTS[symbol](handle(3))


@pytest.mark.parametrize("symbol", ENTRY_POINT_NAMES)
def test_dropped_symbol(nvml, symbol):
    nvml("dgx-h100.conf", "drop_symbols=" + symbol)
    with pytest.raises(pynvml.NVMLError_FunctionNotFound):
        NEW_ENTRY_POINTS[symbol](handle(0))


@pytest.mark.parametrize("symbol", ENTRY_POINT_NAMES)
def test_injected_fault(nvml, symbol):
    nvml("dgx-h100.conf", "fail.%s=1:GPU_IS_LOST" % symbol)
    with pytest.raises(pynvml.NVMLError_GpuIsLost):
        NEW_ENTRY_POINTS[symbol](handle(0))


@pytest.mark.parametrize("symbol", ENTRY_POINT_NAMES)
def test_uninitialized(nvml, symbol):
    nvml("dgx-h100.conf")
    h = handle(0)
    pynvml.nvmlShutdown()
    with pytest.raises(pynvml.NVMLError_Uninitialized):
        NEW_ENTRY_POINTS[symbol](h)


@pytest.mark.parametrize("symbol", [s for s in ENTRY_POINT_NAMES if "Graphics" not in s])
def test_mig_device_handle_is_not_supported(nvml, symbol):
    nvml("dgx-a100-mig.conf")
    mig = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(handle(0), 0)
    with pytest.raises(pynvml.NVMLError_NotSupported):
        NEW_ENTRY_POINTS[symbol](mig)


def test_getters_never_modify_the_fixture(nvml):
    path = nvml("busy.conf", *DISPLAY, *BUSY_SAMPLES)
    before = snapshot(path)
    for i in range(2):
        for symbol in sorted(set(ENTRY_POINT_NAMES) - SETTERS):
            try:
                NEW_ENTRY_POINTS[symbol](handle(i))
            except pynvml.NVMLError:
                pass
    assert snapshot(path) == before
