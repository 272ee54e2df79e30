# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu._slurm_allreduce_result; its code is in plugin_utils/_slurm_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: _slurm_allreduce_result
short_description: "Internal: one pair's all-reduce across nodes, from what its srun printed (no compatibility promise)"
version_added: 0.1.0
description:
  - "Takes one pair of P(accelops.gpu._slurm_allreduce_plan#filter)'s plan and the registered result of its C(srun) (see
    C(playbooks/validate.yml)): every rank's standard output, where rank 0 prints its record as one JSON line and a
    rank that fails prints its failure; srun's own messages on standard error."
  - The failure of the lowest rank that reported one wins; without one, a non-zero exit of srun (with srun's last
    message, such as busy nodes after C(--immediate)), a run that never ended (Ansible's message), or a run without
    rank 0's record is the failure. Only a record of rank 0 without any failure counts as a result.
  - A pair that the plan could not run keeps the plan's failure; O(result) is not read then.
positional: _input, result
options:
  _input:
    description: One pair of the plan.
    type: dict
    required: true
  result:
    description: The registered result of the pair's srun (C(stdout), C(stderr), C(rc)), or its C(async_status).
    type: dict
"""

EXAMPLES = r"""
- name: Plan the all-reduce across nodes
  ansible.builtin.set_fact:
    plan: >-
      {{ [{'name': 'gpu01', 'address': '', 'frameworks': {'pytorch': {'venv': '/opt/accelops-gpu/pytorch', 'gpus': 8}}},
          {'name': 'gpu02', 'address': '', 'frameworks': {'pytorch': {'venv': '/opt/accelops-gpu/pytorch', 'gpus': 8}}}]
         | accelops.gpu._slurm_allreduce_plan(megabytes=1024) }}

- name: Start each pair's srun
  ansible.builtin.command:
    argv: "{{ item.argv }}"
  loop: "{{ plan | flatten(levels=1) | selectattr('argv') }}"
  async: 900
  poll: 0
  register: started
  changed_when: false

- name: Wait for each
  ansible.builtin.async_status:
    jid: "{{ item.ansible_job_id }}"
  loop: "{{ started.results }}"
  register: finished
  until: finished.finished
  retries: 90
  delay: 10
  failed_when: false

- name: Read each pair's result
  ansible.builtin.set_fact:
    pairs: "{{ pairs | default([]) + [item.item.item | accelops.gpu._slurm_allreduce_result(item)] }}"
  loop: "{{ finished.results }}"
"""

RETURN = r"""
_value:
  description:
    - C(nodes) (the pair), C(framework), C(mode), C(ranks_per_node), C(single_node) (each node's own all-reduce
      record, or null), C(record) (rank 0's record, null on failure), C(failure) (one line, null on success) and
      C(summary) (one line for people, with each node's own figure next to the pair's).
    - The record holds C(framework), C(version), C(backend) (C(nccl), C(gloo) or TensorFlow's C(ring)), C(ranks),
      C(gpus), C(bytes), C(seconds), C(algbw_gbps), C(busbw_gbps) (as nccl-tests reports an all-reduce) and
      C(correct).
  type: dict
"""


def _slurm_allreduce_result(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._slurm_filters import (
        slurm_allreduce_result as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"_slurm_allreduce_result": _slurm_allreduce_result}
