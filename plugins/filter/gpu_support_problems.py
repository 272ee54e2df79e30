# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu.gpu_support_problems; its code is in plugin_utils/_cuda_compat_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: gpu_support_problems
short_description: What a node's GPUs cannot use among a driver branch, kernel modules, CUDA and framework builds
version_added: 0.1.0
description:
  - Checks choices against the GPUs a node actually has and gives one message per problem, each naming both sides
    and the nearest valid choice; an empty list means every GPU can use them. A node with two architectures gets
    the intersection.
  - O(driver_branch) against the branches that support each architecture (R470 is the last for Kepler, R580 the
    last for Maxwell, Pascal and Volta; Blackwell needs R570 or newer).
  - O(kernel_modules) against NVIDIA's open kernel modules (Turing and newer; Blackwell runs with them only).
  - O(cuda) against the CUDA releases whose compiler builds for each compute capability (CUDA 13 no longer builds
    for Maxwell, Pascal and Volta; Blackwell needs CUDA 12.8 or newer).
  - O(torch) with O(torch_channel) against the GPU code that channel's wheels carry (a cubin C(sm_XY) runs on
    compute capability X.Y and newer minors of X; PTX C(compute_XY) on X.Y and every newer GPU).
  - O(tensorflow) against the GPU code of that release's Linux pip build.
  - GPUs whose architecture is not in the table (newer than it, or not readable) are left out.
  - Each CUDA release in O(cuda) must be one P(accelops.gpu.cuda_min_driver#filter) answers for; a CUDA newer than
    the table fails, unless O(min_drivers) names it; such a release is taken to build for what the newest release
    in the table builds for, less what an older release dropped.
positional: _input
options:
  _input:
    description:
      - The node's GPUs, as C(ansible_facts.nvidia.gpus) or C(ansible_facts.nvidia.pci_devices) list them (each with
        C(architecture) and/or C(compute_capability)), or architecture names, or compute capabilities.
    type: list
    elements: raw
    required: true
  driver_branch:
    description: A driver branch (C(580)) or release (C(580.95.05)).
    type: str
  kernel_modules:
    description: The kernel module flavour.
    type: str
    choices: [open, proprietary]
  cuda:
    description: A CUDA toolkit C(major.minor), or a list of them.
    type: raw
  torch:
    description: A torch release, with O(torch_channel).
    type: str
  torch_channel:
    description: A wheel channel of that torch release (C(cu126)); C(cpu) always fits.
    type: str
  tensorflow:
    description: A TensorFlow release.
    type: str
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
  - plugin: accelops.gpu.torch_cuda_channel
    plugin_type: filter
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Gather GPU facts
  accelops.gpu.gpu_facts:

# ["driver branch 590 does not support Volta: its last branch is 580; nearest: 580"] on a V100 node
- name: Refuse a driver branch the GPUs cannot run
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "{{ __problems | join('; ') }}"
  vars:
    __problems: "{{ ansible_facts.nvidia.gpus | accelops.gpu.gpu_support_problems(driver_branch='590') }}"
"""

RETURN = r"""
_value:
  description: One message per problem; empty when the GPUs can use every choice given.
  type: list
  elements: str
"""


def gpu_support_problems(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._cuda_compat_filters import (
        gpu_support_problems as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"gpu_support_problems": gpu_support_problems}
