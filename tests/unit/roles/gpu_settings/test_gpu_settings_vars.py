"""gpu_settings' decisions between its passes, rendered by Ansible's own templating from the role's task files."""

from __future__ import annotations

import pytest
from rolevars import Batch, preflight_task, role_files

MIG = preflight_task("gpu_settings", "Run gpu_mig for each layout ({{ __gpu_settings_pass }})", "run_gpu_mig.yml")
VERIFY = preflight_task("gpu_settings", "Check that every rule now holds", "verify.yml")
BATCH = Batch()
SKIPPED = {"skipped": True, "changed": False}


def case(**variables):
    templates = [("waiting", "{{ __gpu_settings_waiting }}"),
                 ("verify", "{{ %s }}" % " and ".join("(%s)" % condition for condition in VERIFY["when"]))]
    return BATCH.add(role_files("gpu_settings"), {"ansible_check_mode": False, **variables}, templates,
                     {"__gpu_settings_waiting": MIG["vars"]["__gpu_settings_waiting"]})


@pytest.mark.parametrize("key, waiting, verify", [
    # The apply pass changed something: the verify pass reads every GPU again, and its read of the waiting GPUs counts.
    (case(__gpu_settings_applied={"changed": True, "pending_reset": [2]},
          __gpu_settings_result={"changed": False, "pending_reset": [2]}), [2], True),
    # A converged re-run with a MIG mode change waiting for a reset: the verify pass is skipped (its skipped result
    # replaces the apply pass's under the same name), and the layouts of the waiting GPU are still left out.
    (case(__gpu_settings_applied={"changed": False, "pending_reset": [2]}, __gpu_settings_result=SKIPPED), [2], False),
    (case(__gpu_settings_applied={"changed": False, "pending_reset": []}, __gpu_settings_result=SKIPPED), [], False),
    # Tags left the apply pass out: the verify pass is the check.
    (case(__gpu_settings_result={"changed": False, "pending_reset": [0, 1]}), [0, 1], True),
], ids=["after-a-change", "converged-reset-pending", "converged", "apply-left-out"])
def test_the_verify_pass_and_the_gpus_waiting_for_a_reset(key, waiting, verify):
    result = BATCH[key]
    assert result["waiting"] == waiting, result
    assert result["verify"] in ((True, "True") if verify else (False, "False")), result
