from __future__ import annotations

import pytest

from ansible_collections.accelops.gpu.plugins.module_utils import _health


def healthy(index=0, links=18):
    return {
        "index": index, "lost": False, "ecc_errors": {"volatile": {"corrected": 3, "uncorrected": 0}},
        "remapped_rows": {"pending": False, "failure": False}, "retired_pages_pending": False,
        "temperature_c": 40, "temperature_slowdown_c": 87, "clocks_event_reasons": ["gpu_idle"],
        "nvlinks": [{"index": n, "active": True} for n in range(links)],
        "pcie": {"width_current": 16, "width_max": 16, "gen_current": 5, "gen_max": 5}, "persistence_mode": True,
    }


def test_healthy_node_is_ok():
    assert _health.assess([healthy(0), healthy(1)]) == {"status": "ok", "findings": []}


@pytest.mark.parametrize("change, code, severity", [
    ({"lost": True}, "gpu_lost", "critical"),
    ({"ecc_errors": {"volatile": {"uncorrected": 2}}}, "ecc_uncorrected", "critical"),
    ({"remapped_rows": {"pending": False, "failure": True}}, "row_remap_failure", "critical"),
    ({"remapped_rows": {"pending": True, "failure": False}}, "row_remap_pending", "warning"),
    ({"retired_pages_pending": True}, "retired_pages_pending", "warning"),
    ({"temperature_c": 87}, "temperature_slowdown", "warning"),
    ({"clocks_event_reasons": ["sw_power_cap", "hw_thermal_slowdown"]}, "clocks_slowdown", "warning"),
    ({"pcie": {"width_current": 8, "width_max": 16}}, "pcie_width_degraded", "warning"),
    ({"nvlinks": [{"index": 0, "active": True}, {"index": 1, "active": False}]}, "nvlink_down", "warning"),
    ({"persistence_mode": False}, "persistence_off", "warning"),
    ({"clocks_event_reasons": ["sw_power_cap"], "pcie": {"gen_current": 3, "gen_max": 5}}, "pcie_gen_degraded",
     "warning"),
])
def test_each_fault_gives_one_finding(change, code, severity):
    bad = healthy(1)
    bad.update(change)
    result = _health.assess([healthy(0), bad])
    assert result["status"] == severity
    assert [(f["gpu"], f["code"], f["severity"]) for f in result["findings"]] == [(1, code, severity)]
    assert "GPU 1" in result["findings"][0]["message"]


def test_unconnected_nvlinks_without_a_fabric_are_not_a_finding():
    cards = [dict(healthy(i), nvlinks=[{"index": n, "active": False} for n in range(4)]) for i in range(2)]
    assert _health.assess(cards)["status"] == "ok"


def test_missing_values_are_not_findings():
    assert _health.assess([{"index": 0, "lost": False, "temperature_c": None, "nvlinks": None}])["status"] == "ok"


def test_expected_gpu_count():
    result = _health.assess([healthy(0)], expected_gpu_count=8)
    assert result["status"] == "critical"
    assert result["findings"][0]["code"] == "gpu_count_low"
    assert "1 GPUs visible, 8 expected" in result["findings"][0]["message"]


def test_an_idle_gpu_may_lower_its_pcie_generation():
    idle = dict(healthy(0), pcie={"gen_current": 1, "gen_max": 5, "width_current": 16, "width_max": 16})
    assert _health.assess([idle])["status"] == "ok"
    unknown = dict(idle, clocks_event_reasons=None)
    assert _health.assess([unknown])["status"] == "ok"


@pytest.mark.parametrize("facts, expected, status, codes", [
    ({"driver_loaded": False, "reason": "r", "pci_devices": [{"kind": "gpu"}]}, None, "critical",
     ["driver_unavailable"]),
    ({"driver_loaded": False, "reason": "r", "pci_devices": [{"kind": "nvswitch"}]}, None, "ok", []),
    ({"driver_loaded": False, "reason": "r", "pci_devices": []}, 8, "critical",
     ["driver_unavailable", "gpu_count_low"]),
    ({"driver_loaded": True, "gpus": [healthy(0)], "pci_devices": [{"kind": "gpu"}]}, 1, "ok", []),
])
def test_assess_node(facts, expected, status, codes):
    result = _health.assess_node(facts, expected)
    assert result["status"] == status
    assert [f["code"] for f in result["findings"]] == codes


@pytest.mark.parametrize("verdict, threshold, reached", [
    ("critical", "critical", True), ("warning", "critical", False), ("warning", "warning", True),
    ("critical", "warning", True), ("ok", "warning", False), ("critical", "never", False), ("ok", "ok", False),
])
def test_at_least(verdict, threshold, reached):
    assert _health.at_least(verdict, threshold) is reached


