"""gpu_mig against the fake NVML's MIG profile tables, placements and instances (A100 80GB, H100 80GB)."""

from __future__ import annotations

import re

import pytest

from ansible_collections.accelops.gpu.plugins.modules import gpu_facts, gpu_mig
from simnode import FIXTURES, read_fixture

MIXED = ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]


@pytest.fixture
def mig(module_result, nvml_fixture):
    """mig(fixture, extra fixture lines, **args) -> (rc, result, path); the fixture is installed once per test."""
    paths = {}

    def run(name, extra=(), **args):
        if name not in paths:
            paths[name] = nvml_fixture(name)
            if extra:
                with paths[name].open("a") as handle:
                    handle.write("\n".join(extra) + "\n")
        rc, result = module_result(gpu_mig, args)
        return rc, result, paths[name]

    return run


H100_MIG_ON = ["gpu.0.mig.current=1", "gpu.0.mig.pending=1", "gpu.1.mig.current=1", "gpu.1.mig.pending=1"]


def test_existing_layouts_are_left_alone(mig):
    rc, result, path = mig("dgx-a100-mig", gpus=[0], layout=["1g.10gb"] * 7)
    assert rc == 0 and result["changed"] is False
    gpu = result["gpus"][0]
    assert gpu["before"] == gpu["after"] == ["1g.10gb"] * 7
    values = read_fixture(path)
    assert [d["uuid"] for d in gpu["mig_devices"]] == [values["gpu.0.gi.%d.ci.0.uuid" % gi] for gi in range(7, 14)]
    rc, result, _path = mig("dgx-a100-mig", gpus=[1], layout=["1g.10gb", "3g.40gb", "2g.20gb"])
    assert rc == 0 and result["changed"] is False


def test_check_then_create_then_idempotent(mig, module_result):
    rc, checked, path = mig("dgx-h100", H100_MIG_ON, gpus=[0], layout=MIXED, _ansible_check_mode=True)
    before = path.read_bytes()
    assert rc == 0 and checked["changed"] is True
    # 1g instances cannot use the eighth memory slice, so the 3g.40gb goes to the upper half
    assert checked["gpus"][0]["created"] == ["3g.40gb@4", "2g.20gb@0", "1g.10gb@2", "1g.10gb@3"]
    assert path.read_bytes() == before

    rc, real, _path = mig("dgx-h100", gpus=[0], layout=MIXED)
    assert rc == 0 and real["changed"] is True
    devices = real["gpus"][0]["mig_devices"]
    assert sorted(d["profile"] for d in devices) == sorted(MIXED)
    assert all(d["uuid"].startswith("MIG-") for d in devices)
    assert len({d["uuid"] for d in devices}) == 4

    rc, again, _path = mig("dgx-h100", gpus=[0], layout=list(reversed(MIXED)))
    assert rc == 0 and again["changed"] is False and again["gpus"][0]["mig_devices"] == devices

    rc, facts = module_result(gpu_facts, {"gather_subset": ["mig"]})
    seen = facts["ansible_facts"]["nvidia"]["gpus"][0]["mig_devices"]
    assert sorted(d["uuid"] for d in seen) == sorted(d["uuid"] for d in devices)


def test_matching_instances_are_kept(mig):
    assert mig("dgx-h100", H100_MIG_ON, gpus=[1], layout=MIXED)[0] == 0
    rc, result, _path = mig("dgx-h100", gpus=[1], layout=["3g.40gb", "3g.40gb"])
    gpu = result["gpus"][0]
    assert rc == 0 and gpu["after"] == ["3g.40gb", "3g.40gb"]
    assert gpu["created"] == ["3g.40gb@0"]
    assert sorted(gpu["destroyed"]) == ["1g.10gb@2", "1g.10gb@3", "2g.20gb@0"]


def test_empty_layout_removes_every_instance(mig):
    rc, result, path = mig("dgx-a100-mig", gpus=[0], layout=[])
    assert rc == 0 and result["changed"] and len(result["gpus"][0]["destroyed"]) == 7
    assert result["gpus"][0]["mig_devices"] == []
    assert not any(key.startswith("gpu.0.gi.") for key in read_fixture(path))


def test_busy_instance_is_not_destroyed(mig):
    rc, result, path = mig("dgx-a100-mig", gpus=[1], layout=["7g.80gb"])
    assert rc == 1
    assert "GPU 1: the 3g.40gb instance (GPU instance 2) would be destroyed but runs processes" in result["msg"]
    assert "force: true" in result["msg"]
    assert path.read_bytes() == (FIXTURES / "dgx-a100-mig.conf").read_bytes()


