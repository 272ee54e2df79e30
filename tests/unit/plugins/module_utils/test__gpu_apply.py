"""The one way GPUs are changed: validate every GPU, then apply, and say what changed when a change fails."""

from __future__ import annotations

import pytest

from ansible_collections.accelops.gpu.plugins.module_utils._gpu_apply import (
    ApplyFailed,
    ConfigError,
    apply_every_gpu,
    validate_every_gpu,
)
from ansible_collections.accelops.gpu.plugins.module_utils._nvml import GpuLost, NvmlCallError

GPUS = [{"index": i} for i in range(4)]


def report(gpu, plan, done):
    return {"index": gpu["index"], "changed": list(plan if done is None else done)}


def test_every_problem_of_every_gpu_is_named_and_nothing_applies():
    def check(gpu):
        if gpu["index"] == 1:
            raise GpuLost("nvmlDeviceGetPowerManagementLimit")
        if gpu["index"] == 2:
            raise NvmlCallError("nvmlDeviceGetEccMode", 10, "Timeout")
        return ["persistence_mode"], ["GPU 3: too hot"] if gpu["index"] == 3 else []

    with pytest.raises(ConfigError) as error:
        validate_every_gpu(GPUS, check)
    assert str(error.value) == (
        "nothing was changed: GPU 1: the GPU was lost while reading its current state "
        "(nvmlDeviceGetPowerManagementLimit); GPU 2: reading its current state failed: nvmlDeviceGetEccMode: Timeout "
        "(NVML error 10); GPU 3: too hot")


def test_check_mode_applies_nothing_and_reports_the_plan():
    calls = []
    results = apply_every_gpu(GPUS, {g["index"]: ["a"] for g in GPUS}, lambda *a: calls.append(a), report, True)
    assert calls == [] and [r["changed"] for r in results] == [["a"]] * 4


@pytest.mark.parametrize("fault, first", [
    (GpuLost("nvmlDeviceSetComputeMode"),
     "GPU 2: the GPU was lost while applying its changes (nvmlDeviceSetComputeMode)"),
    (NvmlCallError("nvmlDeviceSetComputeMode", 999, "Unknown Error"),
     "GPU 2: applying its changes failed: nvmlDeviceSetComputeMode: Unknown Error (NVML error 999)"),
    (ConfigError("GPU 2: setting compute_mode to prohibited failed: Unknown Error"),
     "GPU 2: setting compute_mode to prohibited failed: Unknown Error"),
    (PermissionError(13, "Permission denied"), "GPU 2: applying its changes failed: Permission denied"),
])
def test_a_failure_part_way_names_what_changed_and_what_did_not(fault, first):
    def apply_one(gpu, plan, done):
        for name in plan:
            if gpu["index"] == 2 and name == "b":
                raise fault
            done.append(name)

    with pytest.raises(ApplyFailed) as error:
        apply_every_gpu(GPUS, {g["index"]: ["a", "b"] for g in GPUS}, apply_one, report, False)
    assert str(error.value) == "%s. Changed before the failure: GPU 0 (a, b); GPU 1 (a, b); GPU 2 (a). Not changed: " \
                               "GPU 3." % first
    assert error.value.changed is True and [r["changed"] for r in error.value.results] == [["a", "b"]] * 2 + [["a"]]


def test_a_failure_on_the_first_step_changed_nothing():
    def apply_one(gpu, plan, done):
        raise NvmlCallError("nvmlDeviceSetPersistenceMode", 4, "Insufficient Permissions")

    with pytest.raises(ApplyFailed) as error:
        apply_every_gpu(GPUS[:2], {0: ["a"], 1: ["a"]}, apply_one, report, False)
    assert error.value.changed is False
    assert str(error.value).endswith("Changed before the failure: nothing. Not changed: GPU 0, GPU 1.")


def test_an_unexpected_exception_is_not_swallowed():
    def apply_one(gpu, plan, done):
        raise KeyError("a bug")

    with pytest.raises(KeyError):
        apply_every_gpu(GPUS[:1], {0: ["a"]}, apply_one, report, False)
