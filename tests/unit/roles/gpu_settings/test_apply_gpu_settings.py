"""The gpu_settings boot script, run as the boot unit runs it, against the fake NVML."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from simnode import COLLECTIONS, FAKENVML_DIR, FIXTURES, ROOT, build_fake_nvml, read_fixture

SCRIPT = ROOT / "node_programs" / "apply-gpu-settings.py"
CONFIG = {
    "settings": {"persistence_mode": True, "power_limit_w": 600, "compute_mode": "exclusive_process"},
    "per_gpu": [
        {"gpus": [0, "1"], "power_limit_w": 450},
        {"gpus": ["GPU-cc7c40c4-84fc-4d1d-949b-5a14d0863ef9"], "locked_clocks_mhz": {"min": 1410, "max": 1980}},
        {"gpus": ["7"], "persistence_mode": False},
    ],
}
A100_LAYOUTS = {"mig_layouts": [{"gpus": [0], "layout": ["1g.10gb"] * 7},
                                {"gpus": [1], "layout": ["3g.40gb", "2g.20gb", "1g.10gb"]}]}


@pytest.fixture
def node(tmp_path):
    build_fake_nvml()

    def run(fixture_name, config, *flags):
        fixture = tmp_path / "nvml.conf"
        if not fixture.exists():
            shutil.copyfile(FIXTURES / ("%s.conf" % fixture_name), fixture)
        path = tmp_path / "gpu-settings.json"
        path.write_text(json.dumps(config))
        env = dict(os.environ, LD_LIBRARY_PATH=str(FAKENVML_DIR), FAKE_NVML_FIXTURE=str(fixture),
                   ACCELOPS_GPU_STATE_DIR=str(tmp_path / "run"))
        out = subprocess.run([sys.executable, str(SCRIPT), *flags, "--lib", str(COLLECTIONS), str(path)],
                             capture_output=True, text=True, env=env, check=False)
        return out.returncode, out.stdout + out.stderr

    run.fixture = tmp_path / "nvml.conf"
    return run


def test_applies_rules_in_order_and_then_finds_nothing_to_do(node):
    rc, out = node("dgx-h100", CONFIG, "--check")
    assert rc == 3 and "GPU 0: differs compute_mode, power_limit_w" in out
    rc, out = node("dgx-h100", CONFIG)
    assert rc == 0, out
    values = read_fixture(node.fixture)
    assert [values["gpu.%d.power.limit_mw" % i] for i in range(8)] == ["450000"] * 2 + ["600000"] * 6
    assert all(values["gpu.%d.compute_mode" % i] == "3" for i in range(8))
    assert values["gpu.7.persistence_mode"] == "0"
    assert (values["gpu.3.clocks.locked_min_mhz"], values["gpu.3.clocks.locked_max_mhz"]) == ("1410", "1980")
    rc, out = node("dgx-h100", CONFIG, "--check")
    assert rc == 0 and out.count("as configured") == 8, out


def test_re_applies_after_a_driver_reload(node):
    assert node("dgx-h100", CONFIG)[0] == 0
    kept = [line for line in node.fixture.read_text().splitlines()
            if not line.startswith(("gpu.0.power", "gpu.5.compute_mode", "gpu.3.clocks.locked"))]
    node.fixture.write_text("\n".join(kept) + "\n")  # what the driver forgets when it loads again
    assert node("dgx-h100", CONFIG, "--check")[0] == 3
    rc, out = node("dgx-h100", CONFIG)
    assert rc == 0 and "GPU 0: set power_limit_w" in out and "GPU 5: set compute_mode" in out
    values = read_fixture(node.fixture)
    assert values["gpu.0.power.limit_mw"] == "450000" and values["gpu.3.clocks.locked_max_mhz"] == "1980"


def test_lays_out_mig_instances_again_after_a_reboot(node):
    rc, out = node("dgx-a100-mig", A100_LAYOUTS, "--check")
    assert rc == 0 and out.count("MIG layout as configured") == 2, out
    kept = [line for line in node.fixture.read_text().splitlines() if not line.startswith("gpu.0.gi.")]
    node.fixture.write_text("\n".join(kept) + "\n")  # GPU instances are gone after a reboot
    assert node("dgx-a100-mig", A100_LAYOUTS, "--check")[0] == 3
    rc, out = node("dgx-a100-mig", A100_LAYOUTS)
    assert rc == 0 and "GPU 0: MIG layout laid out" in out and "GPU 1: MIG layout as configured" in out
    values = read_fixture(node.fixture)
    assert sum(1 for key in values if key.startswith("gpu.0.gi.") and key.endswith(".ci.0.uuid")) == 7
    assert node("dgx-a100-mig", A100_LAYOUTS, "--check")[0] == 0


@pytest.mark.parametrize("config, message", [
    ({"per_gpu": [{"gpus": ["9"], "persistence_mode": True}]}, "per_gpu[0].gpus: index 9 is out of range"),
    ({"settings": {"power_limit_w": 900}}, "GPU 0: power_limit_w 900.0 is outside this GPU's range 200-700 W"),
    ({"mig_layouts": [{"gpus": [3], "layout": ["7g.80gb"]}]},
     "GPU 3: MIG mode is off; enable it with accelops.gpu.gpu_config"),
])
def test_failures_exit_non_zero_with_a_message(node, config, message):
    rc, out = node("dgx-h100", config)
    assert rc == 1 and message in out and "Traceback" not in out, out


def test_no_driver_is_a_message_not_a_traceback(node):
    rc, out = node("driver-not-loaded", CONFIG)
    assert rc == 1 and "NVML is not usable: the NVIDIA kernel driver is not loaded" in out


def with_lines(node, fixture_name, *lines):
    shutil.copyfile(FIXTURES / ("%s.conf" % fixture_name), node.fixture)
    with node.fixture.open("a") as handle:
        handle.write("".join(line + "\n" for line in lines))
    return node.fixture.read_bytes()


def test_a_fault_part_way_stops_and_says_what_changed(node):
    with_lines(node, "dgx-h100", "fail.nvmlDeviceSetComputeMode=3:GPU_IS_LOST")
    rc, out = node("dgx-h100", CONFIG)
    assert rc == 1 and "Traceback" not in out, out
    assert "GPU 0: set compute_mode, persistence_mode, power_limit_w" not in out  # GPU 0 only needed two of them
    assert "GPU 0: set compute_mode, power_limit_w" in out and "GPU 1: set compute_mode, power_limit_w" in out
    assert "GPU 2: the GPU was lost while applying its changes" in out
    assert "Not changed: GPU 3, GPU 4, GPU 5, GPU 6, GPU 7." in out
    values = read_fixture(node.fixture)
    assert values.get("gpu.3.compute_mode") is None


@pytest.mark.parametrize("fault", ["fail.nvmlDeviceGetCount_v2=1:UNKNOWN", "fail.nvmlDeviceGetComputeMode=5:UNKNOWN",
                                   "fail.nvmlDeviceGetUUID=1:UNKNOWN"])
def test_a_fault_while_reading_changes_nothing(node, fault):
    before = with_lines(node, "dgx-h100", fault)
    rc, out = node("dgx-h100", CONFIG)
    assert rc == 1 and "Traceback" not in out, out
    assert node.fixture.read_bytes() == before


def test_a_busy_mig_instance_is_never_destroyed_at_boot(node):
    before = with_lines(node, "dgx-a100-mig")
    rc, out = node("dgx-a100-mig", {"mig_layouts": [{"gpus": [1], "layout": ["7g.80gb"]}]})
    assert rc == 1 and "would be destroyed but runs processes" in out, out
    assert node.fixture.read_bytes() == before


def test_a_bad_state_dir_is_refused_before_anything_changes(node, tmp_path):
    (tmp_path / "run").write_text("a file where the state directory should be")
    before = with_lines(node, "dgx-h100")
    rc, out = node("dgx-h100", CONFIG)
    assert rc == 1 and "state_dir: %s exists and is not a directory" % (tmp_path / "run") in out, out
    assert node.fixture.read_bytes() == before


@pytest.mark.parametrize("text", ["[1, 2]", "{not json"])
def test_a_broken_config_file_is_a_message(node, tmp_path, text):
    with_lines(node, "dgx-h100")
    path = tmp_path / "broken.json"
    path.write_text(text)
    env = dict(os.environ, LD_LIBRARY_PATH=str(FAKENVML_DIR), FAKE_NVML_FIXTURE=str(node.fixture))
    out = subprocess.run([sys.executable, str(SCRIPT), "--lib", str(COLLECTIONS), str(path)], capture_output=True,
                         text=True, env=env, check=False)
    assert out.returncode == 1 and "Traceback" not in out.stdout + out.stderr


@pytest.mark.parametrize("config, message", [
    ({"settings": {"persistence_mode": False, "compute_mode": "bogus"}}, "settings.compute_mode: must be one of"),
    ({"settings": {"persistence_mode": False}, "mig_layouts": [{"gpus": [0], "layout": None}]},
     "mig_layouts[0].layout: must be a list"),
    ({"settings": {"power_limit_w": "500"}}, "settings.power_limit_w: must be a number of watts, got '500'"),
    ({"settings": {"persistence_mode": "false"}}, "settings.persistence_mode: must be true or false, got 'false'"),
    ({"settings": {"mig_mode": "no"}}, "settings.mig_mode: must be true or false"),
    ({"settings": ["x"]}, "settings: must be a mapping of settings, got list"),
    ({"per_gpu": ["x"]}, "per_gpu[0]: must be a mapping of settings, got str"),
    ({"per_gpu": [{"gpus": ["٣"], "power_limit_w": 400}]}, "per_gpu[0].gpus: '٣' is neither"),
    ({"mig_layouts": ["1g.10gb"]}, "mig_layouts[0]: must be a mapping of gpus (optional) and layout"),
    ({"mig_layouts": {"gpus": [0]}}, "mig_layouts: must be a list"),
    ({"mig_layouts": [{"gpus": [0]}]}, "mig_layouts[0]: must be a mapping of gpus (optional) and layout"),
    ({"mig_layouts": [{"gpus": [0], "layout": [" 1g.10gb"]}]}, "mig_layouts[0].layout[0]: ' 1g.10gb' is not"),
    ({"settings": {"bogus_key": 1}}, "settings.bogus_key: unknown setting"),
    ({"setting": {}}, "setting: unknown key"),
])
def test_a_malformed_config_changes_nothing_and_says_where(node, config, message):
    before = with_lines(node, "dgx-a100-mig")
    rc, out = node("dgx-a100-mig", config)
    assert rc == 1 and message in out and "nothing was changed" in out and "Traceback" not in out, out
    assert node.fixture.read_bytes() == before


def test_a_mig_failure_after_the_settings_names_its_pass(node):
    # Calls 1-18 read the profile table when the layouts are checked before any pass; 19 is the MIG pass's first.
    with_lines(node, "dgx-a100-mig", "fail.nvmlDeviceGetGpuInstanceProfileInfoV=19:UNKNOWN")
    rc, out = node("dgx-a100-mig", {"settings": {"persistence_mode": False},
                                    "mig_layouts": [{"gpus": [0], "layout": ["1g.10gb"] * 7}]})
    assert rc == 1 and "GPU 0: set persistence_mode" in out
    assert "MIG layouts: nothing was changed: GPU 0: reading its current state failed" in out, out


@pytest.mark.parametrize("config, message", [
    ({"per_gpu": [{"gpus": "12", "power_limit_w": 300}]},
     "per_gpu[0].gpus: give a list of 'all', GPU indexes or UUIDs"),
    ({"per_gpu": [{"gpus": {"3": 1}, "power_limit_w": 300}]}, "per_gpu[0].gpus: give a list"),
    ({"mig_layouts": [{"gpus": "10", "layout": []}]}, "mig_layouts[0].gpus: give a list"),
    ({"settings": {"persistence_mode": False}, "mig_layouts": [{"gpus": ["ALL"], "layout": []}]},
     "mig_layouts[0].gpus: 'ALL' is neither 'all', a GPU index nor a GPU UUID"),
    ({"settings": {"persistence_mode": False},
      "mig_layouts": [{"gpus": [0], "layout": []}, {"gpus": ["all"], "layout": []}]},
     "mig_layouts[0] and mig_layouts[1] both name GPU 0"),
    ({"settings": False}, "settings: must be a mapping of settings, got bool"),
    ({"settings": []}, "settings: must be a mapping of settings, got list"),
    ({"per_gpu": {}}, "per_gpu: must be a list, got dict"),
    ({"mig_layouts": False}, "mig_layouts: must be a list, got bool"),
])
def test_selectors_and_shapes_are_checked_before_any_pass(node, config, message):
    before = with_lines(node, "dgx-a100-mig")
    rc, out = node("dgx-a100-mig", config)
    assert rc == 1 and message in out and "nothing was changed" in out and "Traceback" not in out, out
    assert "GPU 0: set" not in out
    assert node.fixture.read_bytes() == before


@pytest.mark.parametrize("layout, message", [({"gpus": [2], "layout": ["7g.80gb"]}, "GPU 2: MIG mode is off"),
                                             ({"gpus": [0], "layout": ["9g.90gb"]}, "profile 9g.90gb is not offered"),
                                             ({"gpus": [0], "layout": ["1g.10gb"] * 8}, "8 x 1g.10gb (at most 7)")])
def test_mig_layouts_are_checked_against_the_gpus_before_the_settings_pass(node, layout, message):
    before = with_lines(node, "dgx-a100-mig")
    rc, out = node("dgx-a100-mig", {"settings": {"power_limit_w": 300}, "mig_layouts": [layout]})
    assert rc == 1 and message in out and "GPU 0: set" not in out, out
    assert node.fixture.read_bytes() == before