def test_force_still_meets_nvml_refusal_and_changes_nothing(mig):
    rc, result, path = mig("dgx-a100-mig", gpus=[1], layout=["7g.80gb"], force=True)
    assert rc == 1 and "destroying the 3g.40gb instance (GPU instance 2) failed" in result["msg"]
    assert path.read_bytes() == (FIXTURES / "dgx-a100-mig.conf").read_bytes()


BAD = [
    ("dgx-a100-mig", {"gpus": [0], "layout": ["5g.50gb"]}, "GPU 0: profile 5g.50gb is not offered; this GPU offers"),
    ("dgx-a100-mig", {"gpus": [0], "layout": ["4g.40gb", "4g.40gb"]},
     "GPU 0: layout 4g.40gb + 4g.40gb does not fit this GPU's memory slices and placements: 2 x 4g.40gb (at most 1)"),
    ("dgx-a100-mig", {"gpus": [0], "layout": ["7g.80gb", "1g.10gb"]}, "layout 7g.80gb + 1g.10gb does not fit"),
    ("dgx-a100-mig", {"gpus": [0], "layout": ["1g.10gb"] * 8}, "8 x 1g.10gb (at most 7)"),
    ("dgx-a100-mig", {"gpus": [2], "layout": ["7g.80gb"]},
     "GPU 2: MIG mode is off; enable it with accelops.gpu.gpu_config (mig_mode: true) and reset the GPU"),
    ("dgx-a100-mig", {"gpus": [0, 3], "layout": ["7g.80gb"]}, "GPU 3: MIG mode is off"),
    ("pcie-l40s", {"layout": ["1g.10gb"]}, "GPU 0: MIG is not supported on this GPU; GPU 1: MIG is not supported"),
    ("dgx-a100-mig", {"gpus": [8], "layout": []}, "gpus: index 8 is out of range; this node has GPUs 0-7"),
    ("dgx-a100-mig", {"gpus": ["GPU-deadbeef-0000-0000-0000-000000000000"], "layout": []}, "no GPU with UUID"),
    ("dgx-a100-mig", {"gpus": [0]}, "missing required arguments: layout"),
    ("dgx-a100-mig", {"gpus": [0], "layout": [], "force": "sometimes"}, "argument 'force' is of type"),
    ("gpu-lost", {"layout": []}, "GPU 2 is lost; nothing was changed"),
    ("driver-not-loaded", {"layout": []}, "NVML is not usable on this host"),
]


@pytest.mark.parametrize("name, args, message", BAD, ids=[b[2][:40] for b in BAD])
def test_bad_layouts_change_nothing(mig, name, args, message):
    rc, result, path = mig(name, **args)
    assert rc == 1 and message in result["msg"], result["msg"]
    assert path.read_bytes() == (FIXTURES / path.name).read_bytes()


def test_pending_mig_mode_is_named(mig):
    rc, result, _path = mig("dgx-h100", ["gpu.4.mig.pending=1"], gpus=[4], layout=["7g.80gb"])
    assert rc == 1 and "GPU 4: MIG mode is enabled but waits for a GPU reset" in result["msg"]


@pytest.mark.parametrize("name, message", [
    ("dgx-h100", "GPU 0: MIG mode is off"), ("pcie-l40s", "GPU 0: MIG is not supported on this GPU"),
    ("busy", "GPU 0: MIG is not supported on this GPU"), ("old-driver", "GPU 0: MIG is not supported on this GPU"),
    ("gpu-lost", "GPU 2 is lost"), ("driver-not-loaded", "NVML is not usable on this host"),
])
def test_layout_on_every_fixture_without_mig_is_refused(mig, name, message):
    rc, result, path = mig(name, layout=["1g.10gb"])
    assert rc == 1 and message in result["msg"]
    assert path.read_bytes() == (FIXTURES / path.name).read_bytes()


def test_no_gpu_host_has_nothing_to_lay_out(mig):
    rc, result, _path = mig("no-gpu", layout=["1g.10gb"])
    assert rc == 0 and result["changed"] is False and result["gpus"] == []


# --------------------------------------------------------------------------- layout names and NVML faults


@pytest.mark.parametrize("layout, message", [
    ([""], "layout[0]: '' is not a MIG GPU-instance profile name"),
    ([" 1g.10gb"], "layout[0]: ' 1g.10gb' is not a MIG GPU-instance profile name"),
    (["1g.10gb", "1g.10gb\n"], "layout[1]: '1g.10gb\\n' is not a MIG GPU-instance profile name"),
    (["MIG 1g.10gb"], "layout[0]: 'MIG 1g.10gb' is not"),
])
def test_malformed_profile_names_are_refused_before_nvml(mig, layout, message):
    rc, result, path = mig("dgx-a100-mig", gpus=[0], layout=layout)
    assert rc == 1 and message in result["msg"], result["msg"]
    assert path.read_bytes() == (FIXTURES / path.name).read_bytes()


