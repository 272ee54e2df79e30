from __future__ import annotations

import re

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.accelops.gpu.plugins.plugin_utils._gpu_summary_filters import (
    FilterModule,
    gpu_processes,
    gpu_summary,
    topology_table,
)

FACTS = {
    "driver_loaded": True, "driver_version": "550.54.15", "cuda_driver_version": "12.4", "gpu_count": 2,
    "gpus": [
        {"index": 0, "name": "NVIDIA H100 80GB HBM3", "memory_total_mib": 81559, "temperature_c": 33,
         "power_draw_w": 71.5, "power_limit_w": 700.0, "lost": False,
         "nvlinks": [{"index": n, "active": n != 3} for n in range(18)]},
        {"index": 1, "lost": True},
    ],
    "topology": [["X", "NV18"], ["NV18", "X"]],
    "health": {"status": "critical", "findings": [
        {"gpu": 0, "code": "nvlink_down", "severity": "warning", "message": "m"},
        {"gpu": 1, "code": "gpu_lost", "severity": "critical", "message": "m"},
    ]},
}


def test_summary_has_one_line_per_gpu_after_a_header():
    lines = gpu_summary(FACTS)
    assert lines[0] == "driver 550.54.15, CUDA 12.4, 2 GPU(s)"
    assert lines[1] == ("GPU 0  NVIDIA H100 80GB HBM3  81559 MiB  33 C  72 W / 700 W  NVLink 17/18 up  "
                        "health: warning (nvlink_down)")
    assert lines[2] == "GPU 1  LOST  health: critical (gpu_lost)"


def test_summary_without_driver_gives_the_reason():
    facts = {"driver_loaded": False, "reason": "the NVIDIA kernel driver is not loaded",
             "pci_devices": [{"kind": "gpu"}, {"kind": "nvswitch"}, {"kind": "gpu"}]}
    assert gpu_summary(facts) == ["no usable NVIDIA driver: the NVIDIA kernel driver is not loaded; "
                                  "2 NVIDIA GPU(s) on the PCI bus"]


def test_missing_values_read_n_a():
    facts = dict(FACTS, gpus=[{"index": 0, "name": "NVIDIA L40S", "lost": False}], health=None)
    assert gpu_summary(facts)[1] == "GPU 0  NVIDIA L40S  n/a  n/a  n/a / n/a  NVLink none  health: ok"


def test_topology_table_aligns_columns():
    assert topology_table(FACTS) == ["      GPU0  GPU1", "GPU0  X     NV18", "GPU1  NV18  X"]
    assert topology_table(dict(FACTS, topology=None)) == []


@pytest.mark.parametrize("function", [gpu_summary, topology_table])
def test_wrong_input_names_what_is_expected(function):
    with pytest.raises(AnsibleFilterError, match=r"expects ansible_facts\.nvidia"):
        function("not facts")


def test_filters_are_registered():
    assert set(FilterModule().filters()) == {"gpu_summary", "topology_table", "gpu_processes"}


# --------------------------------------------------------------------------- gpu_processes, on the real facts


def _facts(nvml_fixture, name, extra=""):
    from ansible_collections.accelops.gpu.plugins.module_utils._gpu_facts import GpuFactsCollector, resolve_subsets
    from ansible_collections.accelops.gpu.plugins.module_utils._nvml import NvmlSession

    path = nvml_fixture(name)
    if extra:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(extra)
    with NvmlSession() as session:
        return GpuFactsCollector(session, resolve_subsets(["basic", "processes"])).collect()


def test_processes_are_listed_per_gpu(nvml_fixture):
    facts = _facts(nvml_fixture, "dgx-h100", "gpu.3.process.count=1\ngpu.3.process.0.pid=4242\n"
                                             "gpu.3.process.0.name=train.py\n")
    assert gpu_processes(facts) == ["GPU 3 pid 4242 (train.py)"]
    assert gpu_processes(facts, unreadable=True) == ["GPU 3 pid 4242 (train.py)"]
    assert gpu_processes(_facts(nvml_fixture, "dgx-h100"), unreadable=True) == []


@pytest.mark.parametrize("name, extra, expected", [
    ("gpu-lost", "", r"^GPU \d+: its processes cannot be read \(lost\)$"),
    ("dgx-h100", "fail.nvmlDeviceGetComputeRunningProcesses_v3=1+:UNKNOWN\n"
                 "fail.nvmlDeviceGetComputeRunningProcesses_v2=1+:UNKNOWN\n",
     r"^GPU 0: its processes cannot be read \(nvmlDeviceGetComputeRunningProcesses_v3: "),
    ("driver-not-loaded", "", r"^no GPU can be read: "),
    ("driver-mismatch", "", r"^no GPU can be read: "),
])
def test_what_cannot_be_read_is_no_idle_gpu(nvml_fixture, name, extra, expected):
    facts = _facts(nvml_fixture, name, extra)
    assert gpu_processes(facts) == []
    assert any(re.match(expected, line) for line in gpu_processes(facts, unreadable=True)), \
        gpu_processes(facts, unreadable=True)


@pytest.mark.parametrize("facts, expected", [
    # NVML answered, but not the count: nothing says that the GPUs are free.
    ({"driver_loaded": True, "gpu_count": None, "gpus": []}, ["NVML counts None GPU(s) but 0 could be listed"]),
    ({"driver_loaded": True, "gpu_count": 2, "gpus": [{"index": 0, "processes": []}]},
     ["NVML counts 2 GPU(s) but 1 could be listed"]),
    # Listing not supported on this GPU.
    ({"driver_loaded": True, "gpu_count": 1, "gpus": [{"index": 0, "processes": None, "errors": []}]},
     ["GPU 0: its processes cannot be read (NVML does not list them on this GPU)"]),
])
def test_a_gpu_without_an_answer_is_no_idle_gpu(facts, expected):
    assert gpu_processes(facts, unreadable=True) == expected
    assert gpu_processes(facts) == []


@pytest.mark.parametrize("facts", [["GPU 0"], {"gpus": ["GPU 0"]}, {"gpus": None}, {}])
def test_processes_of_something_else_are_refused(facts):
    with pytest.raises(AnsibleFilterError, match=r"gpu_processes expects ansible_facts\.nvidia"):
        gpu_processes(facts)
    assert FilterModule().filters()["gpu_processes"] is gpu_processes
