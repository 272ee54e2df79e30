# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu._file_matches; its code is in plugin_utils/_probe_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: _file_matches
short_description: "Internal: whether a path read by node_probe is as a file, copy or template task would leave it
  (no compatibility promise)"
version_added: 0.1.0
description:
  - Compares one path's state from M(accelops.gpu.node_probe) (its C(files)) with what a task would leave, so that a
    role skips the task, and its round trip, on a converged node.
  - True when the path exists as the given kind and each of O(owner), O(group), O(mode) and O(checksum) that is
    given matches; a path that is missing, of another kind or could not be read gives false.
options:
  _input:
    description: One path's state, C(node_probe.files[path]).
    type: dict
    required: true
  kind:
    description: What the path must be.
    type: str
    default: file
    choices: [file, directory, link]
  owner:
    description: The owner's name.
    type: str
  group:
    description: The group's name.
    type: str
  mode:
    description: The permissions as four octal digits, such as C('0644').
    type: str
  checksum:
    description: The SHA-1 of the content (what the copy and template modules compare), such as
      C(lookup('ansible.builtin.template', 'x.j2') | hash('sha1')).
    type: str
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Read the file once
  accelops.gpu.node_probe:
    files: [/etc/app.conf]
  register: state

- name: Write the configuration only where it differs
  ansible.builtin.copy:
    content: "threads = 8\n"
    dest: /etc/app.conf
    owner: root
    group: root
    mode: "0644"
  when: >-
    not (state.files['/etc/app.conf'] | accelops.gpu._file_matches(owner='root', group='root', mode='0644',
         checksum='threads = 8\n' | hash('sha1')))
"""

RETURN = r"""
_value:
  description: Whether the path is as wanted.
  type: bool
"""


def _file_matches(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._probe_filters import file_matches as implementation

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"_file_matches": _file_matches}
