# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu.nccl_env; its code is in plugin_utils/_nccl_env_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: nccl_env
short_description: NCCL's network settings for a node, from its RDMA facts
version_added: 0.1.0
description:
  - Computes the variables of C(/etc/nccl.conf) from the facts of M(accelops.gpu.ib_facts).
  - C(NCCL_IB_HCA) lists every C(ACTIVE) InfiniBand port as C(<device>:<port>), with a leading C(=) so that
    C(mlx5_1) does not also select C(mlx5_10) and C(mlx5_11) (NCCL matches prefixes otherwise). Without an active
    InfiniBand port the active RoCE (Ethernet) ports are listed, with C(NCCL_IB_GID_INDEX) set to their first
    RoCE v2 GID with an IPv4 address.
  - C(NCCL_SOCKET_IFNAME) lists the IPoIB interfaces given (exact names, C(=) again); it is left out without them.
  - C(NCCL_NET_GDR_LEVEL) is the farthest of the GPUs' nearest paths to the listed HCAs (so every GPU uses
    GPUDirect RDMA with its nearest HCA), at most C(PHB); C(PHB) when no GPU is on the PCI bus.
  - The overrides are merged last; an override of null removes the variable.
options:
  _input:
    description: The C(ansible_facts.infiniband) dictionary.
    type: dict
    required: true
  ipoib_interfaces:
    description: The IPoIB interface definitions (dicts with C(interface)) for C(NCCL_SOCKET_IFNAME).
    type: list
    elements: dict
    default: []
  overrides:
    description: NCCL variables that win over the computed ones; null removes one.
    type: dict
    default: {}
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Gather RDMA facts
  accelops.gpu.ib_facts:

# {"NCCL_IB_HCA": "=mlx5_0:1,mlx5_3:1,...", "NCCL_NET_GDR_LEVEL": "PIX", "NCCL_SOCKET_IFNAME": "=ibp24s0"} on a DGX H100
- name: Show NCCL's settings for this node
  ansible.builtin.debug:
    msg: "{{ ansible_facts.infiniband | accelops.gpu.nccl_env([{'interface': 'ibp24s0'}], {'NCCL_DEBUG': 'WARN'}) }}"
"""

RETURN = r"""
_value:
  description: Variable name to value (strings), sorted by name.
  type: dict
"""


def nccl_env(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._nccl_env_filters import nccl_env as implementation

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"nccl_env": nccl_env}
