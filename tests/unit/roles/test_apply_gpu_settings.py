"""The gpu_settings boot script, run as the boot unit runs it, against the fake NVML."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from simnode import FAKENVML_DIR, FIXTURES, ROOT, build_fake_nvml, read_fixture

SCRIPT = ROOT / "roles" / "gpu_settings" / "files" / "apply-gpu-settings.py"
RULES = [
    {"gpus": ["all"], "persistence_mode": True, "power_limit_w": 600, "compute_mode": "exclusive_process"},
    {"gpus": [0, "1"], "power_limit_w": 450},
    {"gpus": ["GPU-cc7c40c4-84fc-4d1d-949b-5a14d0863ef9"], "locked_clocks_mhz": {"min": 1410, "max": 1980}},
    {"gpus": ["7"], "persistence_mode": False},
]


@pytest.fixture
def node(tmp_path):
    build_fake_nvml()
    fixture = tmp_path / "nvml.conf"
    shutil.copyfile(FIXTURES / "dgx-h100.conf", fixture)

    def run(rules, *flags):
        config = tmp_path / "gpu-settings.json"
        config.write_text(json.dumps({"rules": rules}))
        env = dict(os.environ, LD_LIBRARY_PATH=str(FAKENVML_DIR), FAKE_NVML_FIXTURE=str(fixture))
        out = subprocess.run([sys.executable, str(SCRIPT), *flags, str(config)], capture_output=True, text=True,
                             env=env, check=False)
        return out.returncode, out.stdout + out.stderr

    run.fixture = fixture
    return run


def test_applies_rules_in_order_and_then_finds_nothing_to_do(node):
    rc, out = node(RULES, "--check")
    assert rc == 3 and "GPU 0: differs power_limit_w, compute_mode" in out
    rc, out = node(RULES)
    assert rc == 0, out
    values = read_fixture(node.fixture)
    assert [values["gpu.%d.power.limit_mw" % i] for i in range(8)] == ["450000"] * 2 + ["600000"] * 6
    assert all(values["gpu.%d.compute_mode" % i] == "3" for i in range(8))
    assert values["gpu.7.persistence_mode"] == "0"
    assert (values["gpu.3.clocks.locked_min_mhz"], values["gpu.3.clocks.locked_max_mhz"]) == ("1410", "1980")
    rc, out = node(RULES, "--check")
    assert rc == 0 and out.count("as configured") == 8


def test_re_applies_after_a_driver_reload(node):
    assert node(RULES)[0] == 0
    kept = [line for line in node.fixture.read_text().splitlines()
            if not line.startswith(("gpu.0.power", "gpu.5.compute_mode", "gpu.3.clocks.locked"))]
    node.fixture.write_text("\n".join(kept) + "\n")  # what the driver forgets when it loads again
    assert node(RULES, "--check")[0] == 3
    rc, out = node(RULES)
    assert rc == 0 and "GPU 0: set power_limit_w" in out and "GPU 5: set compute_mode" in out
    values = read_fixture(node.fixture)
    assert values["gpu.0.power.limit_mw"] == "450000" and values["gpu.3.clocks.locked_max_mhz"] == "1980"


@pytest.mark.parametrize("rules, message", [
    ([{"gpus": ["9"], "persistence_mode": True}], "no GPU 9 on this node"),
    ([{"gpus": ["all"], "power_limit_w": 900}], "GPU 0: Invalid Argument"),
])
def test_failures_exit_non_zero_with_a_message(node, rules, message):
    rc, out = node(rules)
    assert rc == 1 and message in out and "Traceback" not in out
