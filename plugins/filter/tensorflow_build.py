# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu.tensorflow_build; its code is in plugin_utils/_cuda_compat_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: tensorflow_build
short_description: The CUDA and cuDNN a TensorFlow release was built with
version_added: 0.1.0
description:
  - Gives the CUDA and cuDNN versions of a TensorFlow release's Linux GPU build, from the "Tested build
    configurations" table on tensorflow.org, for TensorFlow 2.14 to 2.21.
  - Patch releases share their minor release's entry.
  - Fails, naming the nearest release in the table, for a release not in it.
options:
  _input:
    description: The TensorFlow version, such as C(2.16.1).
    type: str
    required: true
seealso:
  - plugin: accelops.gpu.cuda_min_driver
    plugin_type: filter
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Gather GPU facts
  accelops.gpu.gpu_facts:

# {"cuda": "12.3", "cudnn": "8.9"}
- name: Show what TensorFlow 2.16.1 was built with
  ansible.builtin.debug:
    msg: "{{ '2.16.1' | accelops.gpu.tensorflow_build }}"

- name: Check that the driver supports the CUDA of TensorFlow 2.17
  ansible.builtin.assert:
    that: >-
      ansible_facts.nvidia.driver_version
      is version(('2.17.0' | accelops.gpu.tensorflow_build).cuda | accelops.gpu.cuda_min_driver, '>=')
"""

RETURN = r"""
_value:
  description: The build's CUDA and cuDNN versions, each C(major.minor).
  type: dict
  contains:
    cuda:
      description: The CUDA version, such as C(12.5).
      type: str
    cudnn:
      description: The cuDNN version, such as C(9.3).
      type: str
"""


def tensorflow_build(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._cuda_compat_filters import (
        tensorflow_build as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"tensorflow_build": tensorflow_build}
