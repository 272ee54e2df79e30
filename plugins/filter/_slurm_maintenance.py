# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu._slurm_maintenance; its code is in plugin_utils/_slurm_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: _slurm_maintenance
short_description: "Internal: how to take one Slurm node out of service for maintenance, and how to give it back (no
  compatibility promise)"
version_added: 0.1.0
description:
  - Reads C(scontrol show node --oneliner) and says which C(scontrol) command drains the node for maintenance
    (O(action=drain)) or resumes it afterwards (O(action=resume)), or that none is needed.
  - "O(action=drain) drains the node with C(<prefix> maintenance: <reason>) as the reason (one printable line of at
    most 200 characters). A drain that this collection set (a health finding or an earlier maintenance) or Slurm
    itself set (a reason signed by O(slurm_user), such as a GPU count that fell after a reboot) takes the new
    reason; a drain that anyone else set stays as it is, and so does its reason."
  - O(action=resume) resumes the node only when this collection drained it for this maintenance. A health drain, a
    person's drain or a drain of another maintenance (a reason that does not start with O(scope)) stays.
  - M(accelops.gpu.gpu_health)'s drains (C(tasks_from=health) of the
    R(accelops.gpu.slurm,ansible_collections.accelops.gpu.slurm_role) role) leave a node that is drained for
    maintenance alone.
  - A node that the controller does not know, an unknown action or a drain without a reason is refused.
positional: _input, node, action, reason
options:
  _input:
    description: What C(scontrol show node --oneliner) printed (its registered result, its lines or its text).
    type: raw
    required: true
  node:
    description: The node's name in Slurm.
    type: str
    required: true
  action:
    description: C(drain) or C(resume).
    type: str
    choices: [drain, resume]
    required: true
  reason:
    description: Why the node is taken out (after C(<prefix> maintenance:)); required for C(drain).
    type: str
  prefix:
    description: >-
      The start of every drain reason this collection sets (1 to 32 letters, digits, dots, colons, dashes or
      underscores).
    type: str
    default: "accelops-gpu:"
  slurm_user:
    description: Slurm's C(SlurmUser), whose name signs the drains that Slurm sets itself.
    type: str
    default: slurm
  scope:
    description:
      - How this maintenance's reasons start, such as C(driver upgrade). A node drained for maintenance with a reason
        that starts otherwise belongs to another maintenance and is left alone (holder C(other)). O(reason) must
        start with it. Empty takes any maintenance of this collection as its own.
    type: str
    default: ""
seealso:
  - plugin: accelops.gpu._slurm_health_actions
    plugin_type: filter
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Read the nodes from the controller
  ansible.builtin.command: scontrol show node --oneliner
  register: scontrol
  changed_when: false

# {"node": "gpu01", "holder": "none", "states": ["MIXED"], "reason": null,
#  "argv": ["scontrol", "update", "nodename=gpu01", "state=drain", "reason=accelops-gpu: maintenance: driver upgrade"]}
- name: Drain the node for its driver upgrade
  ansible.builtin.command:
    argv: "{{ (scontrol | accelops.gpu._slurm_maintenance('gpu01', 'drain', 'driver upgrade')).argv }}"
  when: (scontrol | accelops.gpu._slurm_maintenance('gpu01', 'drain', 'driver upgrade')).argv | length > 0
"""

RETURN = r"""
_value:
  description:
    - C(node); C(argv), the C(scontrol update) command to run (empty when nothing is to be done); C(holder), who
      had drained the node before (C(none), C(maintenance), C(health), C(slurm) or C(other)); C(drained); C(states)
      and C(reason) as the controller showed them.
  type: dict
"""


def _slurm_maintenance(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._slurm_filters import slurm_maintenance as implementation

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"_slurm_maintenance": _slurm_maintenance}
