"""tests/sim/nvml/nvml-capture.py, the tool that makes a fixture from a real GPU node's NVML, run against the fake NVML:
a fixture captured from the fake loaded with a committed fixture must give gpu_facts the same facts as that fixture,
so that a capture from real hardware, loaded the same way, stands for that hardware."""

from __future__ import annotations

import datetime

import pynvml
import pytest

from ansible_collections.accelops.gpu.plugins.modules import gpu_facts
from simnode import load_sim_script, read_fixture

CAPTURE = load_sim_script("nvml/nvml-capture.py", "nvml_capture")
WHEN = datetime.datetime(2026, 11, 29, tzinfo=datetime.timezone.utc)
# Every fixture of a working node whose MIG instances the capture need not carry (it leaves MIG instances out).
CAPTURED = ["dgx-h100", "pcie-l40s", "busy", "old-driver", "gpu-lost", "no-gpu"]
CPU_SET_SIZE = 512  # unsigned longs, as slurmd asks nvmlDeviceGetCpuAffinity


def node_sysfs(tmp_path, fixture):
    """A /sys/devices/system/node of the machine the fixture describes: node<n>/cpulist from its numa.<n>.cpus,
    plus what a real one has beside them: a memory-only node (empty cpulist) and files that name no node."""
    root = tmp_path / "node"
    nodes = {int(key.split(".")[1]): value for key, value in read_fixture(fixture).items()
             if key.startswith("numa.") and key.endswith(".cpus")}
    for node, cpus in nodes.items():
        (root / ("node%d" % node)).mkdir(parents=True)
        (root / ("node%d" % node) / "cpulist").write_text(cpus.replace(" ", "") + "\n")
    memory_only = root / ("node%d" % (max(nodes, default=-1) + 1))
    memory_only.mkdir(parents=True)
    (memory_only / "cpulist").write_text("\n")
    (root / "possible").write_text("0-%s\n" % memory_only.name[len("node"):])
    (root / "power").mkdir()
    return root


def facts_of(module_result, path, monkeypatch):
    monkeypatch.setenv("FAKE_NVML_FIXTURE", str(path))
    rc, result = module_result(gpu_facts, {})
    assert rc == 0, result
    return result["ansible_facts"]["nvidia"]


def affinities(path, monkeypatch):
    """Each GPU's CPU affinity (its cpuSet words) through the fake loaded with path, or the error's name."""
    monkeypatch.setenv("FAKE_NVML_FIXTURE", str(path))
    pynvml.nvmlInit()
    try:
        answers = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            try:
                answers.append(list(pynvml.nvmlDeviceGetCpuAffinity(pynvml.nvmlDeviceGetHandleByIndex(i),
                                                                    CPU_SET_SIZE)))
            except pynvml.NVMLError as error:
                answers.append(type(error).__name__)
        return answers
    finally:
        pynvml.nvmlShutdown()


@pytest.mark.parametrize("name", CAPTURED)
def test_capture_gives_the_same_facts(name, nvml_fixture, module_result, monkeypatch, tmp_path):
    original = nvml_fixture(name)
    expected = facts_of(module_result, original, monkeypatch)
    text = CAPTURE.capture(pynvml, "the %s fixture" % name, now=WHEN, node_root=node_sysfs(tmp_path, original))
    captured = tmp_path / "captured.conf"
    captured.write_text(text)
    assert facts_of(module_result, captured, monkeypatch) == expected
    assert text.startswith("# Captured from NVML by tests/sim/nvml/nvml-capture.py on 2026-11-29: the %s fixture."
                           % name)


@pytest.mark.parametrize("name", CAPTURED)
def test_capture_gives_each_gpu_the_same_cpu_affinity(name, nvml_fixture, monkeypatch, tmp_path):
    """What slurmd's AutoDetect=nvml reads: a captured fixture gives every GPU the CPUs its original does."""
    original = nvml_fixture(name)
    captured = tmp_path / "captured.conf"
    captured.write_text(CAPTURE.capture(pynvml, now=WHEN, node_root=node_sysfs(tmp_path, original)))
    expected = affinities(original, monkeypatch)
    assert affinities(captured, monkeypatch) == expected
    assert all(answer == "NVMLError_GpuIsLost" or any(answer) for answer in expected)


