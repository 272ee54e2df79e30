# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu.cuda_too_new; its code is in plugin_utils/_cuda_compat_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: cuda_too_new
short_description: The CUDA releases a driver is too old for, with the driver each needs
version_added: 0.1.0
description:
  - Checks each CUDA release against NVIDIA's minimum driver of its toolkit release (the same table as
    P(accelops.gpu.cuda_min_driver#filter)), comparing versions number by number, and gives the ones the driver
    does not meet, each with the driver it needs; an empty list when the driver runs them all.
  - Fails, naming the value, for a driver that is not a version and a CUDA release not in the table.
  - A CUDA newer than the table fails as in P(accelops.gpu.cuda_min_driver#filter), unless O(min_drivers) names it.
positional: _input, driver
options:
  _input:
    description: CUDA releases, C(major.minor) or C(major.minor.update); one release is taken as a list of one.
    type: list
    elements: str
    required: true
  driver:
    description: The driver release, such as C(550.54.15).
    type: str
    required: true
  min_drivers:
    description:
      - The minimum Linux driver of CUDA releases newer than the table, as NVIDIA publishes them (CUDA Toolkit release
        notes, table "CUDA Toolkit and Corresponding Driver Versions"), keyed by release. A key C(major.minor) is the
        GA release, C(major.minor.N) Update N; for example the key C(13.4) with the value C(615.20.01). Quote the
        releases and the drivers in YAML (C(615.20) unquoted reads as C(615.2), C(13.10) as C(13.1)).
      - It may name a release the table knows only with the table's driver, and no release NVIDIA never published
        (C(12.7)); a newer release never needs an older driver.
    type: dict
    default: {}
seealso:
  - plugin: accelops.gpu.cuda_min_driver
    plugin_type: filter
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
# [{"cuda": "12.8", "driver": "570.26"}]
- name: List the toolkits this driver cannot run
  ansible.builtin.debug:
    msg: "{{ ['12.4', '12.8'] | accelops.gpu.cuda_too_new('550.54.15') }}"
"""

RETURN = r"""
_value:
  description: One entry per release the driver is too old for, in the order given.
  type: list
  elements: dict
  contains:
    cuda:
      description: The CUDA release as given.
      type: str
    driver:
      description: The driver it needs at least.
      type: str
"""


def cuda_too_new(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._cuda_compat_filters import (
        cuda_too_new as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"cuda_too_new": cuda_too_new}
