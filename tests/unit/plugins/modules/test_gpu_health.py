"""gpu_health on each fixture through the real pynvml and the fake libnvidia-ml.so.1."""

from __future__ import annotations

import pytest

from ansible_collections.accelops.gpu.plugins.modules import gpu_health


def run(module_result, nvml_fixture, name, extra_lines=(), **args):
    path = nvml_fixture(name)
    if extra_lines:  # a later line wins over an earlier one with the same key
        with path.open("a") as handle:
            handle.write("\n".join(extra_lines) + "\n")
    return module_result(gpu_health, args)


def codes(result):
    return [(f["gpu"], f["code"], f["severity"]) for f in result["findings"]]


@pytest.mark.parametrize("name, gpus", [("dgx-h100", 8), ("dgx-a100-mig", 8), ("pcie-l40s", 2), ("no-gpu", 0)])
def test_healthy_nodes(module_result, nvml_fixture, name, gpus):
    rc, result = run(module_result, nvml_fixture, name)
    assert rc == 0, result
    assert (result["verdict"], result["findings"], result["gpu_count"]) == ("ok", [], gpus)
    assert result["changed"] is False


def test_workstation_without_persistence_is_a_warning(module_result, nvml_fixture):
    rc, result = run(module_result, nvml_fixture, "busy")
    assert rc == 0  # fail_on defaults to critical
    assert codes(result) == [(0, "persistence_off", "warning"), (1, "persistence_off", "warning")]


def test_lost_gpu_fails_the_task(module_result, nvml_fixture):
    rc, result = run(module_result, nvml_fixture, "gpu-lost")
    assert rc == 1
    assert result["verdict"] == "critical"
    assert (2, "gpu_lost", "critical") in codes(result)
    assert result["msg"].startswith("GPU health is critical: GPU 2 is lost")


def test_fail_on_never_only_reports(module_result, nvml_fixture):
    rc, result = run(module_result, nvml_fixture, "gpu-lost", fail_on="never")
    assert rc == 0 and result["verdict"] == "critical"


@pytest.mark.parametrize("lines, expected", [
    (["gpu.3.persistence_mode=0"], [(3, "persistence_off", "warning")]),
    (["gpu.1.temperature_c=88"], [(1, "temperature_slowdown", "warning")]),
    (["gpu.1.clocks_event_reasons=0x40"], [(1, "clocks_slowdown", "warning")]),
    (["gpu.1.clocks_event_reasons=0x4", "gpu.1.pcie.gen_current=3"], [(1, "pcie_gen_degraded", "warning")]),
    (["gpu.1.pcie.width_current=8"], [(1, "pcie_width_degraded", "warning")]),
    (["gpu.5.nvlink.7.active=0"], [(5, "nvlink_down", "warning")]),
    (["gpu.0.remapped.pending=1"], [(0, "row_remap_pending", "warning")]),
    (["gpu.0.remapped.failure=1"], [(0, "row_remap_failure", "critical")]),
    (["gpu.6.ecc.volatile.uncorrected=2"], [(6, "ecc_uncorrected", "critical")]),
])
def test_each_fault_on_a_dgx_h100(module_result, nvml_fixture, lines, expected):
    rc, result = run(module_result, nvml_fixture, "dgx-h100", lines, fail_on="never")
    assert rc == 0
    assert codes(result) == expected
    assert result["verdict"] == expected[0][2]


@pytest.mark.parametrize("fail_on, rc", [("warning", 1), ("critical", 0)])
def test_fail_on_decides(module_result, nvml_fixture, fail_on, rc):
    result = run(module_result, nvml_fixture, "dgx-h100", ["gpu.3.persistence_mode=0"], fail_on=fail_on)
    assert result[0] == rc
    assert result[1]["verdict"] == "warning"


def test_fewer_gpus_than_expected(module_result, nvml_fixture):
    rc, result = run(module_result, nvml_fixture, "pcie-l40s", expected_gpu_count=4)
    assert rc == 1
    assert codes(result) == [(None, "gpu_count_low", "critical")]
    assert "2 GPUs visible, 4 expected" in result["msg"]


def test_driver_not_loaded_on_a_node_that_should_have_gpus(module_result, nvml_fixture):
    rc, result = run(module_result, nvml_fixture, "driver-not-loaded", expected_gpu_count=8)
    assert rc == 1
    assert [c[1] for c in codes(result)] == ["driver_unavailable", "gpu_count_low"]
    assert "not loaded" in result["findings"][0]["message"]
    assert result["driver_loaded"] is False


def test_a_driver_changed_without_a_reboot_is_critical(module_result, nvml_fixture):
    rc, result = run(module_result, nvml_fixture, "driver-mismatch")
    assert rc == 1
    assert codes(result) == [(None, "driver_mismatch", "critical")]
    assert result["findings"][0]["message"].startswith("reboot required: driver/library version mismatch")


def test_old_driver_is_judged_without_errors(module_result, nvml_fixture):
    rc, result = run(module_result, nvml_fixture, "old-driver")
    assert rc == 0 and result["verdict"] == "ok" and result["gpu_count"] == 8


@pytest.mark.parametrize("args, message", [
    ({"expected_gpu_count": -1}, "expected_gpu_count must be a whole number, 0 or more (ASCII digits), got -1"),
    ({"expected_gpu_count": True}, "expected_gpu_count must be a whole number, 0 or more (ASCII digits), got True"),
    ({"expected_gpu_count": "\uff18"}, "expected_gpu_count must be a whole number, 0 or more (ASCII digits), got"),
    ({"expected_gpu_count": "8\n"}, "expected_gpu_count must be a whole number, 0 or more (ASCII digits), got"),
    ({"fail_on": "sometimes"}, "value of fail_on must be one of: critical, warning, never, got: sometimes"),
])
def test_bad_input_names_the_field(module_result, nvml_fixture, args, message):
    rc, result = run(module_result, nvml_fixture, "dgx-h100", **args)
    assert rc == 1 and message in result["msg"]
    assert "verdict" not in result


def test_without_pynvml_fails_with_the_hint_and_check_mode_only_warns(module_result, monkeypatch):
    from ansible_collections.accelops.gpu.plugins.module_utils import _nvml

    monkeypatch.setattr(_nvml, "HAS_PYNVML", False)
    rc, result = module_result(gpu_health, {})
    assert rc == 1 and result["msg"].startswith("nvidia-ml-py (import name pynvml) is not installed")
    rc, result = module_result(gpu_health, {"_ansible_check_mode": True})
    assert rc == 0 and result["verdict"] == "unknown"
