# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu._gpu_waste_window; its code is in plugin_utils/_gpu_waste_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: _gpu_waste_window
short_description: "Internal: the GPU waste report's window and the sacct command that reads it (no compatibility
  promise)"
version_added: 0.1.0
description:
  - Takes the variables of the C(accelops.gpu.gpu_waste) playbook and the Slurm controller's clock, and gives the
    window (UTC) and the sacct command that P(accelops.gpu.gpu_waste_model#filter) reads.
  - The end is O(end), or O(_input) where it is empty; the start is O(start), or O(days) before the end where it is
    empty. A time that is not one, a number of days outside 1 to 3660, or an end not after the start is an error
    that names the variable.
options:
  _input:
    description: The Slurm controller's time, UTC, C(YYYY-MM-DDTHH:MM:SS).
    type: str
    required: true
  start:
    description: C(accelops_gpu_waste_start), UTC; empty for O(days) before the end.
    type: str
    default: ""
  end:
    description: C(accelops_gpu_waste_end), UTC; empty for O(_input).
    type: str
    default: ""
  days:
    description: C(accelops_gpu_waste_days).
    type: int
    default: 7
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Make the window
  ansible.builtin.set_fact:
    window: "{{ '2026-12-02T06:00:00' | accelops.gpu._gpu_waste_window('', '', 7) }}"
"""

RETURN = r"""
_value:
  description: C(start), C(end), C(now) (UTC, C(YYYY-MM-DDTHH:MM:SS)) and C(argv), the sacct command as a list.
  type: dict
"""


def _gpu_waste_window(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._gpu_waste_filters import (
        _gpu_waste_window as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"_gpu_waste_window": _gpu_waste_window}
