# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu.node_file_paths; its code is in plugin_utils/_node_files_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: node_file_paths
short_description: The destinations of node_files entries, for the read that node_files decides from
version_added: 0.1.0
description:
  - Every path that M(accelops.gpu.node_files) would put in place for these entries, in order, with the directories
    and files of a O(accelops.gpu.node_files#module:files[].module_utils) tree and of a
    O(accelops.gpu.node_files#module:files[].program)'s lib expanded.
  - Give them to M(accelops.gpu.node_probe)'s O(accelops.gpu.node_probe#module:files) in the role's one read, and
    that read's C(files) to O(accelops.gpu.node_files#module:known). Where the read finds every destination as
    wanted, node_files decides on the controller and does not call the node again. The entries are declared once and
    used for both.
  - The entries are checked as node_files checks them; a bad entry is an error naming it.
options:
  _input:
    description: The entries, as O(accelops.gpu.node_files#module:files) takes them.
    type: list
    elements: dict
    required: true
  directory_mode:
    description: The task's O(accelops.gpu.node_files#module:directory_mode), if it gives one.
    type: str
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Say which files the boot part is
  ansible.builtin.set_fact:
    boot_files:
      - dest: /etc/accelops-gpu
        directory: true
      - dest: /etc/accelops-gpu/gpu-settings.json
        content: "{{ {'gpus': []} | to_nice_json }}"
      - dest: /usr/local/libexec/accelops-gpu
        directory: true
      - dest: /usr/local/libexec/accelops-gpu/apply-gpu-settings
        program: apply-gpu-settings
        lib: /usr/local/lib/accelops-gpu

- name: Read the boot part's files and unit once
  accelops.gpu.node_probe:
    files: "{{ boot_files | accelops.gpu.node_file_paths }}"
    services: [accelops-gpu-settings.service]
  register: boot_state

- name: Put the boot part's files in place (no call on the node where the read found them all as wanted)
  accelops.gpu.node_files:
    files: "{{ boot_files }}"
    known: "{{ boot_state.files }}"
"""

RETURN = r"""
_value:
  description: The absolute paths, in the order node_files puts them in place.
  type: list
  elements: str
"""


def node_file_paths(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._node_files_filters import (
        node_file_paths as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"node_file_paths": node_file_paths}