def test_capture_writes_each_gpu_and_the_topology(nvml_fixture, module_result, monkeypatch, tmp_path):
    original = nvml_fixture("dgx-h100")
    values = read_fixture_text(CAPTURE.capture(pynvml, now=WHEN, node_root=node_sysfs(tmp_path, original)), tmp_path)
    assert values["gpu_count"] == "8" and values["driver_version"] == "550.54.15"
    assert values["cuda_driver_version"] == "12040"
    assert values["gpu.7.name"] == "NVIDIA H100 80GB HBM3"
    assert values["gpu.0.nvlink.count"] == "18" and values["gpu.0.nvlink.17.remote_type"] == "switch"
    assert values["gpu.0.pci.bus_id"].upper() == "00000000:18:00.0"
    # Every pair once, as the fixture has it: the same socket's PCIe host bridge (40), else across sockets (50).
    assert values["topology.0.3"] == "40" and values["topology.0.7"] == "50" and "topology.7.0" not in values
    assert len([key for key in values if key.startswith("topology.")]) == 8 * 7 // 2
    assert not [key for key in values if key.startswith("gpu.*")]  # one key per GPU, no defaults


def test_numa_nodes_are_captured_from_sysfs(nvml_fixture, tmp_path):
    """numa.<n>.cpus for the nodes with CPUs; a GPU on one of them needs no CPU list of its own."""
    original = nvml_fixture("dgx-h100")
    values = read_fixture_text(CAPTURE.capture(pynvml, now=WHEN, node_root=node_sysfs(tmp_path, original)), tmp_path)
    assert (values["numa.0.cpus"], values["numa.1.cpus"]) == ("0-55,112-167", "56-111,168-223")
    assert values["gpu.0.numa_node"] == "0" and values["gpu.7.numa_node"] == "1"
    assert not [key for key in values if key.startswith("numa.") and key not in ("numa.0.cpus", "numa.1.cpus")]
    assert not [key for key in values if key.endswith(".cpu_affinity")]


def test_cpu_affinity_is_captured_where_the_numa_node_does_not_give_it(nvml_fixture, tmp_path):
    original = nvml_fixture("dgx-h100")
    with original.open("a") as fixture:
        fixture.write("gpu.1.cpu_affinity=0-3, 112-115\n")
    values = read_fixture_text(CAPTURE.capture(pynvml, now=WHEN, node_root=node_sysfs(tmp_path, original)), tmp_path)
    assert values["gpu.1.cpu_affinity"] == "0-3,112-115"
    assert [key for key in values if key.endswith(".cpu_affinity")] == ["gpu.1.cpu_affinity"]


def test_cpu_affinity_is_captured_where_nvml_has_no_numa_node(nvml_fixture, tmp_path):
    """R470 has no nvmlDeviceGetNumaNodeId, so the node of a GPU is unknown; its CPU affinity is not."""
    original = nvml_fixture("old-driver")
    values = read_fixture_text(CAPTURE.capture(pynvml, now=WHEN, node_root=node_sysfs(tmp_path, original)), tmp_path)
    assert (values["numa.0.cpus"], values["numa.1.cpus"]) == ("0-19,40-59", "20-39,60-79")
    assert "gpu.0.numa_node" not in values
    assert [values["gpu.%d.cpu_affinity" % i] for i in range(8)] == ["0-19,40-59"] * 4 + ["20-39,60-79"] * 4


def test_without_numa_in_sysfs_each_gpu_keeps_its_cpus(nvml_fixture, tmp_path):
    """A kernel without NUMA has no /sys/devices/system/node: no numa.<n>.cpus, every GPU its own list."""
    nvml_fixture("pcie-l40s")
    values = read_fixture_text(CAPTURE.capture(pynvml, now=WHEN, node_root=tmp_path / "absent"), tmp_path)
    assert not [key for key in values if key.startswith("numa.")]
    assert (values["gpu.0.cpu_affinity"], values["gpu.1.cpu_affinity"]) == ("0-31,64-95", "32-63,96-127")


