# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu._ipoib_problems; its code is in plugin_utils/_ipoib_problems_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: _ipoib_problems
short_description: "Internal: what is wrong with a list of IPoIB interface definitions (no compatibility promise)"
version_added: 0.1.0
description:
  - Checks the C(infiniband_ipoib_interfaces) of the P(accelops.gpu.infiniband#role) role and gives one line per
    problem, each naming the field (C(infiniband_ipoib_interfaces[1].address)); an empty list when all is well.
  - Each entry needs C(interface), one of the IPoIB net devices the host has, and C(address), an IPv4 or IPv6
    address with its prefix length (C(10.10.0.11/16)). C(mode) is C(datagram) (default) or C(connected); C(mtu) is
    at most 4092 in datagram mode and 65520 in connected mode.
options:
  _input:
    description: The interface definitions, a list of dicts.
    type: list
    elements: dict
    required: true
  netdevs:
    description: Names of the IPoIB net devices on the host, from C(ansible_facts.infiniband).
    type: list
    elements: str
    required: true
  name:
    description: The variable name to use in the messages.
    type: str
    default: infiniband_ipoib_interfaces
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
- name: Gather RDMA facts
  accelops.gpu.ib_facts:

- name: Check the IPoIB interfaces
  ansible.builtin.assert:
    that: problems | length == 0
    fail_msg: "{{ problems | join('; ') }}"
  vars:
    infiniband_ipoib_interfaces: [{interface: ibp24s0, address: 10.10.0.11/16}]
    problems: >-
      {{ infiniband_ipoib_interfaces | accelops.gpu._ipoib_problems(ansible_facts.infiniband.devices
         | map(attribute='netdevs') | flatten | selectattr('type', 'equalto', 'ipoib') | map(attribute='name')) }}
"""

RETURN = r"""
_value:
  description: One message per problem, each starting with the field it is about.
  type: list
  elements: str
"""


def _ipoib_problems(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._ipoib_problems_filters import (
        ipoib_problems as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"_ipoib_problems": _ipoib_problems}
