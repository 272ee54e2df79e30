# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu.gpu_summary; its code is in plugin_utils/_gpu_summary_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: gpu_summary
short_description: One readable line per GPU from C(ansible_facts.nvidia)
version_added: 0.1.0
description:
  - Turns the facts of M(accelops.gpu.gpu_facts) into lines for a report. Each line shows the index, model, memory,
    temperature, power draw and limit, NVLinks up, and the GPU's health.
  - A host without a usable driver gives one line with the reason.
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

- name: Show the GPUs
  ansible.builtin.debug:
    msg: "{{ ansible_facts.nvidia | accelops.gpu.gpu_summary }}"
"""

RETURN = r"""
_value:
  description: The report lines.
  type: list
  elements: str
"""


def gpu_summary(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._gpu_summary_filters import gpu_summary as implementation

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"gpu_summary": gpu_summary}
