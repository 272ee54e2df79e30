#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: ib_facts
short_description: Gather InfiniBand and RoCE (RDMA) facts and GPU to HCA affinity from sysfs
version_added: 0.1.0
description:
  - Sets C(ansible_facts.infiniband) from C(/sys/class/infiniband) and the PCI tree under C(/sys/devices), without
    running any command and without C(libibverbs), C(ibstat) or C(nvidia-smi).
  - Reports every RDMA device (node GUID, firmware, board id, PCI address, NUMA node, net devices) and each of its
    ports (state, physical state, rate, link layer, LID, subnet manager LID, the GIDs in use).
  - For each NVIDIA GPU on the PCI bus, gives the path type to every RDMA device with the labels of
    C(nvidia-smi topo -m) and NCCL (C(PIX), C(PXB), C(PHB), C(NODE), C(SYS)) and the nearest ones, which is what
    C(NCCL_IB_HCA) and GPUDirect RDMA placement need.
  - Reports whether C(nvidia_peermem) (GPUDirect RDMA with the inbox RDMA stack) is loaded.
  - A host without RDMA devices gets empty lists, not a failure; an attribute that cannot be read is null.
options:
  sysfs_root:
    description:
      - Where sysfs is mounted. Point it at another tree for image builds in a chroot or for tests.
      - The module fails when this is not a directory.
    type: path
    default: /sys
extends_documentation_fragment:
  - accelops.gpu.attributes
  - accelops.gpu.attributes.sysfs_group
  - accelops.gpu.attributes.facts
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  facts:
    support: full
  idempotent:
    support: full
notes:
  - Path types come from the realpath of C(/sys/bus/pci/devices/<address>). On a tree without the PCI hierarchy
    (some containers), only C(NODE) (same NUMA node) and C(SYS) can be told apart.
  - A port's C(rate) is what the kernel reports; on a port that is not C(ACTIVE) it is the lowest rate, not the
    cable's.
seealso:
  - module: accelops.gpu.gpu_facts
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Gather RDMA facts
  accelops.gpu.ib_facts:

- name: Require every compute HCA to be up at NDR
  ansible.builtin.assert:
    that:
      - ansible_facts.infiniband.devices | map(attribute='ports') | flatten
        | selectattr('link_layer', 'equalto', 'InfiniBand') | rejectattr('state', 'equalto', 'ACTIVE')
        | list | length == 0
      - ansible_facts.infiniband.devices | map(attribute='ports') | flatten
        | selectattr('link_layer', 'equalto', 'InfiniBand') | map(attribute='rate_gbps') | min >= 400
    fail_msg: "InfiniBand ports down or slower than 400 Gb/s"

- name: Require GPUDirect RDMA
  ansible.builtin.assert:
    that: ansible_facts.infiniband.peermem_loaded
    fail_msg: nvidia_peermem is not loaded

- name: Give NCCL the HCAs that share a PCIe switch with a GPU
  ansible.builtin.set_fact:
    nccl_ib_hca: >-
      {{ ansible_facts.infiniband.gpu_affinity | selectattr('path', 'equalto', 'PIX')
         | map(attribute='closest') | flatten | unique | join(',') }}
