# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu.gpu_feature_labels; its code is in plugin_utils/_kubernetes_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: gpu_feature_labels
short_description: The node labels of NVIDIA's GPU Feature Discovery, from a node's GPU facts
version_added: 0.1.0
description:
  - Gives the labels that NVIDIA's GPU Feature Discovery (GFD, in NVIDIA/k8s-device-plugin v0.20.0) puts on a
    Kubernetes node, with its names and values, from the facts of M(accelops.gpu.gpu_facts), so that a node
    without GFD (or before the GPU Operator runs) carries them. P(accelops.gpu.nfd_feature_file#filter) turns them
    into the file that Node Feature Discovery reads. See the collection's C(docs/kubernetes.md).
  - C(nvidia.com/gpu.product) is the NVML name with every character other than letters, digits, C(-), C(_), C(.)
    and blanks dropped and the words joined by C(-) (C(NVIDIA H100 80GB HBM3) gives C(NVIDIA-H100-80GB-HBM3));
    C(-SHARED) follows when the GPUs are shared (O(replicas) above 1) unless O(rename_by_default).
  - C(nvidia.com/gpu.count), C(gpu.memory) (MiB), C(gpu.family), C(gpu.compute.major) and C(gpu.compute.minor),
    C(gpu.replicas), C(gpu.sharing-strategy), C(gpu.machine), C(gpu.mode) (C(compute), C(graphics) or C(unknown),
    from the PCI class where the facts hold the C(pci) subset), C(mig.capable), C(mps.capable), and the driver and
    CUDA versions as C(cuda.driver-version.major), C(.minor), C(.revision), C(.full),
    C(cuda.runtime-version.major), C(.minor), C(.full) and GFD's older names C(cuda.driver.major), C(.minor),
    C(.rev), C(cuda.runtime.major), C(.minor).
  - The family follows GFD's table of compute capabilities (7.0 volta, 7.5 turing, 8.0 and 8.6 ampere, 8.9
    ada-lovelace, 9.0 hopper, 10.x and 12.x blackwell).
  - With O(mig_strategy=single) or O(mig_strategy=mixed), C(nvidia.com/mig.strategy) and the MIG labels of that
    strategy; see O(mig_strategy).
  - One product per node, as GFD expects; on a node with several, the product of the lowest NVML index (GFD takes
    whichever its map gives), whole GPUs before GPUs in MIG mode, the count that product's GPUs.
  - A lost GPU, or one NVML could not read, is left out of the count (as the device plugin leaves it out of the
    node's GPUs); when no GPU answers, the filter fails. It also fails for facts that are an NVML failure rather
    than a description (driver not loaded, driver and library of different releases, GPUs not counted), where
    NVML failed to give a value a label reads, where the facts lack the C(memory) or C(mig) subset, and for a
    label that Kubernetes would refuse (a value longer than 63 characters, or not beginning and ending with a
    letter or digit). A node whose NVML answers and lists no GPU gets no label at all, as from GFD.
  - Left out, as the facts do not hold them, are a MIG device's C(multiprocessors) and C(engines.*) labels, the
    IMEX labels (C(gpu.clique)), the vGPU labels and GFD's C(gfd.timestamp) (which would change the labels at
    every run).
positional: _input, mig_strategy
options:
  _input:
    description: The C(ansible_facts.nvidia) dictionary of M(accelops.gpu.gpu_facts), or that module's registered
      result (with O(accelops.gpu.gpu_facts#module:set_facts=false) too).
    type: dict
    required: true
  mig_strategy:
    description:
      - How the device plugin offers MIG devices, as the GPU Operator's C(mig.strategy).
      - C(none) labels the whole GPUs (a GPU in MIG mode among them) and sets no C(mig.strategy) label.
      - C(single) labels the MIG devices as C(nvidia.com/gpu) (product C(<GPU>-MIG-<profile>), count, memory,
        C(slices.gi), C(slices.ci)) when every GPU is in MIG mode with MIG devices of one profile; otherwise the
        C(nvidia.com/gpu.product) C(<GPU>-MIG-INVALID) with count, replicas and memory 0, as GFD writes them.
      - C(mixed) adds C(nvidia.com/mig-<profile>.product), C(.count), C(.replicas), C(.sharing-strategy),
        C(.memory), C(.slices.gi) and C(.slices.ci) for each MIG profile on the node (a C(+) of the profile read
        as C(.)); a GPU in MIG mode without MIG devices adds nothing.
    type: str
    choices: [none, single, mixed]
    default: none
  machine:
    description:
      - The node's product name for C(nvidia.com/gpu.machine) (GFD reads C(/sys/class/dmi/id/product_name)),
        for example C(ansible_facts.product_name); written as GFD writes it (C(DGX H100) gives C(DGX-H100)).
      - Null gives C(unknown), as GFD writes where it cannot read the file.
    type: str
  sharing_strategy:
    description:
      - How the device plugin shares each whole GPU (C(nvidia.com/gpu)), as its C(sharing) config does;
        C(time-slicing) and C(mps) need O(replicas) above 1 to take effect.
      - C(mps) sets C(nvidia.com/mps.capable=true); it fails on a node with a GPU in MIG mode, as GFD does.
      - The MIG resources of O(mig_strategy=mixed) are not shared.
    type: str
    choices: [none, time-slicing, mps]
    default: none
  replicas:
    description: How many replicas each shared GPU is offered as (C(nvidia.com/gpu.replicas)); 1 unless
      O(sharing_strategy) is set.
    type: int
    default: 1
  rename_by_default:
    description: The sharing config's C(renameByDefault), under which shared GPUs are offered as
      C(nvidia.com/gpu.shared) and the product has no C(-SHARED) suffix.
    type: bool
    default: false
seealso:
  - plugin: accelops.gpu.nfd_feature_file
    plugin_type: filter
  - module: accelops.gpu.gpu_facts
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Read what the labels are made from, leaving ansible_facts.nvidia as it was
  accelops.gpu.gpu_facts:
    gather_subset: [basic, memory, mig, pci]
    set_facts: false
  register: gpu_read

# {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": "8",
#  "nvidia.com/gpu.memory": "81559", "nvidia.com/gpu.family": "hopper", ...}
- name: Show the labels GPU Feature Discovery would set
  ansible.builtin.debug:
    msg: "{{ gpu_read | accelops.gpu.gpu_feature_labels('mixed') }}"

- name: Show them for GPUs shared four ways by time-slicing, with the node's product name
  ansible.builtin.debug:
    msg: >-
      {{ gpu_read | accelops.gpu.gpu_feature_labels(sharing_strategy='time-slicing', replicas=4,
                                                    machine=ansible_facts.product_name | default(none)) }}
"""

RETURN = r"""
_value:
  description:
    - Label name to value (text), sorted by name; empty for a node whose NVML lists no GPU.
  type: dict
  sample:
    nvidia.com/cuda.driver-version.full: 550.54.15
    nvidia.com/cuda.runtime-version.full: "12.4"
    nvidia.com/gpu.compute.major: "9"
    nvidia.com/gpu.count: "8"
    nvidia.com/gpu.family: hopper
    nvidia.com/gpu.memory: "81559"
    nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3
    nvidia.com/mig.capable: "true"
"""


def gpu_feature_labels(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._kubernetes_filters import (
        gpu_feature_labels as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"gpu_feature_labels": gpu_feature_labels}
