# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu._dkms_unbuilt; its code is in plugin_utils/_dkms_unbuilt_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: _dkms_unbuilt
short_description: "Internal: the kernels for which DKMS has not installed a module (no compatibility promise)"
version_added: 0.1.0
description:
  - Reads what C(dkms status) printed and gives the kernels, of those asked about and in their order, that have no
    C(installed) build of the module at the given version; an empty list when every kernel has one.
  - A build that is only C(built) or C(added), a build of another version, and another module do not count;
    C(installed-weak) (RHEL's weak-updates link to a compatible kernel's build) does.
  - Reads the formats of dkms 3 (C(module/version, kernel, arch, state)) and dkms 2
    (C(module, version, kernel, arch, state)).
options:
  _input:
    description: The registered result of C(dkms status), or the lines or text it printed.
    type: raw
    required: true
  kernels:
    description: The kernel releases (as C(uname -r) writes them) that must have the module.
    type: list
    elements: str
    required: true
  version:
    description: The module's version, the driver's release such as C(570.124.06).
    type: str
    required: true
  module:
    description:
      - A regular expression for the DKMS module's name. The default matches the names NVIDIA's packages register
        (C(nvidia), C(nvidia-open), and C(nvidia-current), C(nvidia-current-open) on Debian).
    type: str
    default: \Anvidia(-current)?(-open)?\Z
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Read what DKMS has built
  ansible.builtin.command: dkms status
  register: dkms
  changed_when: false

# ['6.1.0-29-amd64'] when only the running kernel 6.1.0-28-amd64 has the module
- name: Refuse to leave a kernel without the driver's module
  ansible.builtin.assert:
    that: dkms | accelops.gpu._dkms_unbuilt(['6.1.0-28-amd64', '6.1.0-29-amd64'], '570.124.06') | length == 0
"""

RETURN = r"""
_value:
  description: The kernels without an installed build, in the order given.
  type: list
  elements: str
"""


def _dkms_unbuilt(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._dkms_unbuilt_filters import (
        dkms_unbuilt as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"_dkms_unbuilt": _dkms_unbuilt}