def test_an_unreadable_cpu_list_is_noted(nvml_fixture, tmp_path):
    original = nvml_fixture("pcie-l40s")
    root = node_sysfs(tmp_path, original)
    (root / "node1" / "cpulist").write_text("32-63,x\n")
    text = CAPTURE.capture(pynvml, now=WHEN, node_root=root)
    values = read_fixture_text(text, tmp_path)
    assert "numa.1.cpus" not in values and values["numa.0.cpus"] == "0-31,64-95"
    assert "# numa.1.cpus: reading %s failed: " % (root / "node1" / "cpulist") in text
    assert values["gpu.1.cpu_affinity"] == "32-63,96-127" and "gpu.0.cpu_affinity" not in values


def test_applications_clock_defaults_are_captured(nvml_fixture, tmp_path):
    nvml_fixture("old-driver")  # V100 on R470: the defaults are the maximum clocks
    values = read_fixture_text(CAPTURE.capture(pynvml, now=WHEN, node_root=tmp_path / "absent"), tmp_path)
    assert [values["gpu.%d.clocks.default_applications_%s_mhz" % (i, clock)]
            for i in (0, 7) for clock in ("graphics", "mem")] == ["1530", "877", "1530", "877"]
    assert not [key for key in values if ".clocks.applications_" in key]


def test_applications_clocks_set_on_the_node_are_captured(nvml_fixture, tmp_path):
    original = nvml_fixture("dgx-h100")
    with original.open("a") as fixture:
        fixture.write("gpu.*.clocks.default_applications_graphics_mhz=1755\n")
    pynvml.nvmlInit()
    try:
        pynvml.nvmlDeviceSetApplicationsClocks(pynvml.nvmlDeviceGetHandleByIndex(3), 2619, 1410)
    finally:
        pynvml.nvmlShutdown()
    values = read_fixture_text(CAPTURE.capture(pynvml, now=WHEN, node_root=tmp_path / "absent"), tmp_path)
    defaults = [values["gpu.0.clocks.default_applications_%s_mhz" % clock] for clock in ("graphics", "mem")]
    assert defaults == ["1755", "2619"]
    # only the clock that differs from its default: memory stayed at 2619
    assert [key for key in values if ".clocks.applications_" in key] == ["gpu.3.clocks.applications_graphics_mhz"]
    assert values["gpu.3.clocks.applications_graphics_mhz"] == "1410"


def test_processes_are_captured(nvml_fixture, tmp_path):
    nvml_fixture("busy")
    values = read_fixture_text(CAPTURE.capture(pynvml, now=WHEN, node_root=tmp_path / "absent"), tmp_path)
    assert values["gpu.0.process.count"] == "2"
    assert (values["gpu.0.process.0.pid"], values["gpu.0.process.0.name"], values["gpu.0.process.0.used_mib"]) == (
        "21347", "python3", "30412")
    assert values["gpu.1.process.0.name"] == "/opt/tritonserver/bin/tritonserver"


def test_unsupported_queries_are_left_out(nvml_fixture, tmp_path):
    """The L40S has no NVLink, no MIG and no fans: NOT_SUPPORTED keys stay absent, without notes."""
    original = nvml_fixture("pcie-l40s")
    text = CAPTURE.capture(pynvml, now=WHEN, node_root=node_sysfs(tmp_path, original))
    values = read_fixture_text(text, tmp_path)
    assert not [key for key in values if ".nvlink." in key or ".mig." in key or ".fan." in key]
    assert values["gpu.0.fan_count"] == "0"
    assert "failed" not in text


def read_fixture_text(text, tmp_path):
    path = tmp_path / "values.conf"
    path.write_text(text)
    return read_fixture(path)
