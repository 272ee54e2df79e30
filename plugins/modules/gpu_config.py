#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: gpu_config
short_description: Set NVIDIA GPU persistence, power limit, compute mode, ECC, MIG mode and locked clocks
version_added: 0.1.0
description:
  - Declares the settings some or all GPUs should have and changes, through NVML, only what differs.
  - Validates every requested value against every targeted GPU first (power within that GPU's limits, the feature
    supported, clocks among its supported graphics clocks) and changes nothing at all when any value is invalid.
  - ECC and MIG mode changes are stored as pending by the driver and apply at the next GPU reset or reboot; the
    result says which GPUs need one (RV(reset_required), RV(gpus[].pending)).
  - The driver forgets persistence, power limit, compute mode and locked clocks when it is reloaded; the
    C(accelops.gpu.gpu_settings) role re-applies them at boot.
  - A lost GPU among the targets fails the task before anything changes, unless O(skip_lost=true), which leaves
    the lost GPUs out (listed in RV(skipped)) and handles the others.
  - Any NVML error while the GPUs are counted, identified or read fails the task before anything changes. A change
    that fails part-way (a GPU lost, a setting refused) stops there and fails the task with C(changed=true) when
    something was changed; its message and RV(gpus) say which settings were changed on which GPUs and which GPUs
    were left as they were.
  - A locked clock range is remembered under O(state_dir) before it is set, so that a later C(reset) always knows
    about it; O(state_dir) is checked before anything changes.
  - Without nvidia-ml-py or a loaded driver the task fails; in check mode it reports a change with a warning
    instead, since an earlier role of the same run may be what installs them.
options:
  gpus:
    description: The GPUs the settings at the top level apply to; C(all), or GPU indexes and UUIDs (C(GPU-...)).
    type: list
    elements: raw
    default: [all]
  per_gpu:
    description:
      - Settings for some GPUs, applied over the top-level ones in order (a later entry wins for the GPUs it
        names). GPUs named only here are configured too.
      - Each entry has O(per_gpu[].gpus) and any of the settings, with the same meaning as at the top level.
    type: list
    elements: dict
    suboptions:
      gpus:
        description: GPU indexes and UUIDs, or C(all).
        type: list
        elements: raw
        required: true
      persistence_mode:
        description: See O(persistence_mode).
        type: bool
      power_limit_w:
        description: See O(power_limit_w).
        type: raw
      compute_mode:
        description: See O(compute_mode).
        type: str
        choices: [default, exclusive_process, prohibited]
      ecc_mode:
        description: See O(ecc_mode).
        type: bool
      mig_mode:
        description: See O(mig_mode).
        type: bool
      locked_clocks_mhz:
        description: See O(locked_clocks_mhz).
        type: raw
  persistence_mode:
    description: Keep the driver initialised when no client is attached (recommended on servers).
    type: bool
  power_limit_w:
    description: Board power limit in watts, within the GPU's minimum and maximum; a number, or text of ASCII digits.
    type: raw
  compute_mode:
    description: Who may create CUDA contexts. C(exclusive_process) allows one process per GPU (for schedulers).
    type: str
    choices: [default, exclusive_process, prohibited]
  ecc_mode:
    description: ECC memory protection; the change is pending until the GPU is reset.
    type: bool
  mig_mode:
    description: Multi-Instance GPU mode; the change is pending until the GPU is reset. Lay out instances with
      M(accelops.gpu.gpu_mig).
    type: bool
  locked_clocks_mhz:
    description:
      - Lock the graphics clock into a range, as a dictionary C({min, max}) in MHz, each among the GPU's supported
        graphics clocks; or C(reset) to unlock.
      - NVML cannot read locked clocks back, so the module remembers what it set under O(state_dir) (cleared at
        reboot, as the locks are). When that memory is unreadable, the locks read as C(unknown), and C(reset)
        resets them.
    type: raw
  skip_lost:
    description: Leave lost GPUs out and handle the others, instead of failing before any change.
    type: bool
    default: false
  state_dir:
    description: Where the module remembers the locked clocks it set.
    type: path
    default: /run/accelops-gpu
extends_documentation_fragment:
  - accelops.gpu.attributes
  - accelops.gpu.attributes.nvml
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  idempotent:
    support: full
notes:
  - Needs root on the managed host (C(become=true)).
seealso:
  - module: accelops.gpu.gpu_mig
  - module: accelops.gpu.gpu_facts
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Persistence on and exclusive-process compute mode on every GPU, for a scheduler
  accelops.gpu.gpu_config:
    persistence_mode: true
    compute_mode: exclusive_process
  become: true

- name: Cap GPUs 0 and 1 of a hot rack at 500 W
  accelops.gpu.gpu_config:
    gpus: [0, 1]
    power_limit_w: 500
  become: true

- name: 600 W everywhere except 450 W on GPUs 0 and 1, in one task
  accelops.gpu.gpu_config:
    power_limit_w: 600
    per_gpu:
      - gpus: [0, 1]
        power_limit_w: 450
  become: true

