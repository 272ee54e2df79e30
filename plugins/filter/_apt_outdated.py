# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu._apt_outdated; its code is in plugin_utils/_package_versions_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: _apt_outdated
short_description: "Internal: the packages apt would install or move, from one apt-cache policy read (no
  compatibility promise)"
version_added: 0.1.0
description:
  - Gives the packages, in the order given, that are not installed at apt's candidate version (not installed, at
    another version, without a candidate, or unknown to apt). An empty list means that C(apt state=latest) on them
    would change nothing, so a converged node needs no apt run.
  - Reads the C(candidates) of M(accelops.gpu.node_probe) (C(apt-cache policy), which already applies the pins).
options:
  _input:
    description: The package names.
    type: list
    elements: str
    required: true
  candidates:
    description: C(candidates) from M(accelops.gpu.node_probe); C(null) (no apt on the node) gives every name.
    type: dict
    required: true
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Read apt's candidates
  accelops.gpu.node_probe:
    candidates: [nvidia-open, libnvidia-ml1]
  register: state

- name: Install the driver packages only where apt would change them
  ansible.builtin.apt:
    name: [nvidia-open, libnvidia-ml1]
    state: latest
  when: "['nvidia-open', 'libnvidia-ml1'] | accelops.gpu._apt_outdated(state.candidates) | length > 0"
"""

RETURN = r"""
_value:
  description: The packages apt would install or move.
  type: list
  elements: str
"""


def _apt_outdated(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._package_versions_filters import (
        apt_outdated as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"_apt_outdated": _apt_outdated}
