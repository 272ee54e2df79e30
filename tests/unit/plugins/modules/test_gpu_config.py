"""gpu_config against the fake NVML: check/real/idempotent runs, pending modes, locked clocks, and bad input."""

from __future__ import annotations

import os

import pytest

from ansible_collections.accelops.gpu.plugins.module_utils import _gpu_config
from ansible_collections.accelops.gpu.plugins.modules import gpu_config
from simnode import FIXTURES, read_fixture

H100_GPU3 = "GPU-cc7c40c4-84fc-4d1d-949b-5a14d0863ef9"


@pytest.fixture
def configure(module_result, nvml_fixture, tmp_path):
    """configure(fixture name, **args) -> (rc, result, fixture path); state under tmp_path."""
    paths = {}

    def run(name, **args):
        if name not in paths:
            paths[name] = nvml_fixture(name)
        args.setdefault("state_dir", str(tmp_path / "state"))
        rc, result = module_result(gpu_config, args)
        return rc, result, paths[name]

    return run


def test_check_then_real_then_idempotent(configure):
    args = dict(persistence_mode=False, compute_mode="exclusive_process", power_limit_w=500)
    rc, checked, path = configure("dgx-h100", _ansible_check_mode=True, **args)
    before = path.read_bytes()
    assert rc == 0 and checked["changed"] is True
    assert [g["changed"] for g in checked["gpus"]] == [["persistence_mode", "power_limit_w", "compute_mode"]] * 8
    assert path.read_bytes() == before  # check mode wrote nothing

    rc, real, _path = configure("dgx-h100", **args)
    assert rc == 0 and real["changed"] is True
    assert real["gpus"] == checked["gpus"]
    values = read_fixture(path)
    for i in range(8):
        assert values["gpu.%d.persistence_mode" % i] == "0"
        assert values["gpu.%d.compute_mode" % i] == "3"
        assert values["gpu.%d.power.limit_mw" % i] == "500000"
    assert real["gpus"][0]["after"]["power_limit_w"] == 500.0
    assert real["gpus"][0]["before"]["power_limit_w"] == 700.0

    rc, again, _path = configure("dgx-h100", **args)
    assert rc == 0 and again["changed"] is False
    assert all(g["changed"] == [] for g in again["gpus"])
    assert again["gpus"][5]["before"]["compute_mode"] == "exclusive_process"


def test_per_gpu_rules_win_over_the_node_wide_ones(configure):
    args = dict(power_limit_w=600, persistence_mode=True, per_gpu=[
        {"gpus": ["0", "1"], "power_limit_w": 450}, {"gpus": ["7"], "persistence_mode": False},
        {"gpus": ["1"], "power_limit_w": 400}])
    rc, result, path = configure("dgx-h100", **args)
    assert rc == 0 and result["changed"]
    assert [g["after"]["power_limit_w"] for g in result["gpus"]] == [450.0, 400.0] + [600.0] * 6
    assert [g["after"]["persistence_mode"] for g in result["gpus"]] == [True] * 7 + [False]
    values = read_fixture(path)
    assert values["gpu.1.power.limit_mw"] == "400000" and values["gpu.7.persistence_mode"] == "0"
    assert configure("dgx-h100", **args)[1]["changed"] is False


def test_per_gpu_alone_touches_only_its_gpus(configure):
    rc, result, _path = configure("dgx-h100", per_gpu=[{"gpus": ["2"], "compute_mode": "prohibited"}])
    assert rc == 0 and [g["index"] for g in result["gpus"]] == [2]


def test_select_by_index_and_uuid(configure):
    rc, result, path = configure("dgx-h100", gpus=["1", H100_GPU3], persistence_mode=False)
    assert rc == 0 and [g["index"] for g in result["gpus"]] == [1, 3]
    values = read_fixture(path)
    assert [values.get("gpu.%d.persistence_mode" % i, values["gpu.*.persistence_mode"]) for i in range(5)] == \
        ["1", "0", "1", "0", "1"]


