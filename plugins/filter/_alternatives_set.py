# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu._alternatives_set; its code is in plugin_utils/_probe_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: _alternatives_set
short_description: "Internal: the update-alternatives links that a node_probe read found set to a target by hand (no
  compatibility promise)"
version_added: 0.1.0
description:
  - >-
    From the C(files) of M(accelops.gpu.node_probe), the links (names such as C(cuda)) that are in manual mode,
    point at O(target) and have it registered as one of their choices, which C(update-alternatives --install) and
    C(--set) would leave as they are; a role skips those commands, and their round trips, on a converged node.
  - >-
    The read must hold each link's state file, O(admin_dir)/NAME, with its content (node_probe's C(read)), and the
    link C(/etc/alternatives/NAME) (its C(files)). A link whose state file is missing, unreadable or not in
    update-alternatives' format is not in the list.
options:
  _input:
    description: The files read, C(node_probe.files).
    type: dict
    required: true
  links:
    description: The names of the links to judge.
    type: list
    elements: str
    required: true
  target:
    description: The path each link must point at, such as C(/usr/local/cuda-12.8).
    type: str
    required: true
  admin_dir:
    description: Where update-alternatives keeps its state (C(/var/lib/alternatives) on RHEL and its rebuilds).
    type: str
    default: /var/lib/dpkg/alternatives
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Read the alternative's state
  accelops.gpu.node_probe:
    files: [/etc/alternatives/cuda, /var/lib/dpkg/alternatives/cuda]
  register: state

- name: Point /usr/local/cuda at the default toolkit where it does not point there yet
  ansible.builtin.command:
    argv: [update-alternatives, --set, cuda, /usr/local/cuda-12.8]
  when: "'cuda' not in (state.files | accelops.gpu._alternatives_set(['cuda'], '/usr/local/cuda-12.8'))"
"""

RETURN = r"""
_value:
  description: The links that are set so, in the order given.
  type: list
  elements: str
"""


def _alternatives_set(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._probe_filters import alternatives_set as implementation

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"_alternatives_set": _alternatives_set}
