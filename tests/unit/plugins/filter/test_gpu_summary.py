from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.accelops.gpu.plugins.filter.gpu_summary import FilterModule, gpu_summary, topology_table

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
    assert set(FilterModule().filters()) == {"gpu_summary", "topology_table"}
