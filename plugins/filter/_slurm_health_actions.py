# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu._slurm_health_actions; its code is in plugin_utils/_slurm_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: _slurm_health_actions
short_description: "Internal: which GPU nodes to drain and which to resume after a GPU health check (no compatibility
  promise)"
version_added: 0.1.0
description:
  - Reads C(scontrol show node --oneliner) and the verdicts of M(accelops.gpu.gpu_health), one per node.
  - A node whose verdict reaches O(drain_on) is drained, with its findings that reach it (worst first, in one
    printable line of at most 200 characters) after O(prefix) as the reason. A node drained already by anyone else
    (a reason without the prefix) is left alone; one drained with the prefix gets the new reason when the findings
    changed.
  - A node drained with the prefix whose verdict is below O(drain_on) is resumed.
  - A node without a verdict, with the verdict C(unknown), or that the controller does not know is left as it is.
  - Each node may have one verdict only, and its findings must be a list of dicts; other input is refused.
positional: _input, verdicts, drain_on, prefix
options:
  _input:
    description: What C(scontrol show node --oneliner) printed (its registered result, its lines or its text).
    type: raw
    required: true
  verdicts:
    description: One dict per node, with C(name) (the node's name in Slurm), C(verdict) and C(findings) as
      M(accelops.gpu.gpu_health) returns them.
    type: list
    elements: dict
    required: true
  drain_on:
    description: The verdict from which a node is drained.
    type: str
    choices: [critical, warning]
    default: critical
  prefix:
    description: >-
      The start of every drain reason this sets (1 to 32 letters, digits, dots, colons, dashes or
      underscores).
    type: str
    default: "accelops-gpu:"
seealso:
  - module: accelops.gpu.gpu_health
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Check the GPUs' health
  accelops.gpu.gpu_health:
    fail_on: never
  register: health

- name: Read the nodes from the controller
  ansible.builtin.command: scontrol show node --oneliner
  register: scontrol
  changed_when: false

# [{"node": "gpu01", "action": "drain",
#   "reason": "accelops-gpu: GPU 3 is lost: it fell off the bus or stopped answering"},
#  {"node": "gpu07", "action": "resume", "reason": null}]
- name: Drain the sick nodes and resume the healed ones
  ansible.builtin.command:
    argv: "{{ ['scontrol', 'update', 'nodename=' ~ item.node] + (['state=drain', 'reason=' ~ item.reason]
              if item.action == 'drain' else ['state=resume']) }}"
  loop: "{{ scontrol | accelops.gpu._slurm_health_actions(verdicts) }}"
  vars:
    verdicts: "{{ [{'name': inventory_hostname_short, 'verdict': health.verdict, 'findings': health.findings}] }}"
"""

RETURN = r"""
_value:
  description: The actions, each a dict with C(node), C(action) (C(drain) or C(resume)) and C(reason) (null for
    C(resume)).
  type: list
  elements: dict
"""


def _slurm_health_actions(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._slurm_filters import (
        slurm_health_actions as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"_slurm_health_actions": _slurm_health_actions}
