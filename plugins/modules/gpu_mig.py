#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: gpu_mig
short_description: Declare the MIG layout of NVIDIA GPUs
version_added: 0.1.0
description:
  - Makes each targeted GPU hold exactly the MIG instances of O(layout) (a list of GPU-instance profiles such as
    C(3g.40gb)), each with one compute instance spanning it, the way NVIDIA's mig-parted does.
  - Instances that already match are kept where the rest fits around them; otherwise the GPU is laid out anew.
    A second run with the same layout changes nothing.
  - Checks everything on every targeted GPU before it creates or destroys anything; MIG mode must be on (see
    M(accelops.gpu.gpu_config)), every profile must be one this GPU offers, and the layout must fit its memory
    slices and placements.
  - Refuses to destroy an instance that has processes on it unless O(force=true); even then NVML itself refuses
    while a process runs there (busy instances are destroyed first, so that this refusal comes before anything else
    is destroyed; check mode warns about it).
  - Any NVML error while the GPUs are read fails the task before anything changes. A change that fails part-way
    fails the task with C(changed=true) when something was changed, and RV(gpus) lists exactly which instances
    were destroyed and created on which GPU before the failure.
  - Layout entries must be profile names such as C(1g.10gb) or C(1g.10gb+me), without spaces.
  - Returns the MIG devices with their UUIDs, which schedulers and container runtimes take
    (C(NVIDIA_VISIBLE_DEVICES=MIG-...)).
options:
  gpus:
    description: C(all), or GPU indexes and UUIDs.
    type: list
    elements: raw
    default: [all]
  layout:
    description:
      - The GPU-instance profiles each targeted GPU should hold, for example C([3g.40gb, 2g.20gb, 1g.10gb, 1g.10gb])
        on an A100 80GB or C([1g.10gb] * 7). The order does not matter.
      - An empty list removes every instance.
    type: list
    elements: str
    required: true
  force:
    description: Destroy instances even when processes run on them.
    type: bool
    default: false
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
  - GPU instances do not survive a reboot or a driver reload; run this module (or the C(accelops.gpu.gpu_settings)
    role) again after one.
seealso:
  - module: accelops.gpu.gpu_config
  - name: NVIDIA Multi-Instance GPU user guide
    description: Profiles and placements per GPU model.
    link: https://docs.nvidia.com/datacenter/tesla/mig-user-guide/
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Enable MIG mode on every GPU (takes effect after a GPU reset)
  accelops.gpu.gpu_config:
    mig_mode: true
  become: true

- name: Seven 1g.10gb instances on every H100 80GB, for inference
  accelops.gpu.gpu_mig:
    layout: [1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb]
  become: true
  register: mig

- name: A mixed layout on GPUs 0 and 1 of an A100 80GB node
  accelops.gpu.gpu_mig:
    gpus: [0, 1]
    layout: [3g.40gb, 2g.20gb, 1g.10gb, 1g.10gb]
  become: true

- name: Hand the MIG devices to a scheduler
  ansible.builtin.debug:
    msg: "{{ mig.gpus | map(attribute='mig_devices') | flatten | map(attribute='uuid') | list }}"
"""

RETURN = r"""
gpus:
  description: Each targeted GPU with its layout before and after and its MIG devices.
  returned: always
  type: list
  elements: dict
  contains:
    index:
      description: NVML index of the GPU.
      type: int
      returned: always
    uuid:
      description: GPU UUID.
      type: str
      returned: always
    before:
      description: The profiles of the GPU instances before the run, sorted.
      type: list
      elements: str
      returned: always
    after:
      description: The profiles after the run (in check mode, what they would be), sorted.
      type: list
      elements: str
      returned: always
    destroyed:
      description: Instances destroyed (or to be), as C(<profile>@<first memory slice>).
      type: list
      elements: str
      returned: always
    created:
      description: Instances created (or to be), as C(<profile>@<first memory slice>).
      type: list
      elements: str
      returned: always
    changed:
      description: What was changed (or would be), in order, as C(destroyed <profile>@<slice>) and
        C(created <profile>@<slice>).
      type: list
      elements: str
      returned: always
    mig_devices:
      description: The MIG devices after the run (index, uuid, name, profile, gpu_instance_id, compute_instance_id;
        index is the device's slot on its GPU, as in the CDI name C(<gpu>:<index>)); in
        check mode those that exist now; null when NVML could not list them after the change.
      type: list
      elements: dict
      returned: always
  sample:
    - index: 0
      uuid: GPU-5b357cbf-a18f-4d4b-a1fa-e80574e9a835
      before: []
      after: [1g.10gb, 2g.20gb, 3g.40gb]
      destroyed: []
      created: [3g.40gb@0, 2g.20gb@4, 1g.10gb@6]
      mig_devices:
        - index: 0
          uuid: MIG-2960a99b-cfa9-44ae-9958-5271b5f50c61
          profile: 3g.40gb
          gpu_instance_id: 1
          compute_instance_id: 0
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.accelops.gpu.plugins.module_utils._gpu_config import (
    ConfigError,
    diff_by_gpu,
    inventory,
    resolve_targets,
    run_in_session,
)
from ansible_collections.accelops.gpu.plugins.module_utils._gpu_mig import (
    MigManager,
    check_layout,
    devices_or_none,
    lay_out,
)


def run(module, session):
    params = module.params
    manager = MigManager(session)
    gpus = inventory(session)
    targets = [gpus[i] for i in resolve_targets(params["gpus"], gpus)]
    lost = [str(g["index"]) for g in targets if g["lost"]]
    if lost:
        raise ConfigError("GPU %s is lost; nothing was changed" % ", ".join(lost))
    results, plans = lay_out(manager, targets, params["layout"], params["force"], module.check_mode)
    busy = [i for plan in plans.values() for i in plan["busy"]]
    if busy and module.check_mode:
        module.warn("check mode: NVML refuses to destroy a MIG instance while a process runs on it, force or not; "
                    "the real run fails unless processes %s have ended by then"
                    % ", ".join(str(p["pid"]) for i in busy for p in i["processes"]))
    for gpu, result in zip(targets, results):
        result["mig_devices"] = devices_or_none(manager, gpu)
    return results


def main():
    module = AnsibleModule(
        argument_spec=dict(
            gpus=dict(type="list", elements="raw", default=["all"]),
            layout=dict(type="list", elements="str", required=True),
            force=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )

    try:
        check_layout(module.params["layout"])
    except ConfigError as exc:
        module.fail_json(msg=str(exc))

    def work(session):
        results = run(module, session)
        result = dict(changed=any(r["changed"] for r in results), gpus=results)
        if module._diff:
            result["diff"] = diff_by_gpu(results)
        return result

    run_in_session(module, work, "the MIG layout", dict(gpus=[]))


if __name__ == "__main__":
    main()
