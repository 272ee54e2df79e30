# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu._newest_version; its code is in plugin_utils/_package_versions_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: _newest_version
short_description: "Internal: the newest of a list of versions (no compatibility promise)"
version_added: 0.1.0
description:
  - Gives the newest version of the list in the package manager's order (O(scheme)), among those that end with
    O(suffix) and match O(pattern); an empty string when none does.
  - "C(deb) orders as C(dpkg --compare-versions) does: the epoch first (C(1:9.1-1) is newer than C(9.10-1)), a
    C(~) before everything, the end included (C(9.8.0.87~rc1-1) is older than C(9.8.0.87-1)), no revision as
    revision 0. C(rpm) orders as RPM's C(rpmvercmp) does: a C(~) before everything, a C(^) after the end and
    before everything else, a release after none."
  - The comparisons are tested against dpkg's and RPM's own answers on several hundred real version strings.
  - A version that the package manager would refuse (a Debian version not starting with a digit, a space in it)
    is an error naming it.
  - Used by the P(accelops.gpu.cuda_toolkit#role) role to pick the newest toolkit asked for and the newest cuDNN
    and NCCL builds the repository offers for it.
positional: _input
options:
  _input:
    description: The versions.
    type: list
    elements: str
    required: true
  suffix:
    description: Only versions that end with this (C(+cuda12.8) for NCCL builds of CUDA 12.8).
    type: str
    default: ""
  pattern:
    description: Only versions this regular expression finds something in.
    type: str
    default: ""
  scheme:
    description: The package manager's order, C(deb) (dpkg's, for Debian and Ubuntu) or C(rpm) (RPM's, for EL).
    type: str
    choices: [deb, rpm]
    default: deb
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
# "2.26.2-1+cuda12.8"
- name: Newest NCCL build for CUDA 12.8
  ansible.builtin.debug:
    msg: "{{ ['2.21.5-1+cuda12.4', '2.26.2-1+cuda12.8', '2.25.1-1+cuda12.8']
      | accelops.gpu._newest_version(suffix='+cuda12.8') }}"

# "9.8.0.87-1": the release candidate is older
- name: Newest cuDNN build in dpkg's order
  ansible.builtin.debug:
    msg: "{{ ['9.8.0.87~rc1-1', '9.8.0.87-1'] | accelops.gpu._newest_version }}"
"""

RETURN = r"""
_value:
  description: The newest matching version, or an empty string.
  type: str
"""


def _newest_version(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._package_versions_filters import (
        newest_version as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"_newest_version": _newest_version}
