# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu._slurm_gres_mismatch; its code is in plugin_utils/_slurm_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: _slurm_gres_mismatch
short_description: "Internal: where the GPUs slurmd -G detects differ from those a node's facts expect (no
  compatibility promise)"
version_added: 0.1.0
description:
  - Reads the C(Gres Name=gpu ...) lines C(slurmd -G) logs (Slurm's C(_log_gres_slurmd_conf), with or without a
    C(slurmd:) prefix; other lines are left out) and compares the GPUs with the records of
    P(accelops.gpu.slurm_node_gres#filter).
  - C(shard) and C(mps) lines are compared only where the records hold that GRES, by the count slurmd gives each
    GPU's device file (with C(DebugFlags=Gres)), else by the node's total; a line with C(Count=0) (a MIG device,
    which gets no share) is no share. Other GRES are not compared.
  - Gives one message per type whose count differs, and where slurmd printed device files (it does with
    C(DebugFlags=Gres)), one per expected device file it does not list, per device file it lists that the facts do
    not have, and per device whose type or Links differ (Links only where both are known). Each message names the
    GPU by its NVML index and device file.
  - slurmd prints these lines at info level only with C(DebugFlags=Gres) in slurm.conf, otherwise with C(-v); when
    GPUs are expected and it printed none, a message says so.
positional: _input, output
options:
  _input:
    description: The records of P(accelops.gpu.slurm_node_gres#filter).
    type: list
    elements: dict
    required: true
  output:
    description: The registered result of C(slurmd -G) (its stdout and stderr, where slurmd logs), or its text.
    type: raw
    required: true
seealso:
  - plugin: accelops.gpu.slurm_node_gres
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

- name: Ask slurmd which GPUs it finds with the new configuration
  ansible.builtin.command: slurmd -G
  register: slurmd_g
  changed_when: false

# ["GPU type nvidia_h100_80gb_hbm3: gres.conf/facts expect 8, slurmd -G detects 7",
#  "GPU 7 (/dev/nvidia7): expected as type nvidia_h100_80gb_hbm3, but slurmd -G lists no GPU with this File"]
- name: Refuse to restart slurmd when it would see other GPUs
  ansible.builtin.assert:
    that: node_gres | accelops.gpu._slurm_gres_mismatch(slurmd_g) | length == 0
    fail_msg: "{{ node_gres | accelops.gpu._slurm_gres_mismatch(slurmd_g) }}"
"""

RETURN = r"""
_value:
  description: The differences, each a sentence for an operator; empty when slurmd detects what the facts expect.
  type: list
  elements: str
"""


def _slurm_gres_mismatch(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._slurm_filters import (
        slurm_gres_mismatch as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"_slurm_gres_mismatch": _slurm_gres_mismatch}
