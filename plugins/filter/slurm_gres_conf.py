# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu.slurm_gres_conf; its code is in plugin_utils/_slurm_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: slurm_gres_conf
short_description: The lines of a node's gres.conf, from its GPU records
version_added: 0.1.0
description:
  - With O(autodetect) true, the one line C(AutoDetect=nvml), so that slurmd finds the GPUs itself.
  - With O(autodetect) false, C(AutoDetect=off) and one line per record,
    C(Name=gpu Type=<type> File=<file> [Cores=<cores>] [Links=<links>]). A MIG device's several files go in
    C(MultipleFiles=), as gres.conf requires (its C(File=) takes a list as that many GPUs).
  - In both cases, one line per record of a GRES that shares a GPU, C(Name=shard Count=<n> File=/dev/nvidia<minor>)
    and C(Name=mps Count=100 File=/dev/nvidia<minor>) (records from
    O(accelops.gpu.slurm_node_gres#filter:shards_per_gpu) and O(accelops.gpu.slurm_node_gres#filter:mps)). Slurm
    matches each to the GPU with that device file, so with C(AutoDetect=nvml) too every whole GPU gets exactly its
    count and a MIG device (whose files never match) gets none.
  - Fails for a MIG device without device files (give P(accelops.gpu.slurm_node_gres#filter) the mig-minors text),
    and for anything gres.conf cannot hold.
positional: _input, autodetect
options:
  _input:
    description: The records of P(accelops.gpu.slurm_node_gres#filter).
    type: list
    elements: dict
    required: true
  autodetect:
    description: Whether slurmd detects the GPUs through NVML (true) or reads them from these lines (false).
    type: bool
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

# ["AutoDetect=off",
#  "Name=gpu Type=nvidia_h100_80gb_hbm3 File=/dev/nvidia0 Cores=0-55 Links=-1,0,0,0,0,0,0,0", ...]
- name: Write gres.conf
  ansible.builtin.copy:
    content: "{{ (node_gres | accelops.gpu.slurm_gres_conf(false) | join('\n')) + '\n' }}"
    dest: /etc/slurm/gres.conf
    mode: "0644"
"""

RETURN = r"""
_value:
  description: The lines, without line ends.
  type: list
  elements: str
"""


def slurm_gres_conf(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._slurm_filters import slurm_gres_conf as implementation

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"slurm_gres_conf": slurm_gres_conf}
