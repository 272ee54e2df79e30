# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu._slurm_node_problems; its code is in plugin_utils/_slurm_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: _slurm_node_problems
short_description: "Internal: what keeps the controller's view of the GPU nodes from their configuration (no
  compatibility promise)"
version_added: 0.1.0
description:
  - Reads C(scontrol show node --oneliner) and compares each node with its configuration, the GPU records of
    P(accelops.gpu.slurm_node_gres#filter) (or a C(Gres=) value).
  - Gives one message per node that the controller does not know, whose C(Gres=) differs from slurm.conf's, that is
    down, not responding, unknown, invalid or failed, or that Slurm itself drained (the drain reason's user is
    C(slurm)). A drain set by a person is left alone.
  - C(shard) and C(mps) are compared by the node's total of each, since the controller writes them per GPU type
    (C(shard:<type>:<count>)) and slurm.conf without one.
positional: _input, nodes
options:
  _input:
    description: What C(scontrol show node --oneliner) printed (its registered result, its lines or its text).
    type: raw
    required: true
  nodes:
    description: The nodes, each a dict with C(name) and C(gres) (GPU records or a C(Gres=) value).
    type: list
    elements: dict
    required: true
seealso:
  - plugin: accelops.gpu.slurm_node_gres
    plugin_type: filter
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Read the nodes from the controller
  ansible.builtin.command: scontrol show node --oneliner
  register: scontrol
  changed_when: false

# ["gpu01: state IDLE+DRAIN, reason: gres/gpu count reported lower than configured (7 < 8) [slurm@2026-12-02T00:30:00]"]
- name: Check the nodes
  ansible.builtin.assert:
    that: scontrol | accelops.gpu._slurm_node_problems(nodes) | length == 0
  vars:
    nodes:
      - {name: gpu01, gres: "gpu:nvidia_h100_80gb_hbm3:8"}
      - {name: gpu02, gres: "gpu:nvidia_h100_80gb_hbm3:8"}
"""

RETURN = r"""
_value:
  description: The problems, each a sentence naming the node; empty when every node is as configured.
  type: list
  elements: str
"""


def _slurm_node_problems(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._slurm_filters import (
        slurm_node_problems as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"_slurm_node_problems": _slurm_node_problems}
