# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu._package_offers; its code is in plugin_utils/_package_versions_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: _package_offers
short_description: "Internal: the versions a package manager offers, per package (no compatibility promise)"
version_added: 0.1.0
description:
  - Reads a package manager's listing (C(apt-cache madison), C(dnf list --showduplicates)) line by line and gives
    the versions offered per package, in listing order. A line counts when O(regex) matches it; its first group is
    the package name, its second the version. Other lines are left out.
  - Without O(regex), reads the C(candidates) of M(accelops.gpu.node_probe) instead (apt-cache policy's versions on
    offer, newest first); a package with none is left out.
positional: _input, regex
options:
  _input:
    description: The listing's lines (a registered result's C(stdout_lines)), or node_probe's C(candidates).
    type: raw
    required: true
  regex:
    description: A regular expression with two groups, the package name and the version; none for node_probe's
      C(candidates).
    type: str
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Ask apt which versions it offers
  ansible.builtin.command: apt-cache madison libcudnn9-cuda-12
  register: madison
  changed_when: false

# {"libcudnn9-cuda-12": ["9.8.0.87-1", "9.1.0.70-1"]}
- name: What apt offers
  ansible.builtin.debug:
    msg: "{{ madison.stdout_lines | accelops.gpu._package_offers('^\\s*(\\S+)\\s*\\|\\s*(\\S+)\\s*\\|') }}"
"""

RETURN = r"""
_value:
  description: The versions per package name.
  type: dict
"""


def _package_offers(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._package_versions_filters import (
        package_offers as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"_package_offers": _package_offers}
