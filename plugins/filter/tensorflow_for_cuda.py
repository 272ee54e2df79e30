# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu.tensorflow_for_cuda; its code is in plugin_utils/_cuda_compat_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: tensorflow_for_cuda
short_description: The newest TensorFlow release built with a CUDA not newer than the one given
version_added: 0.1.0
description:
  - Gives the newest TensorFlow release in the table of P(accelops.gpu.tensorflow_build#filter) whose Linux GPU
    build used a CUDA not newer than the one given (the CUDA a driver runs), so a node's driver runs its build;
    an empty string when no release in the table is that old.
  - The CUDA given must be a release P(accelops.gpu.cuda_min_driver#filter) answers for; a CUDA newer than the table
    fails, unless O(min_drivers) names it.
positional: _input
options:
  _input:
    description: A CUDA C(major.minor), such as the newest CUDA a driver runs. Quote it in YAML.
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
  - plugin: accelops.gpu.tensorflow_build
    plugin_type: filter
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Gather GPU facts
  accelops.gpu.gpu_facts:

# "2.17" (built with CUDA 12.3): the newest TensorFlow a driver that runs CUDA 12.4 takes without minor version
# compatibility
- name: Name the newest TensorFlow release for this driver
  ansible.builtin.debug:
    msg: "{{ ansible_facts.nvidia.driver_version | accelops.gpu.cuda_max_for_driver
      | accelops.gpu.tensorflow_for_cuda }}"
"""

RETURN = r"""
_value:
  description: The release C(major.minor), or an empty string.
  type: str
"""


def tensorflow_for_cuda(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._cuda_compat_filters import (
        tensorflow_for_cuda as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"tensorflow_for_cuda": tensorflow_for_cuda}