@pytest.mark.parametrize("fault, message", [
    ("fail.nvmlDeviceGetCount_v2=1:UNKNOWN", "cannot count the GPUs"),
    ("fail.nvmlDeviceGetGpuInstances=1:UNKNOWN",
     "nothing was changed: GPU 0: reading its current state failed: nvmlDeviceGetGpuInstances: Unknown Error"),
    ("fail.nvmlGpuInstanceGetInfo=3:GPU_IS_LOST", "GPU 0: the GPU was lost while reading its current state"),
    ("fail.nvmlDeviceGetMigMode=2:UNKNOWN", "GPU 1: reading its current state failed: nvmlDeviceGetMigMode"),
])
def test_a_fault_while_reading_changes_nothing(mig, fault, message):
    rc, result, path = mig("dgx-a100-mig", [fault], gpus=[0, 1], layout=["7g.80gb"])
    assert rc == 1 and message in result["msg"], result["msg"]
    assert result.get("changed", False) is False
    assert path.read_bytes() == (FIXTURES / path.name).read_bytes() + (fault + "\n").encode()


def test_a_failed_create_reports_exactly_what_was_destroyed(mig):
    fault = "fail.nvmlDeviceCreateGpuInstanceWithPlacement=1:INSUFFICIENT_RESOURCES"
    rc, result, path = mig("dgx-a100-mig", [fault], gpus=[0], layout=["7g.80gb"])
    assert rc == 1 and result["changed"] is True
    gpu = result["gpus"][0]
    assert gpu["destroyed"] == ["1g.10gb@%d" % s for s in range(7)] and gpu["created"] == []
    assert gpu["after"] == [] and gpu["before"] == ["1g.10gb"] * 7
    assert result["msg"].startswith("GPU 0: creating a 7g.80gb instance at memory slice 0 failed")
    assert "Changed before the failure: GPU 0 (destroyed 1g.10gb@0, destroyed 1g.10gb@1" in result["msg"]
    assert not any(key.startswith("gpu.0.gi.") for key in read_fixture(path))


def test_nvml_refusing_the_second_gpu_names_what_the_first_lost(mig):
    rc, result, _path = mig("dgx-a100-mig", gpus=[0, 1], layout=[], force=True)
    assert rc == 1 and result["changed"] is True
    assert result["msg"].startswith("GPU 1: destroying the 3g.40gb instance (GPU instance 2) failed: In use")
    assert "Not changed: GPU 1." in result["msg"]  # the busy instance is destroyed first, so nothing else went
    assert [len(g["destroyed"]) for g in result["gpus"]] == [7, 0]


def test_a_gpu_lost_part_way(mig):
    fault = "fail.nvmlGpuInstanceDestroy=3:GPU_IS_LOST"
    rc, result, path = mig("dgx-a100-mig", [fault], gpus=[0], layout=["7g.80gb"])
    assert rc == 1 and result["changed"] is True
    assert result["msg"].startswith("GPU 0: the GPU was lost while applying its changes")
    # The third instance lost its compute instance before NVML failed on the instance itself: it is reported as
    # partly destroyed, and its GPU instance as still there.
    assert result["gpus"][0]["destroyed"] == ["1g.10gb@0", "1g.10gb@1"]
    assert result["gpus"][0]["changed"] == ["destroyed 1g.10gb@0", "destroyed 1g.10gb@1", "partly destroyed 1g.10gb@2"]
    assert "partly destroyed 1g.10gb@2" in result["msg"]
    assert result["gpus"][0]["after"] == ["1g.10gb"] * 5
    values = read_fixture(path)
    assert sum(1 for key in values if re.fullmatch(r"gpu\.0\.gi\.\d+\.profile", key)) == 5
    assert sum(1 for key in values if re.fullmatch(r"gpu\.0\.gi\.\d+\.ci\.0\.profile", key)) == 4


def test_check_mode_with_force_warns_that_nvml_will_refuse(mig, monkeypatch):
    from ansible.module_utils import _internal

    monkeypatch.setattr(_internal, "is_controller", False)  # an earlier test may have loaded the controller side
    rc, result, path = mig("dgx-a100-mig", gpus=[1], layout=["7g.80gb"], force=True, _ansible_check_mode=True)
    assert rc == 0 and result["changed"] is True
    assert any("NVML refuses to destroy a MIG instance while a process runs on it" in str(w)
               for w in result.get("warnings", [])), result
    assert path.read_bytes() == (FIXTURES / path.name).read_bytes()


