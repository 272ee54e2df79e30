# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu.cuda_min_driver; its code is in plugin_utils/_cuda_compat_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: cuda_min_driver
short_description: The minimum NVIDIA Linux driver for a CUDA version
version_added: 0.1.0
description:
  - Gives the minimum Linux x86_64 driver that a CUDA Toolkit release needs, from NVIDIA's CUDA Toolkit release
    notes (table "CUDA Toolkit and Corresponding Driver Versions"), for CUDA 11.0 to 13.3.
  - C(major.minor) means the GA release; C(major.minor.N) means Update N (C(12.4.1) is CUDA 12.4 Update 1).
  - With O(compat=minor), gives the minimum driver for CUDA minor version compatibility instead, which is the same
    for a whole CUDA major (C(525.60.13) for 12.x). Under minor version compatibility some features need the
    newer driver, and PTX newer than the driver cannot be compiled; see NVIDIA's CUDA Compatibility guide.
  - Fails, naming the nearest CUDA in the table, for a CUDA that is not in it (C(12.7) was never released).
  - Fails for a CUDA newer than the table (CUDA 13.4, or 13.3.2), naming the newest release it knows and its driver,
    rather than guess; O(min_drivers) names the drivers of releases NVIDIA has published since. With O(compat=minor),
    a release of a CUDA major the table has no minor version compatibility row for gives the driver O(min_drivers)
    names.
positional: _input, compat
options:
  _input:
    description: The CUDA version, C(major.minor) or C(major.minor.update). Quote it in YAML.
    type: str
    required: true
  compat:
    description:
      - V(toolkit) for the driver NVIDIA lists with that toolkit release, V(minor) for the minimum under minor
        version compatibility.
    type: str
    choices: [toolkit, minor]
    default: toolkit
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
  - plugin: accelops.gpu.cuda_max_for_driver
    plugin_type: filter
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Gather GPU facts
  accelops.gpu.gpu_facts:

- name: Fail early when the driver is too old for CUDA 12.4
  ansible.builtin.assert:
    that: ansible_facts.nvidia.driver_version is version('12.4' | accelops.gpu.cuda_min_driver, '>=')
    fail_msg: CUDA 12.4 needs driver {{ '12.4' | accelops.gpu.cuda_min_driver }} or newer

# "550.54.15" (CUDA 12.4 Update 1); "525.60.13" (any CUDA 12.x under minor version compatibility)
- name: Show the minimum drivers
  ansible.builtin.debug:
    msg:
      - "{{ '12.4.1' | accelops.gpu.cuda_min_driver }}"
      - "{{ '12.8' | accelops.gpu.cuda_min_driver(compat='minor') }}"
"""

RETURN = r"""
_value:
  description: The minimum driver version, such as C(550.54.14); for O(compat=minor) and CUDA 13.x only the branch
    (C(580)), as NVIDIA gives it.
  type: str
"""


def cuda_min_driver(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._cuda_compat_filters import (
        cuda_min_driver as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"cuda_min_driver": cuda_min_driver}