def test_nvml_errors_are_never_good_news():
    unreadable = {"index": 1, "lost": False, "error": "nvmlDeviceGetName: Unknown Error (NVML error 999)"}
    half = dict(healthy(0), errors=["nvmlDeviceGetTemperature: Timeout (NVML error 10)"])
    result = _health.assess_node({"driver_loaded": True, "gpu_count": 2, "gpus": [half, unreadable]})
    assert result["status"] == "critical"
    assert [(f["gpu"], f["code"], f["severity"]) for f in result["findings"]] == [
        (0, "nvml_error", "warning"), (1, "gpu_unreadable", "critical")]
    assert "GPU 0: NVML failed to answer nvmlDeviceGetTemperature: Timeout" in result["findings"][0]["message"]
    counted = _health.assess_node({"driver_loaded": True, "gpu_count": None, "gpus": [], "reason": "no count"})
    assert counted["status"] == "critical" and counted["findings"][0]["code"] == "gpu_count_unknown"
    system = _health.assess_node({"driver_loaded": True, "gpu_count": 0, "gpus": [], "errors": ["x: y"]})
    assert system["status"] == "warning" and system["findings"][0]["code"] == "nvml_error"


def test_a_gpu_whose_every_read_failed_is_unreadable_not_a_warning():
    """A handle, and then nothing: not even the name or UUID came back, so nothing else about the GPU counts."""
    errors = ["nvmlDeviceGetName: Unknown Error (NVML error 999)", "nvmlDeviceGetUUID: Unknown Error (NVML error 999)"]
    mute = {"index": 0, "lost": False, "uuid": None, "name": None, "errors": errors}
    result = _health.assess_node({"driver_loaded": True, "gpu_count": 1, "gpus": [mute]})
    assert result["status"] == "critical"
    assert [(f["code"], f["severity"]) for f in result["findings"]] == [("gpu_unreadable", "critical")]
    assert "not its name or UUID" in result["findings"][0]["message"] and errors[1] in result["findings"][0]["message"]
    # Its name read, the rest failing: a warning, as before.
    named = dict(mute, name="NVIDIA H100 80GB HBM3", errors=errors[1:])
    assert _health.assess_node({"driver_loaded": True, "gpu_count": 1, "gpus": [named]})["status"] == "warning"


@pytest.mark.parametrize("loaded, severity", [(False, "critical"), (True, "warning")])
def test_an_unreadable_pci_bus_is_its_own_finding(loaded, severity):
    """Not "NVML failed": the PCI bus could not be listed; without NVML nobody can tell whether GPUs lack a driver."""
    error = "PCI devices of /sys cannot be listed: Permission denied"
    facts = {"driver_loaded": loaded, "gpu_count": 0, "gpus": [], "pci_devices": None, "errors": [error],
             "reason": None if loaded else "the NVIDIA kernel driver is not loaded"}
    result = _health.assess_node(facts)
    assert [(f["code"], f["severity"], f["message"]) for f in result["findings"]] == [
        ("pci_unreadable", severity, error)]
    assert result["status"] == severity


def test_a_driver_mismatch_is_critical_whatever_else():
    facts = {"driver_loaded": False, "gpu_count": 0, "gpus": [], "pci_devices": [], "errors": [],
             "driver_mismatch": {"loaded": "550.54.15", "library": "550.127.08"}, "reason": "driver/library ..."}
    result = _health.assess_node(facts)
    assert [(f["code"], f["severity"]) for f in result["findings"]] == [("driver_mismatch", "critical")]


def test_a_function_of_unknown_class_counts_as_a_gpu_on_the_bus():
    facts = {"driver_loaded": False, "gpu_count": 0, "gpus": [], "errors": [], "reason": "not loaded",
             "pci_devices": [{"kind": "unknown", "architecture": "pascal"}]}
    assert [f["code"] for f in _health.assess_node(facts)["findings"]] == ["driver_unavailable"]


def test_the_reboot_comes_before_an_unreadable_bus():
    facts = {"driver_loaded": False, "gpu_count": 0, "gpus": [], "pci_devices": None, "reason": "mismatch",
             "errors": ["PCI devices of /sys cannot be listed: Permission denied"],
             "driver_mismatch": {"loaded": "550.54.15", "library": "550.127.08"}}
    assert [f["code"] for f in _health.assess_node(facts)["findings"]] == ["driver_mismatch", "pci_unreadable"]


def test_a_gpu_is_unreadable_once():
    gpu = {"index": 0, "lost": False, "uuid": None, "name": None, "error": "nvmlDeviceGetName: Unknown Error",
           "errors": ["nvmlDeviceGetUUID: Unknown Error (NVML error 999)"]}
    codes = [f["code"] for f in _health.assess_node({"driver_loaded": True, "gpu_count": 1, "gpus": [gpu]})["findings"]]
    assert codes.count("gpu_unreadable") == 1
