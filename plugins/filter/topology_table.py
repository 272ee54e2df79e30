# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu.topology_table; its code is in plugin_utils/_gpu_summary_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: topology_table
short_description: The GPU topology matrix as aligned text rows
version_added: 0.1.0
description:
  - Renders C(ansible_facts.nvidia.topology) from M(accelops.gpu.gpu_facts) as rows like C(nvidia-smi topo -m).
options:
  _input:
    description: The C(ansible_facts.nvidia) dictionary.
    type: dict
    required: true
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Gather GPU facts
  accelops.gpu.gpu_facts:

- name: Show the topology
  ansible.builtin.debug:
    msg: "{{ ansible_facts.nvidia | accelops.gpu.topology_table }}"
"""

RETURN = r"""
_value:
  description: The rows, header first.
  type: list
  elements: str
"""


def topology_table(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._gpu_summary_filters import (
        topology_table as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"topology_table": topology_table}
