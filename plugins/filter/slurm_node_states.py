# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu.slurm_node_states; its code is in plugin_utils/_slurm_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: slurm_node_states
short_description: Each node's state as Slurm's controller sees it
version_added: 0.1.0
description:
  - Reads C(scontrol show node --oneliner) and gives, for each named node, its C(state) as Slurm prints it (such as
    C(IDLE), C(MIXED), C(IDLE+DRAIN)) and the C(reason) set with it.
  - Where the controller could not be asked (the registered result of C(scontrol) failed, or the controller could
    not be reached) or does not know a node, that node's C(state) is null and C(problem) says why, so that a report
    never shows a node as outside Slurm when Slurm could not be asked.
  - A name Slurm cannot have (a host known by its IPv6 address, a name with a space or a newline) gets that
    C(problem) too; the other nodes' states do not depend on it. O(names) that is not a list of strings fails.
positional: _input, names
options:
  _input:
    description: What C(scontrol show node --oneliner) printed (its registered result, its lines or its text).
    type: raw
    required: true
  names:
    description: The Slurm node names to give the state of.
    type: list
    elements: str
    required: true
seealso:
  - plugin: accelops.gpu.fleet_report_model
    plugin_type: filter
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Read the nodes from the controller
  ansible.builtin.command: scontrol show node --oneliner
  register: scontrol
  changed_when: false
  failed_when: false

# {"gpu01": {"state": "IDLE", "reason": null, "problem": null},
#  "gpu02": {"state": null, "reason": null, "problem": "Slurm's controller does not know this node"}}
- name: Show the nodes' states
  ansible.builtin.debug:
    msg: "{{ scontrol | accelops.gpu.slurm_node_states(['gpu01', 'gpu02']) }}"
"""

RETURN = r"""
_value:
  description: By node name, C(state) (null where unknown), C(reason) (null where none) and C(problem) (why the
    state is unknown; null where it is known).
  type: dict
"""


def slurm_node_states(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._slurm_filters import slurm_node_states as implementation

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"slurm_node_states": slurm_node_states}
