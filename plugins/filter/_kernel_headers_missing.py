# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu._kernel_headers_missing; its code is in plugin_utils/_kernel_headers_missing_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: _kernel_headers_missing
short_description: "Internal: the header packages that kernels lack, for DKMS (no compatibility promise)"
version_added: 0.1.0
description:
  - Gives the header package of each kernel whose headers are not installed, in the kernels' order; an empty list
    when every kernel has them.
  - On Debian and Ubuntu the headers of kernel C(K) are C(linux-headers-K).
  - On RHEL and its rebuilds they are C(kernel-devel) at the kernel's version, release and architecture (an installed
    C(kernel-devel) of another kernel does not count), and C(kernel-debug-devel), C(kernel-rt-devel) or
    C(kernel-64k-devel) for the kernels whose release ends in C(+debug), C(+rt) or C(+64k).
options:
  _input:
    description: The kernel releases, as C(uname -r) writes them.
    type: list
    elements: str
    required: true
  packages:
    description: The installed packages, C(ansible_facts.packages) from M(ansible.builtin.package_facts).
    type: dict
    required: true
  family:
    description: The distribution's family, C(Debian) (Ubuntu too) or C(RedHat).
    type: str
    required: true
    choices: [Debian, RedHat]
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Read the installed packages
  ansible.builtin.package_facts:

# ['linux-headers-6.1.0-29-amd64'] when only the running kernel's headers are installed
- name: Install the missing headers
  ansible.builtin.package:
    name: "{{ ['6.1.0-28-amd64', '6.1.0-29-amd64']
      | accelops.gpu._kernel_headers_missing(ansible_facts.packages, 'Debian') }}"
"""

RETURN = r"""
_value:
  description: The header packages to install, as the package manager names them.
  type: list
  elements: str
"""


def _kernel_headers_missing(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._kernel_headers_missing_filters import (
        kernel_headers_missing as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"_kernel_headers_missing": _kernel_headers_missing}
