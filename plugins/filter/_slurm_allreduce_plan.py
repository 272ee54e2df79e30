# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu._slurm_allreduce_plan; its code is in plugin_utils/_slurm_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: _slurm_allreduce_plan
short_description: "Internal: how the all-reduce across Slurm nodes runs, pair by pair (no compatibility promise)"
version_added: 0.1.0
description:
  - Pairs each node with the next one in name order, the last with the first (a ring), so that every node's link is
    measured twice with n pairs in all; two nodes make one pair, fewer make none. The pairs come in rounds in which
    no node is in two pairs (two rounds, three for an odd number of nodes), so that the pairs of a round can run at
    the same time.
  - For each pair, the framework (with O(framework=auto) PyTorch where both nodes validated it, else TensorFlow),
    the mode (C(gpu), one rank per GPU, as many on each node as the node with fewer GPUs has, when the framework
    sees GPUs on both; else C(cpu), O(cpu_ranks) ranks on the CPU of each node), and the C(srun --nodes=2) that runs
    the framework's validation script with C(--multi-node) (see C(playbooks/validate.yml)).
  - A pair without a framework validated on both nodes, or whose nodes keep it in different environments, gets a
    failure and no C(srun). A bad setting, a name that is not a Slurm node name or a node named twice is refused.
positional: _input
options:
  _input:
    description:
      - The nodes, each a dict with C(name) (its Slurm name), C(address) (where the other node reaches it; empty
        for its name) and C(frameworks), a dict from C(pytorch) and C(tensorflow) to null (not validated on this
        node) or a dict with C(venv) (the environment's path), C(gpus) (the GPUs the framework sees) and C(single)
        (the node's own all-reduce record, shown next to the pair's).
    type: list
    elements: dict
    required: true
  framework:
    description: C(auto), C(pytorch) or C(tensorflow).
    type: str
    default: auto
  megabytes:
    description: The size of the all-reduce, in MiB (1 to 99999).
    type: int
    default: 256
  cpu_ranks:
    description: Ranks on each node's CPU where the framework sees no GPU (1 to 16).
    type: int
    default: 1
  port:
    description:
      - The first port of a pair's rendezvous, on the pair's first node (1024 to 60000). TensorFlow's rank r listens
        at the port + r; the pairs of a round start after the ports of the pairs before them.
    type: int
    default: 29400
  timeout:
    description: >-
      Seconds a pair's all-reduce may take, 10 to 99999 (C(--allreduce-timeout); C(srun --time) is a minute
      more).
    type: int
    default: 300
  wait:
    description: Seconds srun waits for the pair's nodes (C(--immediate)) before it gives up, 1 to 99999.
    type: int
    default: 60
  srun_args:
    description: More srun options, such as C(--partition=gpu) or C(--account=ops); each one printable line.
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Plan the all-reduce across nodes
  ansible.builtin.set_fact:
    plan: >-
      {{ [{'name': 'gpu01', 'address': '', 'frameworks': {'pytorch': {'venv': '/opt/accelops-gpu/pytorch', 'gpus': 8}}},
          {'name': 'gpu02', 'address': '', 'frameworks': {'pytorch': {'venv': '/opt/accelops-gpu/pytorch', 'gpus': 8}}}]
         | accelops.gpu._slurm_allreduce_plan(megabytes=1024) }}
"""

RETURN = r"""
_value:
  description:
    - The rounds; each a list of pairs, each pair a dict with C(pair) (the two node names), C(framework), C(mode)
      (C(gpu) or C(cpu)), C(ranks_per_node), C(argv) (the srun to run on the controller; empty with a failure),
      C(single_node) (each node's own all-reduce record, or null) and C(failure) (null, or why the pair cannot run).
  type: list
  elements: list
"""


def _slurm_allreduce_plan(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._slurm_filters import (
        slurm_allreduce_plan as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"_slurm_allreduce_plan": _slurm_allreduce_plan}
