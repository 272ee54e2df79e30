# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu._site_mirror_needs; its code is in plugin_utils/_site_mirror_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: _site_mirror_needs
short_description: "Internal: what GPU nodes install from NVIDIA's repository and PyPI (no compatibility promise)"
version_added: 0.1.0
description:
  - From each node's variables (else the roles' defaults), the packages the P(accelops.gpu.nvidia_driver#role),
    P(accelops.gpu.cuda_toolkit#role) and P(accelops.gpu.container_toolkit#role) roles install from NVIDIA's CUDA
    repository on Debian and Ubuntu, the driver's pinning packages among them, and the wheels of
    P(accelops.gpu.nvml_python#role) and P(accelops.gpu.gpu_monitoring#role).
  - A node variable the roles would refuse (a wrong type, a value outside their choices, a driver release of
    another branch, a default CUDA release not among the node's, an inventory template that cannot be rendered) is
    a line of C(problems) naming the host and the variable, and names no package.
  - Used by the P(accelops.gpu.site_mirror#role) role.
positional: _input
options:
  _input:
    description: The nodes and their variables, C(host => variables).
    type: dict
    required: true
  defaults:
    description: The roles' defaults and C(site.yml)'s switches, for variables a node does not set.
    type: dict
    required: true
  names:
    description:
      - The roles' package names, C(library), C(persistenced), C(packages) (C(open) and C(proprietary) lists),
        C(cudnn) (with C({major}) for the CUDA major), C(nccl) and C(container_toolkit).
    type: dict
    required: true
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: What two nodes of CUDA 12.8 and driver branch 570 need
  ansible.builtin.debug:
    msg: >-
      {{ {'node1': {'cuda_toolkit_versions': ['12.8']}, 'node2': {}}
         | accelops.gpu._site_mirror_needs(
             defaults={'nvidia_driver_branch': '570', 'nvidia_driver_version': '',
                       'nvidia_driver_kernel_modules': 'auto',
                       'nvidia_driver_persistenced': true, 'nvidia_driver_fabricmanager': 'auto',
                       'cuda_toolkit_versions': ['12.8'], 'cuda_toolkit_default': '', 'cuda_toolkit_cudnn': true,
                       'cuda_toolkit_nccl': true, 'container_toolkit_version': '1.18.0-1',
                       'nvml_python_version': '13.615.71', 'accelops_gpu_install_driver': true,
                       'accelops_gpu_install_toolkit': true, 'accelops_gpu_install_container_toolkit': false,
                       'accelops_gpu_install_monitoring': false},
             names={'library': 'libnvidia-ml1', 'persistenced': 'nvidia-persistenced',
                    'packages': {'open': ['nvidia-open'], 'proprietary': ['nvidia-driver']},
                    'cudnn': ['cudnn9-cuda-{major}'], 'nccl': ['libnccl2'], 'container_toolkit': []}) }}
"""

RETURN = r"""
_value:
  description:
    - C(apt) (each C(name), C(name=version) or C(name=GLOB)), C(preferences_from), C(wheels) and C(hosts).
    - C(problems), one line per node variable the roles would refuse, naming the host and the variable; empty when
      every variable could be read.
  type: dict
"""


def _site_mirror_needs(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._site_mirror_filters import (
        site_mirror_needs as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"_site_mirror_needs": _site_mirror_needs}
