# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu.slurm_hardware; its code is in plugin_utils/_slurm_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: slurm_hardware
short_description: A node's hardware as slurmd -C prints it
version_added: 0.1.0
description:
  - Reads the first line C(slurmd -C) prints (C(NodeName=<name> CPUs=<n> Boards=<n> SocketsPerBoard=<n>
    CoresPerSocket=<n> ThreadsPerCore=<n> RealMemory=<MiB>), followed by C(Gres=) where autodetection found GPUs)
    and leaves out the lines after it (C(Found ...), C(UpTime=...)).
  - Fails, quoting it, for output whose first line is not that.
options:
  _input:
    description: The registered result of C(slurmd -C) (its stdout is read), or its text.
    type: raw
    required: true
seealso:
  - plugin: accelops.gpu.slurm_node_line
    plugin_type: filter
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Read the node's hardware as Slurm sees it
  ansible.builtin.command: slurmd -C
  register: slurmd_c
  changed_when: false

# {"name": "dgx01", "cpus": 224, "boards": 1, "sockets_per_board": 2, "sockets": 2, "cores_per_socket": 56,
#  "threads_per_core": 2, "real_memory": 2063937, "gres": null}
- name: Keep it
  ansible.builtin.set_fact:
    node_hardware: "{{ slurmd_c | accelops.gpu.slurm_hardware }}"
"""

RETURN = r"""
_value:
  description: The hardware.
  type: dict
  contains:
    name:
      description: The node's short host name.
      type: str
    cpus:
      description: CPUs (hardware threads).
      type: int
    boards:
      description: Baseboards.
      type: int
    sockets_per_board:
      description: Sockets per baseboard.
      type: int
    sockets:
      description: Sockets in all, boards times sockets per board.
      type: int
    cores_per_socket:
      description: Cores per socket.
      type: int
    threads_per_core:
      description: Hardware threads per core.
      type: int
    real_memory:
      description: Memory in MiB.
      type: int
    gres:
      description: The Gres= value slurmd's autodetection found; null where the line has none.
      type: str
"""


def slurm_hardware(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._slurm_filters import slurm_hardware as implementation

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"slurm_hardware": slurm_hardware}