def test_a_compute_instance_that_fails_after_its_gpu_instance_is_reported_created(mig):
    rc, result, path = mig("dgx-a100-mig", ["fail.nvmlGpuInstanceCreateComputeInstance=1:UNKNOWN"], gpus=[0],
                           layout=["7g.80gb"])
    assert rc == 1 and result["changed"] is True
    assert result["gpus"][0]["created"] == [] and result["gpus"][0]["changed"][-1] == "partly created 7g.80gb@0"
    assert result["gpus"][0]["after"] == ["7g.80gb"]
    assert "GPU 0: creating a 7g.80gb instance at memory slice 0 failed: Unknown Error" in result["msg"]
    assert "partly created 7g.80gb@0)" in result["msg"]
    assert read_fixture(path)["gpu.0.gi.0.profile"] in ("0", "7g.80gb")


def test_a_first_destroy_step_is_reported(mig):
    rc, result, _path = mig("dgx-a100-mig", ["fail.nvmlGpuInstanceDestroy=1:INSUFFICIENT_RESOURCES"], gpus=[0],
                            layout=["7g.80gb"])
    assert rc == 1 and result["changed"] is True and result["gpus"][0]["destroyed"] == []
    assert result["gpus"][0]["changed"] == ["partly destroyed 1g.10gb@0"]


@pytest.mark.parametrize("fault, message", [
    ("fail.nvmlDeviceGetGpuInstanceProfileInfoV=3:UNKNOWN", "reading its current state failed"),
    ("fail.nvmlGpuInstanceGetComputeInstanceProfileInfoV=1:TIMEOUT", "reading its current state failed"),
    ("fail.nvmlDeviceGetComputeRunningProcesses_v3=1+:NO_PERMISSION", "reading its current state failed"),
])
def test_a_profile_or_process_read_that_fails_stops_the_plan(mig, fault, message):
    rc, result, path = mig("dgx-a100-mig", [fault], gpus=["1"], layout=["7g.80gb"], force=True)
    assert rc == 1 and message in result["msg"] and result.get("changed", False) is False, result["msg"]
    assert path.read_bytes() == (FIXTURES / path.name).read_bytes() + (fault + "\n").encode()


def test_mig_devices_that_cannot_be_listed_are_null(mig):
    # The first call plans (it must succeed), the second reads the devices back after the run.
    rc, result, _path = mig("dgx-a100-mig", ["fail.nvmlDeviceGetMaxMigDeviceCount=2:UNKNOWN"], gpus=[0],
                            layout=["1g.10gb"] * 7)
    assert rc == 0 and result["gpus"][0]["mig_devices"] is None


@pytest.mark.parametrize("fault, message", [
    ("fail.nvmlGpuInstanceDestroy=1+:NOT_SUPPORTED",
     "destroying the 1g.10gb instance (GPU instance 7) failed: Not Supported"),
    ("fail.nvmlComputeInstanceDestroy=1:NOT_SUPPORTED", "destroying the 1g.10gb instance (GPU instance 7) failed"),
    ("fail.nvmlGpuInstanceCreateComputeInstance=1:FUNCTION_NOT_FOUND", "creating a 3g.40gb instance at memory slice"),
    ("fail.nvmlGpuInstanceGetInfo=1:NOT_SUPPORTED", "reading its current state failed: nvmlGpuInstanceGetInfo"),
])
def test_an_answer_of_not_supported_is_never_done(mig, fault, message):
    rc, result, _path = mig("dgx-a100-mig", [fault], gpus=[0], layout=["3g.40gb", "3g.40gb"])
    assert rc == 1 and message in result["msg"], result["msg"]


def test_an_instance_no_profile_accounts_for_stops_the_plan(mig):
    fault = "fail.nvmlDeviceGetGpuInstanceProfileInfoV=1:NOT_SUPPORTED"  # 1g.10gb no longer described
    rc, result, path = mig("dgx-a100-mig", [fault], gpus=["1"], layout=["3g.40gb", "2g.20gb"])
    assert rc == 1 and "GPU 1: GPU instance 9 has MIG devices but no profile NVML describes" in result["msg"], result
    assert path.read_bytes() == (FIXTURES / path.name).read_bytes() + (fault + "\n").encode()


@pytest.mark.parametrize("code", ["NOT_SUPPORTED", "FUNCTION_NOT_FOUND"])
def test_processes_nvml_cannot_list_protect_every_instance(mig, code):
    faults = ["fail.nvmlDeviceGetComputeRunningProcesses_v3=1+:%s" % code,
              "fail.nvmlDeviceGetComputeRunningProcesses_v2=1+:%s" % code]
    rc, result, path = mig("dgx-a100-mig", faults, gpus=[0], layout=["3g.40gb", "3g.40gb"])
    assert rc == 1 and "GPU 0: NVML cannot list the processes on this GPU" in result["msg"], result["msg"]
    assert path.read_bytes() == (FIXTURES / path.name).read_bytes() + "".join(f + "\n" for f in faults).encode()