@pytest.mark.parametrize("setting, key", [("ecc_mode", "ecc.pending"), ("mig_mode", "mig.pending")])
def test_ecc_and_mig_changes_wait_for_a_reset(configure, setting, key):
    value = setting == "mig_mode"  # H100 fixture: ECC on, MIG off; request the other state
    rc, result, path = configure("dgx-h100", gpus=["0"], **{setting: value})
    assert rc == 0 and result["changed"] and result["reset_required"] is True
    assert result["pending_reset"] == [0]
    assert result["gpus"][0]["pending"] == [setting]
    assert result["gpus"][0]["after"][setting + "_pending"] is value
    assert result["gpus"][0]["after"][setting] is (not value)  # still the current mode until the reset
    assert read_fixture(path)["gpu.0." + key] == str(int(value))
    rc, again, _path = configure("dgx-h100", gpus=["0"], **{setting: value})
    assert again["changed"] is False and again["reset_required"] is True


def test_locked_clocks_are_remembered_and_reset(configure, tmp_path):
    lock = {"min": 1500, "max": 1980}
    rc, result, path = configure("dgx-h100", gpus=["2"], locked_clocks_mhz=lock)
    assert rc == 0 and result["changed"] and result["gpus"][0]["after"]["locked_clocks_mhz"] == lock
    values = read_fixture(path)
    assert (values["gpu.2.clocks.locked_min_mhz"], values["gpu.2.clocks.locked_max_mhz"]) == ("1500", "1980")
    assert (tmp_path / "state" / "locked-clocks.json").exists()
    assert configure("dgx-h100", gpus=["2"], locked_clocks_mhz=lock)[1]["changed"] is False
    rc, reset, _path = configure("dgx-h100", gpus=["2"], locked_clocks_mhz="reset")
    assert reset["changed"] is True and reset["gpus"][0]["after"]["locked_clocks_mhz"] is None
    assert "gpu.2.clocks.locked_min_mhz" not in read_fixture(path)
    assert configure("dgx-h100", gpus=["2"], locked_clocks_mhz="reset")[1]["changed"] is False


def test_diff_shows_before_and_after(configure):
    _rc, result, _path = configure("dgx-h100", gpus=["0"], power_limit_w=650, _ansible_diff=True)
    assert result["diff"]["before"]["GPU 0"]["power_limit_w"] == 700.0
    assert result["diff"]["after"]["GPU 0"]["power_limit_w"] == 650.0


def test_lost_gpu_stops_everything_by_default(configure):
    rc, result, path = configure("gpu-lost", persistence_mode=False)
    before = path.read_bytes()
    assert rc == 1 and result["msg"] == "GPU 2 is lost; nothing was changed (skip_lost: true handles the others)"
    assert path.read_bytes() == before


def test_skip_lost_handles_the_others(configure):
    rc, result, path = configure("gpu-lost", persistence_mode=False, skip_lost=True)
    assert rc == 0 and result["skipped"] == [2]
    assert [g["index"] for g in result["gpus"]] == [0, 1, 3]
    values = read_fixture(path)
    assert [values.get("gpu.%d.persistence_mode" % i) for i in (0, 1, 3)] == ["0", "0", "0"]


def test_no_permission_names_gpu_and_setting(configure):
    name = "dgx-h100"
    _rc, _result, path = configure(name, gpus=["0"], compute_mode="prohibited", _ansible_check_mode=True)
    with path.open("a") as handle:
        handle.write("setters_error=NO_PERMISSION\n")
    before = path.read_bytes()
    rc, result, _path = configure(name, gpus=["0"], compute_mode="prohibited")
    assert rc == 1
    assert result["msg"].startswith("GPU 0: setting compute_mode to prohibited failed: ")
    assert "become: true" in result["msg"]
    assert path.read_bytes() == before


