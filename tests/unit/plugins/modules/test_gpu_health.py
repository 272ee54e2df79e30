"""gpu_health on each fixture through the real pynvml and the fake libnvidia-ml.so.1."""

from __future__ import annotations

import os

import pytest

from ansible_collections.accelops.gpu.plugins.modules import gpu_cdi, gpu_health, gpu_mig


def run(module_result, nvml_fixture, name, extra_lines=(), **args):
    path = nvml_fixture(name)
    if extra_lines:  # a later line wins over an earlier one with the same key
        with path.open("a") as handle:
            handle.write("\n".join(extra_lines) + "\n")
    # The machine's own /etc/cdi is not the simulated node's: the CDI tests below give their specs.
    args.setdefault("cdi_specs", [])
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


# --- the node's CDI specs ------------------------------------------------------------------------------------------

@pytest.fixture
def spec_node(tmp_path, monkeypatch, module_result, nvml_fixture):
    """A node's files under tmp_path (test_gpu_cdi's Node) for a fixture, with the spec gpu_cdi writes for it;
    returns (node, health(**args), fixture path, spec path)."""
    from test_gpu_cdi import Node

    node = Node(tmp_path / "root", monkeypatch)
    os.makedirs(node.path("/sys/bus/pci/devices"))  # a PCI bus without NVIDIA devices: NVML's GPUs are judged
    state = {}

    def start(name, extra=()):
        from test_gpu_cdi import prepare

        state["fixture"] = nvml_fixture(name)
        if extra:
            with state["fixture"].open("a") as handle:
                handle.write("\n".join(extra) + "\n")
        prepare(node, state["fixture"])
        rc, written = module_result(gpu_cdi, node.args())
        assert rc == 0 and written["changed"], written
        return state["fixture"], node.path("/etc/cdi/nvidia.yaml")

    def health(**args):
        given = dict(cdi_specs=[node.path("/etc/cdi/nvidia.yaml"), node.path("/var/run/cdi/nvidia.yaml")],
                     driver_root=str(node.root), proc_root=node.path("/proc"), sysfs_root=node.path("/sys"))
        given.update(args)
        return module_result(gpu_health, given)

    node.start, node.health = start, health
    return node


def cdi_codes(result):
    return sorted(((f["gpu"], f["code"], f["severity"]) for f in result["findings"] if f["code"].startswith("cdi_")),
                  key=lambda item: (-1 if item[0] is None else item[0], item[1]))


@pytest.mark.parametrize("name", ["dgx-h100", "dgx-a100-mig", "pcie-l40s"])
def test_a_true_spec_is_no_finding(spec_node, name):
    spec_node.start(name)
    rc, result = spec_node.health()
    assert rc == 0, result
    assert (result["verdict"], result["findings"]) == ("ok", [])


def test_no_spec_is_no_finding(spec_node, nvml_fixture, module_result):
    nvml_fixture("dgx-h100")
    rc, result = spec_node.health()
    assert rc == 0 and (result["verdict"], result["findings"]) == ("ok", []), result


def test_a_mig_change_makes_the_spec_a_warning(spec_node, module_result):
    spec_node.start("dgx-a100-mig")
    rc, changed = module_result(gpu_mig, {"gpus": [0], "layout": ["3g.40gb", "3g.40gb"]})
    assert rc == 0 and changed["changed"], changed
    rc, result = spec_node.health()
    assert rc == 0 and result["verdict"] == "warning", result
    found = cdi_codes(result)
    assert (0, "cdi_device_missing", "warning") in found and (None, "cdi_device_extra", "warning") in found
    assert all(severity == "warning" for _gpu, _code, severity in found)
    assert all(f["message"].startswith(spec_node.path("/etc/cdi/nvidia.yaml") + ": ") for f in result["findings"])
    rc, failed = spec_node.health(fail_on="warning")
    assert rc == 1 and failed["msg"].startswith("GPU health is warning: %s: " % spec_node.path("/etc/cdi/nvidia.yaml"))
    # Written again, the spec is true again.
    assert module_result(gpu_cdi, spec_node.args())[0] == 0
    assert spec_node.health()[1]["findings"] == []


