# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu.cuda_max_for_driver; its code is in plugin_utils/_cuda_compat_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: cuda_max_for_driver
short_description: The newest CUDA version a driver fully supports
version_added: 0.1.0
description:
  - Gives the newest CUDA C(major.minor) whose toolkit (GA) minimum driver, from NVIDIA's CUDA Toolkit release notes,
    is not newer than the driver given. Versions are compared number by number, so C(570.124.06) is newer than
    C(570.26).
  - Fails, naming the oldest CUDA in the table and the driver it needs, for a driver older than CUDA 11.0's, unless
    O(older) says what to give for one.
  - This is the toolkit minimum; under CUDA minor version compatibility an older driver of the same major runs
    newer CUDA 11.x, 12.x or 13.x applications with limitations (see P(accelops.gpu.cuda_min_driver#filter)).
  - Fails for a driver of a branch newer than the table's newest (C(615.20) where the newest is CUDA 13.3's R610),
    which may run a CUDA the table does not know, rather than guess; ask the driver instead
    (C(ansible_facts.nvidia.cuda_driver_version)), or name the newer releases in O(min_drivers).
options:
  _input:
    description: The driver version, such as C(ansible_facts.nvidia.driver_version).
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
  older:
    description:
      - What to give for a driver older than every CUDA release in the table, instead of failing, such as V("")
        where the question has the answer none (the newest TensorFlow release such a driver runs).
    type: str
seealso:
  - plugin: accelops.gpu.cuda_min_driver
    plugin_type: filter
  - plugin: accelops.gpu.torch_cuda_channel
    plugin_type: filter
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Gather GPU facts
  accelops.gpu.gpu_facts:

# "12.4" for driver 550.54.15, "12.8" for 570.124.06
- name: Show the newest CUDA this node's driver supports
  ansible.builtin.debug:
    msg: "{{ ansible_facts.nvidia.driver_version | accelops.gpu.cuda_max_for_driver }}"
"""

RETURN = r"""
_value:
  description: The CUDA version as C(major.minor), such as C(12.4).
  type: str
"""


def cuda_max_for_driver(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._cuda_compat_filters import (
        cuda_max_for_driver as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"cuda_max_for_driver": cuda_max_for_driver}
