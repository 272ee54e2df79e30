# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu._dcgm_diag_problems; its code is in plugin_utils/_dcgm_diag_problems_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: _dcgm_diag_problems
short_description: "Internal: what a DCGM diagnostic found wrong, one line per failed test and GPU (no compatibility
  promise)"
version_added: 0.1.0
description:
  - Reads the JSON document that C(dcgmi diag -r LEVEL -j) of DCGM 4 prints and gives one line per test result
    whose status is C(Fail), naming the entity (C(GPU 3)), the category and test (C(Deployment/software)) and the
    warnings DCGM gave; an empty list when no test failed.
  - C(Pass), C(Warn), C(Skip) and C(Not Run) results are not failures; any other status, or none, is. A failed
    C(test_summary) counts too, and so does a document without a single test result.
  - A run that printed no diagnostic document (the host engine down, NVML not loaded) gives one line with the exit
    status and what C(dcgmi) said; a non-zero exit status without a failed test gives one line too. A diagnostic
    that could not run never reads as passed.
options:
  _input:
    description: The registered result of C(dcgmi diag -r LEVEL -j) (its C(rc), C(stdout), C(stderr)), or its output.
    type: raw
    required: true
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Run DCGM's quick diagnostic
  ansible.builtin.command: dcgmi diag -r 1 -j
  register: diag
  changed_when: false
  failed_when: false

# ['GPU 3: Deployment/software failed: Persistence Mode: Persistence mode for GPU 3 is disabled. ...']
- name: Stop on a failed test
  ansible.builtin.assert:
    that: diag | accelops.gpu._dcgm_diag_problems | length == 0
    fail_msg: "{{ diag | accelops.gpu._dcgm_diag_problems | join('; ') }}"
"""

RETURN = r"""
_value:
  description: One line per failed test result, in DCGM's order; empty when every test passed.
  type: list
  elements: str
"""


def _dcgm_diag_problems(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._dcgm_diag_problems_filters import (
        dcgm_diag_problems as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"_dcgm_diag_problems": _dcgm_diag_problems}
