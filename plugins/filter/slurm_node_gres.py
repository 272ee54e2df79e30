# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu.slurm_node_gres; its code is in plugin_utils/_slurm_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: slurm_node_gres
short_description: The GPUs Slurm's NVML autodetection finds on a node, from its GPU facts
version_added: 0.1.0
description:
  - Describes a node's GPUs from the facts of M(accelops.gpu.gpu_facts) as Slurm 24.11's NVML autodetection
    (gres.conf C(AutoDetect=nvml), C(src/plugins/gpu/nvml/gpu_nvml.c)) describes them, one record per GPU in NVML
    index order; a GPU in MIG mode gives one record per MIG device in its place, as in Slurm.
  - The type is the NVML name in lower case with blanks as underscores (C(NVIDIA H100 80GB HBM3) gives
    C(nvidia_h100_80gb_hbm3)). A MIG device's type is its GPU's type up to the first C(-), then the profile from its
    NVML name (C(NVIDIA A100-SXM4-80GB MIG 3g.40gb) gives C(nvidia_a100_3g.40gb)).
  - Links counts, per GPU of the node, the active NVLinks whose far end is that GPU's PCI bus id, C(-1) for the GPU
    itself; links to an NVSwitch count 0, so a DGX gives all zeros, and a GPU without NVLink gives zeros too.
  - Cores are Slurm's core indices (gres.conf C(Cores=)) of the GPU's CPUs, on Linux's usual numbering of the CPUs
    (every core's first thread, then the hyperthread siblings) so that CPU c is core c modulo sockets times cores
    per socket. They need O(hardware); they are null without it, when a CPU of the GPU is not on the node, or when
    the node's CPUs are not numbered that way.
  - Where the facts hold the PCI bus (the C(pci) subset), a GPU that the nvidia driver holds but NVML does not list
    is refused, rather than left out of the node's GPUs; GPUs bound to C(vfio-pci) or to no driver do not count.
  - Fails, naming the GPU, for facts that are an NVML failure rather than a description, where NVML is not usable,
    could not count the GPUs, a GPU is lost or unreadable, NVML did not give what slurmd reads (name, UUID, PCI bus
    id, minor number, NVLinks, MIG devices, CPU affinity), or the facts lack the C(nvlink), C(mig) or C(topology)
    subset. A GPU in MIG mode without MIG devices fails too (slurmd logs an error and offers the whole GPU, which
    CUDA cannot use), and so does a MIG device that O(mig_minors) does not list. A node without GPUs and without
    NVML errors gives an empty list.
  - With O(shards_per_gpu) or O(mps), one record of that GRES follows per whole GPU, after every GPU and MIG device
    record; a GPU in MIG mode gets none (its MIG devices already divide it, and Slurm would spread the count over
    them).
positional: _input, hardware, mig_minors
options:
  _input:
    description: The C(ansible_facts.nvidia) dictionary of M(accelops.gpu.gpu_facts), or that module's registered
      result.
    type: dict
    required: true
  hardware:
    description:
      - The node's hardware as P(accelops.gpu.slurm_hardware#filter) reads it from C(slurmd -C), or what
        C(slurmd -C) printed (its registered result or its text). Needed for the cores.
    type: raw
  mig_minors:
    description:
      - The text of C(/proc/driver/nvidia-caps/mig-minors), or the registered result of a C(cat) or an
        M(ansible.builtin.slurp) of it. Needed for the device files of MIG devices; without it their file is null.
    type: raw
  shards_per_gpu:
    description:
      - C(gres/shard) on every whole GPU, this many each; 0 gives none.
      - A whole number from 0 to 128; anything else fails. Each job on a shard holds a CUDA context of its own (a
        few hundred MiB of GPU memory), so even an 80 GB GPU holds about a hundred at once.
    type: int
    default: 0
  mps:
    description: C(gres/mps) on every whole GPU, C(100) each, so that C(--gres=mps:N) is N percent of one GPU.
    type: bool
    default: false
seealso:
  - plugin: accelops.gpu.slurm_gres_conf
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

# [{"name": "gpu", "type": "nvidia_h100_80gb_hbm3", "count": 1, "index": 0, "mig_index": null,
#   "uuid": "GPU-5b357cbf-...", "file": "/dev/nvidia0", "links": "-1,0,0,0,0,0,0,0", "cores": "0-55",
#   "cpu_affinity": "0-55,112-167"}, ...]
- name: Describe the GPUs as slurmd will
  ansible.builtin.set_fact:
    node_gres: "{{ ansible_facts.nvidia | accelops.gpu.slurm_node_gres(slurmd_c) }}"
"""

RETURN = r"""
_value:
  description: One record per GPU, or per MIG device of a GPU in MIG mode, in NVML's order.
  type: list
  elements: dict
  contains:
    name:
      description: The GRES name, C(gpu); C(shard) or C(mps) for the records of O(shards_per_gpu) and O(mps).
      type: str
    type:
      description: Slurm's type for the GPU or MIG device.
      type: str
    count:
      description: 1 for a GPU or MIG device; the shards or the MPS share of its GPU for C(shard) and C(mps).
      type: int
    index:
      description: The NVML index of the GPU (of the MIG device's GPU).
      type: int
    mig_index:
      description: The MIG device's index on its GPU; null for a GPU.
      type: int
    uuid:
      description: The GPU's UUID, or the MIG device's (C(MIG-<GPU uuid>/<gi>/<ci>) before driver 470.42.01).
      type: str
    file:
      description:
        - The device file, C(/dev/nvidia<minor>); for a MIG device its GPU's file and the capability files of its
          GPU and compute instances, comma separated; null for a MIG device without O(mig_minors).
      type: str
    links:
      description: Slurm's Links= list for a GPU; null for a MIG device, which has none, and for C(shard) and C(mps).
      type: str
    cores:
      description: Slurm's core indices near the GPU (gres.conf C(Cores=)); null where they cannot be told.
      type: str
    cpu_affinity:
      description: The GPU's CPUs as the facts give them (a Linux cpulist); null where NVML does not say.
      type: str
"""


def slurm_node_gres(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._slurm_filters import slurm_node_gres as implementation

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"slurm_node_gres": slurm_node_gres}