BAD_INPUT = [
    ("dgx-h100", {"power_limit_w": 800}, "GPU 0: power_limit_w 800.0 is outside this GPU's range 200-700 W"),
    ("dgx-h100", {"power_limit_w": 100}, "power_limit_w 100.0 is outside this GPU's range 200-700 W"),
    ("dgx-h100", {"power_limit_w": -5}, "power_limit_w must be a positive number of watts, got -5.0"),
    ("dgx-h100", {"power_limit_w": "lots"}, "power_limit_w must be a number of watts (ASCII digits), got 'lots'"),
    ("dgx-h100", {"power_limit_w": "\uff15\uff10\uff10"}, "power_limit_w must be a number of watts (ASCII digits)"),
    ("dgx-h100", {"power_limit_w": "500\n"}, "power_limit_w must be a number of watts (ASCII digits)"),
    ("dgx-h100", {"power_limit_w": True}, "power_limit_w must be a number of watts (ASCII digits), got True"),
    ("dgx-h100", {"power_limit_w": float("nan")}, "power_limit_w must be a number of watts (ASCII digits), got nan"),
    ("dgx-h100", {"locked_clocks_mhz": "RESET\n"}, "locked_clocks_mhz: give {min: MHz, max: MHz} or 'reset'"),
    ("dgx-h100", {"compute_mode": "exclusive"},
     "value of compute_mode must be one of: default, exclusive_process, prohibited, got: exclusive"),
    ("dgx-h100", {"persistence_mode": "maybe"}, "argument 'persistence_mode' is of type"),
    ("dgx-h100", {"gpus": ["9"], "persistence_mode": True}, "gpus: index 9 is out of range; this node has GPUs 0-7"),
    ("dgx-h100", {"gpus": ["GPU-00000000-0000-0000-0000-000000000000"], "persistence_mode": True},
     "gpus: no GPU with UUID GPU-00000000-0000-0000-0000-000000000000 on this node"),
    ("dgx-h100", {"gpus": ["all", "0"], "persistence_mode": True}, "gpus: 'all' cannot be combined"),
    ("dgx-h100", {"gpus": [], "persistence_mode": True}, "gpus: give 'all' or a list of GPU indexes or UUIDs"),
    ("dgx-h100", {"gpus": ["first"], "persistence_mode": True}, "gpus: 'first' is neither 'all', a GPU index"),
    ("dgx-h100", {"locked_clocks_mhz": {"min": 1800, "max": 1500}}, "locked_clocks_mhz: need 0 < min <= max"),
    ("dgx-h100", {"locked_clocks_mhz": "fast"}, "locked_clocks_mhz: give {min: MHz, max: MHz} or 'reset'"),
    ("dgx-h100", {"locked_clocks_mhz": {"min": 1000}}, "locked_clocks_mhz: give exactly the keys min and max"),
    ("dgx-h100", {"locked_clocks_mhz": {"min": "low", "max": 1500}}, "locked_clocks_mhz: min and max must be whole"),
    ("dgx-h100", {"locked_clocks_mhz": {"min": 1000, "max": 2500}},
     "GPU 0: locked_clocks_mhz.min 1000 MHz is not a supported graphics clock; nearest: 990, 1005; "
     "GPU 0: locked_clocks_mhz.max 2500 MHz is not a supported graphics clock; nearest: 1965, 1980"),
    ("old-driver", {"locked_clocks_mhz": {"min": 1000, "max": 2500}},
     "GPU 0: locked_clocks_mhz.max 2500 MHz is above this GPU's maximum of 1530 MHz"),
    ("pcie-l40s", {"mig_mode": True}, "GPU 0: mig_mode is not supported on this GPU; GPU 1: mig_mode is not"),
    ("dgx-h100", {}, "one of the following is required: persistence_mode, power_limit_w, compute_mode"),
    ("dgx-h100", {"persistence_mode": True, "colour": "green"}, "Unsupported parameters"),
    ("dgx-h100", {"per_gpu": [{"power_limit_w": 400}]}, "missing required arguments: gpus found in per_gpu"),
    ("dgx-h100", {"per_gpu": [{"gpus": ["1"], "compute_mode": "shared"}]},
     "value of compute_mode must be one of: default, exclusive_process, prohibited, got: shared found in per_gpu"),
    ("dgx-h100", {"power_limit_w": 600, "per_gpu": [{"gpus": ["8"], "power_limit_w": 400}]},
     "per_gpu[0].gpus: index 8 is out of range"),
    ("dgx-h100", {"power_limit_w": 600, "per_gpu": [{"gpus": ["0"], "locked_clocks_mhz": "max"}]},
     "per_gpu[0].locked_clocks_mhz: give {min: MHz, max: MHz} or 'reset'"),
    ("dgx-h100", {"power_limit_w": 600, "per_gpu": [{"gpus": ["1"], "power_limit_w": 150}]},
     "GPU 1: power_limit_w 150.0 is outside this GPU's range 200-700 W"),
    ("driver-not-loaded", {"persistence_mode": True}, "NVML is not usable on this host: the NVIDIA kernel driver"),
    ("gpu-lost", {"gpus": ["2"], "power_limit_w": 600}, "GPU 2 is lost; nothing was changed"),
    ("dgx-h100", {"gpus": ["0", "1"], "power_limit_w": 450, "compute_mode": "default", "mig_mode": True,
                  "locked_clocks_mhz": {"min": 0, "max": 10}}, "locked_clocks_mhz: need 0 < min <= max"),
]


