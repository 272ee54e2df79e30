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
    while a process runs there.
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
    mig_devices:
      description: The MIG devices after the run (uuid, name, profile, gpu_instance_id, compute_instance_id); in
        check mode those that exist now.
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
        - uuid: MIG-2960a99b-cfa9-44ae-9958-5271b5f50c61
          profile: 3g.40gb
          gpu_instance_id: 1
          compute_instance_id: 0
"""

from collections import Counter

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.accelops.gpu.plugins.module_utils._gpu_config import (
    ConfigError,
    diff_by_gpu,
    inventory,
    resolve_targets,
    run_in_session,
)
from ansible_collections.accelops.gpu.plugins.module_utils._gpu_mig import MigManager, fit, plan_layout


def check_gpu(manager, gpu, layout, force):
    """Return (plan, problems) for one GPU; the plan is None when a problem prevents planning."""
    label, handle = "GPU %d" % gpu["index"], gpu["handle"]
    modes = manager.nvml.query("nvmlDeviceGetMigMode", handle)
    if modes is None:
        return None, ["%s: MIG is not supported on this GPU" % label]
    if not modes[0]:
        state = "enabled but waits for a GPU reset" if modes[1] else "off"
        return None, ["%s: MIG mode is %s; enable it with accelops.gpu.gpu_config (mig_mode: true) and reset the GPU"
                      % (label, state)]
    table = manager.profiles(handle)
    unknown = sorted(set(layout) - set(table))
    if unknown:
        return None, ["%s: profile %s is not offered; this GPU offers %s"
                      % (label, ", ".join(unknown), ", ".join(sorted(table, key=lambda n: (table[n]["slices"], n))))]
    too_many = ["%d x %s (at most %d)" % (n, name, table[name]["count"])
                for name, n in sorted(Counter(layout).items()) if n > table[name]["count"]]
    placements = {name: table[name]["placements"] for name in table}
    if too_many or fit(layout, placements) is None:
        return None, ["%s: layout %s does not fit this GPU's memory slices and placements%s"
                      % (label, " + ".join(layout), (": " + ", ".join(too_many)) if too_many else "")]
    current = manager.instances(handle, table, manager.processes(handle))
    plan = plan_layout(layout, current, placements)
    busy = [i for i in plan["destroy"] if i["processes"]]
    if busy and not force:
        return plan, ["%s: the %s instance (GPU instance %d) would be destroyed but runs processes %s; set force: true "
                      "to destroy it anyway" % (label, i["profile"], i["id"],
                                                ", ".join(str(p["pid"]) for p in i["processes"])) for i in busy]
    return dict(plan, current=current, table=table), []


def run(module, session):
    params = module.params
    manager = MigManager(session)
    gpus = inventory(session)
    targets = [gpus[i] for i in resolve_targets(params["gpus"], gpus)]
    lost = [str(g["index"]) for g in targets if g["lost"]]
    if lost:
        raise ConfigError("GPU %s is lost; nothing was changed" % ", ".join(lost))

    plans, problems = {}, []
    for gpu in targets:
        plan, found = check_gpu(manager, gpu, params["layout"], params["force"])
        problems.extend(found)
        plans[gpu["index"]] = plan
    if problems:
        raise ConfigError("nothing was changed: " + "; ".join(problems))

    results = []
    for gpu in targets:
        plan, label = plans[gpu["index"]], "GPU %d" % gpu["index"]
        created = ["%s@%d" % (name, start) for name, start, _size in plan["create"]]
        destroyed = ["%s@%d" % (i["profile"], i["start"]) for i in plan["destroy"]]
        if (created or destroyed) and not module.check_mode:
            for instance in sorted(plan["destroy"], key=lambda i: not i["processes"]):
                manager.destroy(instance, label)
            for spot in plan["create"]:
                manager.create(gpu["handle"], plan["table"][spot[0]], spot, label)
        before = sorted(i["profile"] for i in plan["current"])
        results.append({
            "index": gpu["index"], "uuid": gpu["uuid"], "before": before,
            "after": sorted(params["layout"]) if created or destroyed else before,
            "destroyed": destroyed, "created": created, "mig_devices": manager.devices(gpu["handle"]),
        })
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

    def work(session):
        results = run(module, session)
        result = dict(changed=any(r["created"] or r["destroyed"] for r in results), gpus=results)
        if module._diff:
            result["diff"] = diff_by_gpu(results)
        return result

    run_in_session(module, work, "the MIG layout", dict(gpus=[]))


if __name__ == "__main__":
    main()
