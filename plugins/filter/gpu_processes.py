# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu.gpu_processes; its code is in plugin_utils/_gpu_summary_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: gpu_processes
short_description: The compute processes on a node's GPUs, one line each, from C(ansible_facts.nvidia)
version_added: 0.1.0
description:
  - Lists the compute processes that M(accelops.gpu.gpu_facts) found on each GPU as C(GPU <index> pid <pid> (<name>)).
  - With O(unreadable=true) a GPU whose processes could not be read (lost, an NVML error, or an NVML that does not
    list them) gives a line too, and so does a node whose driver NVML cannot reach or whose GPUs NVML did not count
    or list; an empty list then means that no compute process runs, not that none could be seen.
options:
  _input:
    description: The C(ansible_facts.nvidia) dictionary (gathered with the C(processes) subset).
    type: dict
    required: true
  unreadable:
    description: Also list what could not be read.
    type: bool
    default: false
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Gather GPU facts
  accelops.gpu.gpu_facts:

- name: Refuse to touch the driver while GPU work runs
  ansible.builtin.assert:
    that: ansible_facts.nvidia | accelops.gpu.gpu_processes(unreadable=true) | length == 0
    fail_msg: "{{ ansible_facts.nvidia | accelops.gpu.gpu_processes(unreadable=true) | join('; ') }}"
"""

RETURN = r"""
_value:
  description: One line per process (and per unreadable GPU).
  type: list
  elements: str
"""


def gpu_processes(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._gpu_summary_filters import (
        gpu_processes as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"gpu_processes": gpu_processes}