@pytest.mark.parametrize("name, args, message", BAD_INPUT, ids=[m[:40] for _n, _a, m in BAD_INPUT])
def test_bad_input_is_one_clear_error_and_changes_nothing(configure, tmp_path, name, args, message):
    rc, result, path = configure(name, **args)
    assert rc == 1, result
    assert message in result["msg"]
    assert "gpus" not in result
    assert path.read_bytes() == (FIXTURES / path.name).read_bytes()
    assert not (tmp_path / "state").exists()


def test_check_mode_without_a_driver_predicts_a_change(configure):
    rc, result, _path = configure("driver-not-loaded", persistence_mode=True, _ansible_check_mode=True)
    assert rc == 0 and result["changed"] is True and result["gpus"] == []


@pytest.mark.parametrize("name, rc, changed, gpus", [
    ("dgx-h100", 0, False, 8), ("dgx-a100-mig", 0, False, 8), ("pcie-l40s", 0, False, 2), ("busy", 0, True, 2),
    ("no-gpu", 0, False, 0), ("old-driver", 0, False, 8), ("gpu-lost", 1, None, None),
    ("driver-not-loaded", 0, True, 0),  # check mode predicts: an earlier role may be what loads the driver
])
def test_persistence_on_every_fixture_in_check_mode(configure, name, rc, changed, gpus):
    result_rc, result, path = configure(name, persistence_mode=True, _ansible_check_mode=True)
    assert result_rc == rc, result
    if rc == 0:
        assert result["changed"] is changed and len(result["gpus"]) == gpus
    assert path.read_bytes() == (FIXTURES / path.name).read_bytes()


# --------------------------------------------------------------------------- bad input the checks used to let through

MORE_BAD_INPUT = [
    ({"gpus": ["³"], "persistence_mode": True}, "gpus: '³' is neither 'all', a GPU index (ASCII digits)"),
    ({"gpus": ["٣"], "persistence_mode": True}, "gpus: '٣' is neither 'all', a GPU index (ASCII digits)"),
    ({"gpus": ["9" * 5000], "persistence_mode": True}, "is neither 'all', a GPU index (ASCII digits)"),
    ({"gpus": [True], "persistence_mode": True}, "gpus: True is neither 'all', a GPU index nor a GPU UUID"),
    ({"gpus": ["-1"], "persistence_mode": True}, "gpus: '-1' is neither 'all', a GPU index (ASCII digits)"),
    ({"gpus": ["GPU-1\n"], "persistence_mode": True}, "is neither 'all', a GPU index (ASCII digits) nor a GPU UUID"),
    ({"locked_clocks_mhz": {"min": 1500.9, "max": 1980}}, "locked_clocks_mhz: min and max must be whole MHz"),
    ({"locked_clocks_mhz": {"min": 1e400, "max": 1e400}}, "locked_clocks_mhz: min and max must be whole MHz"),
    ({"locked_clocks_mhz": {"min": True, "max": 1980}}, "locked_clocks_mhz: min and max must be whole MHz"),
    ({"per_gpu": []}, "no setting given: set at least one of persistence_mode"),
    ({"power_limit_w": 600, "per_gpu": [{"gpus": ["1"]}]}, "per_gpu[0].gpus: this entry sets nothing"),
    ({"gpus": ["9"], "per_gpu": [{"gpus": ["1"], "power_limit_w": 400}]}, "gpus: index 9 is out of range"),
    ({"gpus": ["nine"], "per_gpu": [{"gpus": ["1"], "power_limit_w": 400}]}, "gpus: 'nine' is neither"),
    ({"persistence_mode": True, "state_dir": ""}, "state_dir: give an absolute directory path"),
    ({"persistence_mode": True, "state_dir": "relative/dir"}, "state_dir: give an absolute directory path"),
    ({"persistence_mode": True, "state_dir": "/tmp/a\x00b"}, "state_dir: give an absolute directory path"),
]


