# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu.slurm_node_line; its code is in plugin_utils/_slurm_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: slurm_node_line
short_description: A node's NodeName= line for slurm.conf
version_added: 0.1.0
description:
  - Writes C(NodeName=<name> [NodeAddr=<addr>] [Port=<port>] CPUs= Boards= SocketsPerBoard= CoresPerSocket=
    ThreadsPerCore= RealMemory= [Gres=] [<extra>] State=UNKNOWN) from the node's hardware and its GPU records.
  - Fails, naming the field, for a name that is not a Slurm node name (letters, digits, C(-), C(_) and C(.),
    starting with a letter or digit, not C(DEFAULT)), an address that is neither a host name nor an IP address, a
    port outside 1 to 65535, and anything else slurm.conf cannot hold.
positional: _input, hardware, gres, addr, port
options:
  _input:
    description: The node's name in Slurm.
    type: str
    required: true
  hardware:
    description: The node's hardware from P(accelops.gpu.slurm_hardware#filter), or what C(slurmd -C) printed.
    type: raw
    required: true
  gres:
    description:
      - The node's records from P(accelops.gpu.slurm_node_gres#filter), or a C(Gres=) value such as
        C(gpu:nvidia_h100_80gb_hbm3:8). No C(Gres=) is written for a node without GPUs.
    type: raw
    required: true
  addr:
    description: The NodeAddr, a host name or an IP address (an IPv6 address without a C(%) scope); none by default.
    type: str
  port:
    description: The slurmd port of the node; none by default.
    type: int
  extra:
    description:
      - Further node parameters as a dictionary (C(Features), C(Weight), ...), written in its order before
        C(State). Values are whole numbers, or strings of letters, digits, parentheses and
        C(_.,:+/@[]-).
      - Keys are compared without case, as Slurm reads them; a key that the line writes itself, or one given twice,
        is refused.
    type: dict
seealso:
  - plugin: accelops.gpu.slurm_hardware
    plugin_type: filter
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Gather GPU facts
  accelops.gpu.gpu_facts:

- name: Read the node's hardware as Slurm sees it
  ansible.builtin.command: slurmd -C
  register: slurmd_c
  changed_when: false

- name: Describe the GPUs as slurmd will
  ansible.builtin.set_fact:
    node_gres: "{{ ansible_facts.nvidia | accelops.gpu.slurm_node_gres(slurmd_c) }}"

# NodeName=dgx01 NodeAddr=10.0.0.11 CPUs=224 Boards=1 SocketsPerBoard=2 CoresPerSocket=56 ThreadsPerCore=2
# RealMemory=2063937 Gres=gpu:nvidia_h100_80gb_hbm3:8 Features=h100 State=UNKNOWN
- name: Write the node's line
  ansible.builtin.set_fact:
    node_line: >-
      {{ inventory_hostname_short | accelops.gpu.slurm_node_line(slurmd_c, node_gres, addr=ansible_host,
                                                                 extra={'Features': 'h100'}) }}
"""

RETURN = r"""
_value:
  description: The slurm.conf line.
  type: str
"""


def slurm_node_line(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._slurm_filters import slurm_node_line as implementation

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"slurm_node_line": slurm_node_line}
