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


def facts_of(module_result, path, monkeypatch):
    monkeypatch.setenv("FAKE_NVML_FIXTURE", str(path))
    rc, result = module_result(gpu_facts, {})
    assert rc == 0, result
    return result["ansible_facts"]["nvidia"]


# Every fixture of a working node whose MIG instances the capture need not carry (it leaves MIG instances out).
@pytest.mark.parametrize("name", ["dgx-h100", "pcie-l40s", "busy", "old-driver", "gpu-lost", "no-gpu"])
def test_capture_gives_the_same_facts(name, nvml_fixture, module_result, monkeypatch, tmp_path):
    original = nvml_fixture(name)
    expected = facts_of(module_result, original, monkeypatch)
    text = CAPTURE.capture(pynvml, "the %s fixture" % name, now=WHEN)
    captured = tmp_path / "captured.conf"
    captured.write_text(text)
    assert facts_of(module_result, captured, monkeypatch) == expected
    assert text.startswith("# Captured from NVML by tests/sim/nvml/nvml-capture.py on 2026-11-29: the %s fixture."
                           % name)


def test_capture_writes_each_gpu_and_the_topology(nvml_fixture, module_result, monkeypatch, tmp_path):
    nvml_fixture("dgx-h100")
    values = read_fixture_text(CAPTURE.capture(pynvml, now=WHEN), tmp_path)
    assert values["gpu_count"] == "8" and values["driver_version"] == "550.54.15"
    assert values["cuda_driver_version"] == "12040"
    assert values["gpu.7.name"] == "NVIDIA H100 80GB HBM3"
    assert values["gpu.0.nvlink.count"] == "18" and values["gpu.0.nvlink.17.remote_type"] == "switch"
    assert values["gpu.0.pci.bus_id"].upper() == "00000000:18:00.0"
    # Every pair once, as the fixture has it: the same socket's PCIe host bridge (40), else across sockets (50).
    assert values["topology.0.3"] == "40" and values["topology.0.7"] == "50" and "topology.7.0" not in values
    assert len([key for key in values if key.startswith("topology.")]) == 8 * 7 // 2
    assert not [key for key in values if key.startswith("gpu.*")]  # one key per GPU, no defaults


def test_processes_are_captured(nvml_fixture, tmp_path):
    nvml_fixture("busy")
    values = read_fixture_text(CAPTURE.capture(pynvml, now=WHEN), tmp_path)
    assert values["gpu.0.process.count"] == "2"
    assert (values["gpu.0.process.0.pid"], values["gpu.0.process.0.name"], values["gpu.0.process.0.used_mib"]) == (
        "21347", "python3", "30412")
    assert values["gpu.1.process.0.name"] == "/opt/tritonserver/bin/tritonserver"


def test_unsupported_queries_are_left_out(nvml_fixture, tmp_path):
    """The L40S has no NVLink, no MIG and no fans: NOT_SUPPORTED keys stay absent, without notes."""
    nvml_fixture("pcie-l40s")
    text = CAPTURE.capture(pynvml, now=WHEN)
    values = read_fixture_text(text, tmp_path)
    assert not [key for key in values if ".nvlink." in key or ".mig." in key or ".fan." in key]
    assert values["gpu.0.fan_count"] == "0"
    assert "failed" not in text


def read_fixture_text(text, tmp_path):
    path = tmp_path / "values.conf"
    path.write_text(text)
    return read_fixture(path)
