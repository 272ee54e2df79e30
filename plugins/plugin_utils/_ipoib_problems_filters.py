# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The _ipoib_problems filter, internal to the roles (no compatibility promise),
documented in _ipoib_problems.yml."""

from __future__ import annotations

import ipaddress

from ansible.errors import AnsibleFilterError

from ansible_collections.accelops.gpu.plugins.module_utils._numbers import shown, whole

KEYS = ("interface", "address", "mtu", "mode")
MODES = {"datagram": 4092, "connected": 65520}
MIN_MTU = 1280  # IPv6's minimum; IPoIB in datagram mode carries 2044 on a 2K fabric MTU


def ipoib_problems(interfaces, netdevs, name="infiniband_ipoib_interfaces"):
    """Every problem of the interface definitions, as 'field: what is wrong' lines."""
    if not isinstance(name, str):
        raise AnsibleFilterError("_ipoib_problems: name must be the variable's name, got %s" % shown(name))
    if not isinstance(interfaces, list):
        return ["%s: must be a list of {interface, address, mtu, mode}, got %s" % (name, shown(interfaces))]
    if netdevs is not None and not (isinstance(netdevs, (list, tuple)) and all(isinstance(n, str) for n in netdevs)):
        raise AnsibleFilterError("_ipoib_problems: netdevs must be a list of net device names, got %s" % shown(netdevs))
    known = list(netdevs or [])
    problems = []
    seen = set()
    for i, entry in enumerate(interfaces):
        field = "%s[%d]" % (name, i)
        if not isinstance(entry, dict):
            problems.append("%s: must be a dict with interface and address, got %s" % (field, shown(entry)))
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
            problems.append("%s.mode: must be datagram or connected, got %s" % (field, shown(mode)))
        problems.extend(_mtu_problems(field, entry.get("mtu"), MODES.get(mode, MODES["connected"]), mode))
    return problems


def _address_problems(field, address):
    if not isinstance(address, str) or "/" not in address:
        return ["%s.address: must be an IP address with its prefix length such as 10.10.0.11/16, got %s"
                % (field, shown(address))]
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
        return {"_ipoib_problems": ipoib_problems}