- name: Lock graphics clocks for reproducible benchmarks
  accelops.gpu.gpu_config:
    locked_clocks_mhz: {min: 1980, max: 1980}
  become: true

- name: Unlock them again
  accelops.gpu.gpu_config:
    locked_clocks_mhz: reset
  become: true

- name: Enable MIG on one GPU by UUID and tell whether a reset is needed
  accelops.gpu.gpu_config:
    gpus: [GPU-5b357cbf-a18f-4d4b-a1fa-e80574e9a835]
    mig_mode: true
  become: true
  register: mig

- name: Report the pending reset
  ansible.builtin.debug:
    msg: "Reset GPUs {{ mig.pending_reset | join(', ') }} (nvidia-smi -r) or reboot to enable MIG"
  when: mig.reset_required
"""

RETURN = r"""
gpus:
  description: Each targeted GPU with its settings before and after, and what changed. When a change failed
    part-way, the GPUs up to the one that failed, each with what was changed on it.
  returned: always
  type: list
  elements: dict
  contains:
    index:
      description: NVML index.
      type: int
      returned: always
    uuid:
      description: GPU UUID.
      type: str
      returned: always
    before:
      description: Settings before the run (persistence_mode, power_limit_w, compute_mode, ecc_mode,
        ecc_mode_pending, mig_mode, mig_mode_pending, locked_clocks_mhz).
      type: dict
      returned: always
    after:
      description: Settings after the run (in check mode, what they would be).
      type: dict
      returned: always
    changed:
      description: The settings that changed (or would change).
      type: list
      elements: str
      returned: always
    pending:
      description: Settings that take effect only after a GPU reset or reboot (C(ecc_mode), C(mig_mode)).
      type: list
      elements: str
      returned: always
  sample:
    - index: 0
      uuid: GPU-5b357cbf-a18f-4d4b-a1fa-e80574e9a835
      before: {persistence_mode: false, power_limit_w: 700.0, compute_mode: default}
      after: {persistence_mode: true, power_limit_w: 500.0, compute_mode: exclusive_process}
      changed: [persistence_mode, power_limit_w, compute_mode]
      pending: []
reset_required:
  description: Whether some GPU has an ECC or MIG mode change pending until a GPU reset or reboot.
  returned: always
  type: bool
  sample: false
pending_reset:
  description: Indexes of the GPUs that need a reset for a pending change.
  returned: always
  type: list
  elements: int
  sample: []
skipped:
  description: Indexes of lost GPUs left out with O(skip_lost=true).
  returned: always
  type: list
  elements: int
  sample: []
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.accelops.gpu.plugins.module_utils import _gpu_config
from ansible_collections.accelops.gpu.plugins.module_utils._gpu_config import (
    SETTINGS,
    ConfigError,
    GpuConfigurator,
    LockedClocksMemory,
    check_rules,
    diff_by_gpu,
    run_in_session,
)


def configure(module, session, rules):
    if os.geteuid() != 0 and not module.check_mode:
        raise ConfigError("changing GPU settings needs root: run the task with become: true")
    configurator = GpuConfigurator(session, LockedClocksMemory(module.params["state_dir"]))
    return _gpu_config.configure(configurator, rules, module.check_mode, module.params["skip_lost"])


# The settings, at the top level (for O(gpus)) and in each O(per_gpu) entry.
SETTING_SPEC = dict(
    persistence_mode=dict(type="bool"),
    power_limit_w=dict(type="raw"),
    compute_mode=dict(type="str", choices=["default", "exclusive_process", "prohibited"]),
    ecc_mode=dict(type="bool"),
    mig_mode=dict(type="bool"),
    locked_clocks_mhz=dict(type="raw"),
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            gpus=dict(type="list", elements="raw", default=["all"]),
            per_gpu=dict(type="list", elements="dict", options=dict(
                gpus=dict(type="list", elements="raw", required=True), **SETTING_SPEC)),
            skip_lost=dict(type="bool", default=False),
            state_dir=dict(type="path", default="/run/accelops-gpu"),
            **SETTING_SPEC,
        ),
        required_one_of=[[*SETTINGS, "per_gpu"]],
        supports_check_mode=True,
    )
    rules = [(module.params["gpus"], module.params, "")] + [
        (rule["gpus"], rule, "per_gpu[%d]." % n) for n, rule in enumerate(module.params["per_gpu"] or [])]
    try:  # what needs no GPU is checked before NVML is touched
        check_rules(rules)
        LockedClocksMemory(module.params["state_dir"]).check()
    except ConfigError as exc:
        module.fail_json(msg=str(exc))

    def work(session):
        results, skipped = configure(module, session, rules)
        pending = [r["index"] for r in results if r["pending"]]
        result = dict(changed=any(r["changed"] for r in results), gpus=results, reset_required=bool(pending),
                      pending_reset=pending, skipped=skipped)
        if module._diff:
            result["diff"] = diff_by_gpu(results)
        return result

    run_in_session(module, work, "the GPU settings",
                   dict(gpus=[], reset_required=False, pending_reset=[], skipped=[]))


if __name__ == "__main__":
    main()