@pytest.mark.parametrize("args, message", MORE_BAD_INPUT, ids=[m[:40] for _a, m in MORE_BAD_INPUT])
def test_more_bad_input_is_one_clear_error_and_changes_nothing(configure, tmp_path, args, message):
    rc, result, path = configure("dgx-h100", **args)
    assert rc == 1 and message in result["msg"], result
    assert path.read_bytes() == (FIXTURES / path.name).read_bytes()
    assert not (tmp_path / "state").exists()


def test_a_state_dir_that_is_a_file_is_refused_before_any_lock(configure, tmp_path):
    state = tmp_path / "state-file"
    state.write_text("not a directory")
    rc, result, path = configure("dgx-h100", locked_clocks_mhz={"min": 1500, "max": 1980}, state_dir=str(state))
    assert rc == 1 and result["msg"] == "state_dir: %s exists and is not a directory; nothing was changed" % state
    assert path.read_bytes() == (FIXTURES / path.name).read_bytes()


@pytest.mark.parametrize("kind", ["link", "fifo"])
def test_a_memory_that_is_a_link_or_fifo_is_refused_before_any_lock(configure, tmp_path, kind):
    state = tmp_path / "state"
    state.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("{}")
    memory = state / "locked-clocks.json"
    if kind == "link":
        memory.symlink_to(victim)
    else:
        os.mkfifo(memory)
    rc, result, path = configure("dgx-h100", locked_clocks_mhz={"min": 1500, "max": 1980})
    assert rc == 1 and result["msg"].startswith("state_dir: %s is " % memory), result
    assert result["msg"].endswith("not a regular file; nothing was changed")
    assert path.read_bytes() == (FIXTURES / path.name).read_bytes()
    assert victim.read_text() == "{}"