def test_a_driver_change_makes_the_spec_a_warning(spec_node):
    fixture, _spec = spec_node.start("dgx-h100")
    with fixture.open("a") as handle:
        handle.write("driver_version=550.127.08\n")
    spec_node.driver("550.127.08")
    rc, result = spec_node.health()
    assert rc == 0 and result["verdict"] == "warning", result
    assert cdi_codes(result) == [(None, "cdi_driver_version", "warning")]
    assert "the spec is for driver 550.54.15; the loaded driver is 550.127.08" in result["findings"][0]["message"]


def test_a_critical_node_stays_critical(spec_node):
    fixture, _spec = spec_node.start("dgx-h100")
    with fixture.open("a") as handle:
        handle.write("gpu.6.ecc.volatile.uncorrected=2\ndriver_version=550.127.08\n")
    spec_node.driver("550.127.08")
    rc, result = spec_node.health(fail_on="never")
    assert rc == 0 and result["verdict"] == "critical"
    assert [f["code"] for f in result["findings"]] == ["ecc_uncorrected", "cdi_driver_version"]


@pytest.mark.parametrize("content, message", [
    (b"cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices: []\n", "is not a CDI spec a runtime accepts"),
    (b"\xff\xfe", "it is not UTF-8 text"),
    (b"- a\n- b\n", "it is not a mapping"),
])
def test_a_spec_a_runtime_refuses_is_a_warning(spec_node, content, message):
    _fixture, spec = spec_node.start("pcie-l40s")
    with open(spec, "wb") as handle:
        handle.write(content)
    rc, result = spec_node.health()
    assert rc == 0 and result["verdict"] == "warning", result
    assert cdi_codes(result) == [(None, "cdi_spec_invalid", "warning")]
    assert message in result["findings"][0]["message"]


def test_a_linked_spec_is_named_and_left_alone(spec_node, tmp_path):
    _fixture, spec = spec_node.start("pcie-l40s")
    os.rename(spec, str(tmp_path / "elsewhere.yaml"))
    os.symlink(str(tmp_path / "elsewhere.yaml"), spec)
    rc, result = spec_node.health()
    assert rc == 0 and cdi_codes(result) == [(None, "cdi_spec_invalid", "warning")], result
    assert "is a symbolic link, not a regular file; it is left alone" in result["findings"][0]["message"]
    assert os.path.islink(spec)


def test_nvml_failing_part_way_is_no_good_news(spec_node):
    """NVML answers the health reads, then fails while the spec's GPUs are read: the spec is said to be unjudged."""
    fixture, _spec = spec_node.start("dgx-a100-mig")
    with fixture.open("a") as handle:
        # The health read asks each of the 8 GPUs once; the spec's read is the 9th call on.
        handle.write("fail.nvmlDeviceGetMinorNumber=9+:UNKNOWN\n")
    rc, result = spec_node.health()
    assert rc == 0 and result["verdict"] == "warning", result
    assert cdi_codes(result) == [(None, "cdi_unjudged", "warning")]
    assert "cannot be compared with the node" in result["findings"][0]["message"]
    assert "nvmlDeviceGetMinorNumber" in result["findings"][0]["message"]


def test_without_pyyaml_a_yaml_spec_is_unjudged(spec_node, monkeypatch):
    from ansible_collections.accelops.gpu.plugins.module_utils import _cdi

    spec_node.start("pcie-l40s")
    monkeypatch.setattr(_cdi, "HAS_YAML", False)
    rc, result = spec_node.health()
    assert rc == 0 and cdi_codes(result) == [(None, "cdi_unjudged", "warning")], result
    assert "PyYAML" in result["findings"][0]["message"]


@pytest.mark.parametrize("args, message", [
    ({"cdi_specs": ["etc/cdi/nvidia.yaml"]}, "cdi_specs: give an absolute file path"),
    ({"cdi_specs": ["/etc/cdi/nvidia.txt"]}, "cdi_specs: /etc/cdi/nvidia.txt must end in .yaml or .json"),
    ({"cdi_specs": ["/etc/cdi/a\nb.yaml"]}, "cdi_specs: give an absolute file path without a newline"),
    ({"driver_root": "/nonexistent-root"}, "driver_root: /nonexistent-root is not a directory"),
    ({"proc_root": "proc"}, "proc_root: give an absolute directory path"),
])
def test_bad_cdi_arguments(module_result, nvml_fixture, args, message):
    rc, result = run(module_result, nvml_fixture, "dgx-h100", **args)
    assert rc == 1 and result["msg"].startswith(message), result
    assert "verdict" not in result
