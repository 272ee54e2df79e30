# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: ipoib_problems
short_description: What is wrong with a list of IPoIB interface definitions
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
- name: Check the IPoIB interfaces
  ansible.builtin.assert:
    that: problems | length == 0
    fail_msg: "{{ problems | join('; ') }}"
  vars:
    problems: >-
      {{ infiniband_ipoib_interfaces | accelops.gpu.ipoib_problems(ansible_facts.infiniband.devices
         | map(attribute='netdevs') | flatten | selectattr('type', 'equalto', 'ipoib') | map(attribute='name')) }}
"""

RETURN = r"""
_value:
  description: One message per problem, each starting with the field it is about.
  type: list
  elements: str
"""

import ipaddress

from ansible.errors import AnsibleFilterError

from ansible_collections.accelops.gpu.plugins.module_utils._numbers import shown, whole

KEYS = ("interface", "address", "mtu", "mode")
MODES = {"datagram": 4092, "connected": 65520}
MIN_MTU = 1280  # IPv6's minimum; IPoIB in datagram mode carries 2044 on a 2K fabric MTU


def ipoib_problems(interfaces, netdevs, name="infiniband_ipoib_interfaces"):
    """Every problem of the interface definitions, as 'field: what is wrong' lines."""
    if not isinstance(interfaces, list):
        return ["%s: must be a list of {interface, address, mtu, mode}, got %r" % (name, interfaces)]
    if netdevs is not None and not isinstance(netdevs, (list, tuple)):
        raise AnsibleFilterError("ipoib_problems: netdevs must be a list of net device names, got %s"
                                 % type(netdevs).__name__)
    known = [str(n) for n in netdevs or []]
    problems = []
    seen = set()
    for i, entry in enumerate(interfaces):
        field = "%s[%d]" % (name, i)
        if not isinstance(entry, dict):
            problems.append("%s: must be a dict with interface and address, got %r" % (field, entry))
            continue
        for key in sorted(set(entry) - set(KEYS)):
            problems.append("%s.%s: unknown key (known: %s)" % (field, key, ", ".join(KEYS)))
        interface = entry.get("interface")
        if not interface or not isinstance(interface, str):
            problems.append("%s.interface: required, the name of an IPoIB net device" % field)
        elif interface not in known:
            problems.append("%s.interface: '%s' is not an IPoIB interface of this host (ib_facts found: %s)"
                            % (field, interface, ", ".join(known) or "none"))
        elif interface in seen:
            problems.append("%s.interface: '%s' is defined twice" % (field, interface))
        seen.add(interface)
        problems.extend(_address_problems(field, entry.get("address")))
        mode = entry.get("mode", "datagram")
        if mode not in MODES:
            problems.append("%s.mode: must be datagram or connected, got %r" % (field, mode))
        problems.extend(_mtu_problems(field, entry.get("mtu"), MODES.get(mode, MODES["connected"]), mode))
    return problems


def _address_problems(field, address):
    if not isinstance(address, str) or "/" not in address:
        return ["%s.address: must be an IP address with its prefix length such as 10.10.0.11/16, got %r"
                % (field, address)]
    try:
        parsed = ipaddress.ip_interface(address)
    except ValueError:
        return ["%s.address: '%s' is not an IP address with a prefix length" % (field, address)]
    if parsed.ip == parsed.network.network_address and parsed.network.num_addresses > 2:
        return ["%s.address: '%s' is the network's own address, not a host's" % (field, address)]
    return []


def _mtu_problems(field, mtu, limit, mode):
    if mtu is None:
        return []
    value = whole(mtu) if not isinstance(mtu, str) else whole(mtu.strip(" "))
    if value is None:
        return ["%s.mtu: must be a number, whole and in ASCII digits, got %s" % (field, shown(mtu))]
    if not MIN_MTU <= value <= limit:
        return ["%s.mtu: must be between %d and %d in %s mode, got %s" % (field, MIN_MTU, limit, mode, mtu)]
    return []


class FilterModule:
    def filters(self):
        return {"ipoib_problems": ipoib_problems}
