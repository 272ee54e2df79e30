# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu._slurm_cluster_members; its code is in plugin_utils/_slurm_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: _slurm_cluster_members
short_description: "Internal: the GPU nodes slurm.conf describes, some outside the play (no compatibility promise)"
version_added: 0.1.0
description:
  - In Slurm's configless mode (O(accelops.gpu.slurm#role:main:slurm_configless)) only the controller holds
    C(slurm.conf) and C(gres.conf), and a GPU node may join, or be changed, in a run that leaves the other nodes out
    (C(--limit NEWNODE,slurm_controllers)).
  - Gives each host of the node group in inventory order. A host of the play is the node record it set itself
    (C(__slurm_node)); one not described yet is listed under C(waiting). A host outside the play is the C(NodeName=)
    line of the controller's C(slurm.conf) under its C(slurm_node_name) (the inventory's, else its short host name),
    with that node's C(NodeName=) lines of the controller's C(gres.conf); one the controller does not have is listed
    under C(unknown), never guessed.
  - A kept node counts as in a container where the controller's C(slurm.conf) does not confine jobs
    (C(ProctrackType) other than C(proctrack/cgroup)), so that O(accelops.gpu.slurm#role:main:slurm_cgroups=auto)
    decides as the full run did.
  - Only the role's own lines are kept (C(NodeName=) and one name, then settings, in printable ASCII with no comment,
    quote or escape); any other line that Slurm reads is never rewritten, and a node outside the play that has one is
    listed under C(problems).
  - A file that does not exist has no node. A read without its text is an error.
positional: _input, hostvars, conf, gres, play_hosts
options:
  _input:
    description: The hosts of the node group, in inventory order.
    type: list
    elements: str
    required: true
  hostvars:
    description: C(hostvars).
    type: raw
    required: true
  conf:
    description: The controller's C(slurm.conf), as text or as node_probe's read of it.
    type: raw
    required: true
  gres:
    description: The controller's C(gres.conf), as text or as node_probe's read of it.
    type: raw
    required: true
  play_hosts:
    description: The hosts of the play (C(ansible_play_hosts_all)).
    type: list
    elements: str
    required: true
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
# This host outside the play (no play hosts given), as the controller's slurm.conf and gres.conf keep it.
- name: Read the cluster's GPU nodes
  ansible.builtin.set_fact:
    members: "{{ [inventory_hostname] | accelops.gpu._slurm_cluster_members(hostvars, slurm_conf, gres_conf, []) }}"
  vars:
    slurm_conf: |
      SlurmctldParameters=enable_configless
      NodeName={{ inventory_hostname }} CPUs=8 RealMemory=64000 Gres=gpu:nvidia_l4:1 State=UNKNOWN
    gres_conf: |
      NodeName={{ inventory_hostname }} AutoDetect=nvml

- name: Refuse a node that is neither in the play nor in the cluster
  ansible.builtin.assert:
    that:
      - members.unknown | length == 0
      - members.problems | length == 0
      - members.gres_lines == ['NodeName=' ~ inventory_hostname ~ ' AutoDetect=nvml']
"""

RETURN = r"""
_value:
  description: >-
    C(nodes), each with C(name), C(line) (slurm.conf's), C(gres) (records or the C(Gres=) value), C(gres_conf)
    (its gres.conf lines without C(NodeName=)) and C(in_container); C(unknown) and C(waiting), lists of hosts;
    C(removed), the node names of the controller's C(slurm.conf) that are none of the group's (a node of the play not
    described yet counts under the name it published, C(__slurm_me.name)), then the C(NodeName=) values of entries the
    role did not write (a hostlist such as C(gpu[01-04])); C(names), the node names of the group's hosts;
    C(problems), why a node outside the play cannot be kept as the controller has it (a line the role did not write,
    two lines for one node, no C(gres.conf) line, a C(slurm.conf) not yet in configless mode, a C(slurm_node_name)
    that is not text) and each node name that two hosts share;
    C(gres_lines), the cluster's C(gres.conf) lines with C(NodeName=); C(gres_types), slurm.conf's C(GresTypes).
  type: dict
"""


def _slurm_cluster_members(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._slurm_filters import (
        slurm_cluster_members as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"_slurm_cluster_members": _slurm_cluster_members}