def test_the_memory_is_never_written_through_a_link_at_its_temporary_name(configure, tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("keep")
    (state / "locked-clocks.json.tmp").symlink_to(victim)
    rc, result, _path = configure("dgx-h100", gpus=["0"], locked_clocks_mhz={"min": 1500, "max": 1980})
    assert rc == 0 and result["changed"] is True, result
    assert victim.read_text() == "keep"
    assert not (state / "locked-clocks.json").is_symlink()
    assert "1500" in (state / "locked-clocks.json").read_text()
    assert oct((state / "locked-clocks.json").stat().st_mode & 0o777) == "0o644"


def test_a_memory_replaced_by_a_link_after_the_check_is_not_read_through_it(tmp_path):
    memory = _gpu_config.LockedClocksMemory(str(tmp_path))
    memory.check()
    victim = tmp_path / "victim"
    victim.write_text('{"gpu-x": {"min": 1, "max": 2}}')
    os.symlink(victim, memory.path)
    with pytest.raises(_gpu_config.ConfigError, match=r"cannot read .*locked-clocks.json: .*nothing was changed"):
        memory.load()


# --------------------------------------------------------------------------- NVML faults in every phase

def with_fault(configure, *lines):
    """Install dgx-h100 with fault lines appended; returns the fixture's bytes after them."""
    _rc, _result, path = configure("dgx-h100", gpus=["0"], persistence_mode=True, _ansible_check_mode=True)
    with path.open("a") as handle:
        handle.write("".join(line + "\n" for line in lines))
    return path.read_bytes()


@pytest.mark.parametrize("fault, message", [
    ("fail.nvmlDeviceGetCount_v2=1:UNKNOWN", "cannot count the GPUs: nvmlDeviceGetCount: Unknown Error"),
    ("fail.nvmlDeviceGetUUID=3:UNKNOWN", "GPU 2: cannot identify it: nvmlDeviceGetUUID: Unknown Error"),
    ("fail.nvmlDeviceGetHandleByIndex_v2=2:INSUFFICIENT_POWER", "GPU 1: cannot identify it"),
    ("fail.nvmlDeviceGetPowerManagementLimit=4:UNKNOWN",
     "nothing was changed: GPU 3: reading its current state failed: nvmlDeviceGetPowerManagementLimit: Unknown Error"),
    ("fail.nvmlDeviceGetPersistenceMode=6:GPU_IS_LOST",
     "nothing was changed: GPU 5: the GPU was lost while reading its current state"),
    ("fail.nvmlDeviceGetSupportedGraphicsClocks=1+:TIMEOUT", "GPU 0: reading its current state failed"),
])
def test_a_fault_before_any_change_changes_nothing(configure, fault, message):
    before = with_fault(configure, fault)
    rc, result, path = configure("dgx-h100", power_limit_w=500)
    assert rc == 1 and message in result["msg"], result["msg"]
    assert result.get("changed", False) is False
    assert path.read_bytes() == before


def test_a_gpu_lost_part_way_says_what_was_changed(configure):
    with_fault(configure, "fail.nvmlDeviceSetPowerManagementLimit=3:GPU_IS_LOST")
    rc, result, path = configure("dgx-h100", power_limit_w=500, persistence_mode=False, _ansible_diff=True)
    assert rc == 1 and result["changed"] is True
    assert result["msg"].startswith("GPU 2: the GPU was lost while applying its changes")
    assert "Changed before the failure: GPU 0 (persistence_mode, power_limit_w); GPU 1 (persistence_mode, " \
           "power_limit_w); GPU 2 (persistence_mode). Not changed: GPU 3, GPU 4, GPU 5, GPU 6, GPU 7." in result["msg"]
    both = ["persistence_mode", "power_limit_w"]
    assert [g["changed"] for g in result["gpus"]] == [both, both, ["persistence_mode"]]
    assert result["gpus"][2]["after"]["power_limit_w"] == 700.0  # not changed on the GPU that failed
    assert result["diff"]["after"]["GPU 1"]["power_limit_w"] == 500.0
    values = read_fixture(path)
    assert [values.get("gpu.%d.power.limit_mw" % i, values["gpu.*.power.limit_mw"]) for i in range(4)] == \
        ["500000", "500000", "700000", "700000"]


def test_a_refused_setting_on_the_first_gpu_changed_nothing(configure):
    before = with_fault(configure, "fail.nvmlDeviceSetComputeMode=1:UNKNOWN")
    rc, result, path = configure("dgx-h100", compute_mode="prohibited")
    assert rc == 1 and result["changed"] is False
    assert "GPU 0: setting compute_mode to prohibited failed: Unknown Error. Changed before the failure: nothing. " \
           "Not changed: GPU 0, GPU 1" in result["msg"]
    assert path.read_bytes() == before


def test_locked_clocks_are_remembered_before_a_later_failure(configure, tmp_path):
    with_fault(configure, "fail.nvmlDeviceSetGpuLockedClocks=2:GPU_IS_LOST")
    lock = {"min": 1500, "max": 1980}
    rc, result, _path = configure("dgx-h100", gpus=["0", "1"], locked_clocks_mhz=lock)
    assert rc == 1 and result["changed"] is True and "GPU 0 (locked_clocks_mhz)" in result["msg"]
    remembered = (tmp_path / "state" / "locked-clocks.json").read_text()
    # GPU 1's lock may have been set when the GPU was lost: it is never forgotten.
    assert '"min": 1500' in remembered and remembered.lower().count("gpu-") == 2
    rc, reset, path = configure("dgx-h100", gpus=["0"], locked_clocks_mhz="reset")
    assert rc == 0 and reset["changed"] is True
    assert "gpu.0.clocks.locked_min_mhz" not in read_fixture(path)


def test_a_lock_nvml_refuses_is_not_remembered(configure, tmp_path):
    with_fault(configure, "fail.nvmlDeviceSetGpuLockedClocks=1:UNKNOWN")
    rc, result, _path = configure("dgx-h100", gpus=["0"], locked_clocks_mhz={"min": 1500, "max": 1980})
    assert rc == 1 and result["changed"] is False
    assert "gpu-" not in (tmp_path / "state" / "locked-clocks.json").read_text().lower()


def test_a_huge_integer_index_is_refused():
    with pytest.raises(_gpu_config.ConfigError, match="an integer of 16610 bits is neither 'all', a GPU index"):
        _gpu_config.check_selectors([10 ** 5000])


def test_a_lock_without_a_uuid_to_remember_it_by_is_refused(configure):
    before = with_fault(configure, "fail.nvmlDeviceGetUUID=1:NOT_SUPPORTED")
    rc, result, path = configure("dgx-h100", locked_clocks_mhz={"min": 1410, "max": 1980})
    assert rc == 1 and "GPU 0: locked_clocks_mhz needs the GPU's UUID" in result["msg"]
    assert result["msg"].startswith("nothing was changed: ")
    assert path.read_bytes() == before


def test_an_unreadable_memory_makes_reset_reset(configure, tmp_path):
    lock = {"min": 1500, "max": 1980}
    assert configure("dgx-h100", gpus=["0"], locked_clocks_mhz=lock)[0] == 0
    (tmp_path / "state" / "locked-clocks.json").write_text("{not json")
    rc, result, path = configure("dgx-h100", gpus=["0"], locked_clocks_mhz="reset")
    assert rc == 0 and result["changed"] is True
    assert result["gpus"][0]["before"]["locked_clocks_mhz"] == "unknown"
    assert "gpu.0.clocks.locked_min_mhz" not in read_fixture(path)
    assert configure("dgx-h100", gpus=["0"], locked_clocks_mhz="reset")[1]["changed"] is False


def test_an_unreadable_memory_stays_unknown_for_the_gpus_not_touched(configure, tmp_path):
    assert configure("dgx-h100", locked_clocks_mhz={"min": 1500, "max": 1980})[0] == 0
    (tmp_path / "state" / "locked-clocks.json").write_text("{corrupt")
    rc, result, _path = configure("dgx-h100", gpus=["0"], locked_clocks_mhz={"min": 1410, "max": 1980})
    assert rc == 0 and result["changed"] is True
    rc, reset, path = configure("dgx-h100", locked_clocks_mhz="reset")
    assert rc == 0 and [g["changed"] for g in reset["gpus"]] == [["locked_clocks_mhz"]] * 8
    assert not any(key.startswith("gpu.%d.clocks.locked" % i) for key in read_fixture(path) for i in range(8))


@pytest.mark.parametrize("setter, args", [
    ("nvmlDeviceSetGpuLockedClocks", {"locked_clocks_mhz": {"min": 1410, "max": 1980}}),
    ("nvmlDeviceSetPowerManagementLimit", {"power_limit_w": 500}),
    ("nvmlDeviceSetPersistenceMode", {"persistence_mode": False}),
    ("nvmlDeviceSetComputeMode", {"compute_mode": "prohibited"}),
    ("nvmlDeviceSetEccMode", {"ecc_mode": False}),
    ("nvmlDeviceSetMigMode", {"mig_mode": True}),
])
@pytest.mark.parametrize("code", ["NOT_SUPPORTED", "FUNCTION_NOT_FOUND"])
def test_a_setter_nvml_does_not_carry_out_is_never_done(configure, tmp_path, setter, args, code):
    before = with_fault(configure, "fail.%s=1+:%s" % (setter, code))
    rc, result, path = configure("dgx-h100", gpus=["0"], **args)
    assert rc == 1 and result["changed"] is False and "failed" in result["msg"], result
    assert path.read_bytes() == before
    memory = tmp_path / "state" / "locked-clocks.json"
    assert not memory.exists() or "gpu-" not in memory.read_text().lower()


@pytest.mark.parametrize("memory", ['{"GPU-%s": null}', '{"GPU-%s": 5}', '{"GPU-%s": {"min": 1, "max": "x"}}',
                                    '{"gpu-%s": {"min": 1500, "max": 1980}}'])
def test_a_memory_this_module_did_not_write_counts_as_unknown_or_is_matched(configure, tmp_path, memory):
    lock = {"min": 1500, "max": 1980}
    assert configure("dgx-h100", gpus=["0"], locked_clocks_mhz=lock)[0] == 0
    uuid = read_fixture(tmp_path / "dgx-h100.conf")["gpu.0.uuid"][4:]
    (tmp_path / "state" / "locked-clocks.json").write_text(memory % uuid.upper() if "GPU-" in memory else memory % uuid)
    rc, reset, path = configure("dgx-h100", gpus=["0"], locked_clocks_mhz="reset")
    assert rc == 0 and reset["changed"] is True, reset
    assert "gpu.0.clocks.locked_min_mhz" not in read_fixture(path)