"""

RETURN = r"""
ansible_facts:
  description: RDMA facts, under the key C(infiniband).
  returned: always
  type: complex
  contains:
    infiniband:
      description: What sysfs reports about RDMA devices and their place on the PCI bus. Unreadable values are null.
      returned: always
      type: dict
      contains:
        devices:
          description:
            - One entry per RDMA device in C(/sys/class/infiniband), by name (C(mlx5_2) before C(mlx5_10)).
            - name, pci_bus_id, numa_node, vendor_id, device_id, hca_type (C(MT4129) is a ConnectX-7), node_type
              (C(CA)), node_guid, sys_image_guid, fw_ver, board_id.
            - netdevs, one per net device of the PCI function, with name, port, type (C(ipoib), C(ethernet) or the
              ARPHRD number), address, operstate, mtu.
            - ports, with port, state (C(DOWN), C(INIT), C(ARMED), C(ACTIVE)), phys_state (C(Polling), C(Disabled),
              C(LinkUp), ...), rate (as the kernel prints it), rate_gbps, link_layer (C(InfiniBand) or
              C(Ethernet)), lid, sm_lid, and gids (the non-zero ones, with index, gid, type, netdev, and ipv4 for
              an IPv4-mapped GID).
          type: list
          elements: dict
          returned: always
          sample:
            - name: mlx5_0
              pci_bus_id: "0000:18:00.0"
              numa_node: 0
              vendor_id: "0x15b3"
              device_id: "0x1021"
              hca_type: MT4129
              node_type: CA
              node_guid: a088:c203:005f:c218
              sys_image_guid: a088:c203:005f:c218
              fw_ver: 28.39.1002
              board_id: MT_0000000838
              netdevs:
                - name: ibp24s0
                  port: 1
                  type: ipoib
                  address: 00:00:10:49:fe:80:00:00:00:00:00:00:a0:88:c2:03:00:5f:c2:18
                  operstate: up
                  mtu: 4092
              ports:
                - port: 1
                  state: ACTIVE
                  phys_state: LinkUp
                  rate: 400 Gb/sec (4X NDR)
                  rate_gbps: 400
                  link_layer: InfiniBand
                  lid: 16
                  sm_lid: 1
                  gids:
                    - index: 0
                      gid: fe80:0000:0000:0000:a088:c203:005f:c218
                      type: IB/RoCE v1
                      netdev: null
                      ipv4: null
        peermem_loaded:
          description: Whether the C(nvidia_peermem) kernel module is loaded (C(/sys/module/nvidia_peermem)).
          type: bool
          returned: always
          sample: true
        gpu_affinity:
          description:
            - One entry per NVIDIA GPU on the PCI bus (class 0x03), by PCI address.
            - pci_bus_id, numa_node; paths, the path type to each RDMA device with a PCI address; closest, the
              RDMA devices with the nearest path type; path, that type (null when there is no RDMA device).
            - C(PIX) at most one PCIe switch between them, C(PXB) several switches under one root port, C(PHB)
              through the host bridge, C(NODE) across host bridges of one NUMA node, C(SYS) across NUMA nodes.
          type: list
          elements: dict
          returned: always
          sample:
            - pci_bus_id: "0000:1b:00.0"
              numa_node: 0
              closest: [mlx5_0]
              path: PIX
              paths: {"mlx5_0": "PIX", "mlx5_1": "NODE", "mlx5_6": "SYS"}
        active_hcas:
          description: Names of the RDMA devices with at least one C(ACTIVE) port.
          type: list
          elements: str
          returned: always
          sample: [mlx5_0, mlx5_3, mlx5_4, mlx5_5]
        summary:
          description:
            - Counts of devices, ports, active_ports, active_infiniband_ports, active_ethernet_ports, active_hcas
              and gpus.
          type: dict
          returned: always
          sample: {"devices": 12, "ports": 12, "active_ports": 10, "active_infiniband_ports": 8,
                   "active_ethernet_ports": 2, "active_hcas": 10, "gpus": 8}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.accelops.gpu.plugins.module_utils import _ib
from ansible_collections.accelops.gpu.plugins.module_utils._sysfs import check_sysfs_root


def main():
    module = AnsibleModule(
        argument_spec=dict(
            sysfs_root=dict(type="path", default="/sys"),
        ),
        supports_check_mode=True,
    )
    sysfs_root = module.params["sysfs_root"]
    problem = check_sysfs_root(sysfs_root)
    if problem:
        module.fail_json(msg=problem)
    module.exit_json(changed=False, ansible_facts={"infiniband": _ib.collect(sysfs_root)})


if __name__ == "__main__":
    main()
