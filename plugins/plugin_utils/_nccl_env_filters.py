# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nccl_env filter, documented in nccl_env.yml."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.accelops.gpu.plugins.module_utils._numbers import shortened

LEVELS = ("PIX", "PXB", "PHB", "NODE", "SYS")
GDR_LIMIT = "PHB"  # beyond the host bridge GPUDirect RDMA is slower than staging through host memory


def _ports(devices, link_layer):
    return [(d["name"], p) for d in devices for p in d.get("ports") or []
            if p.get("state") == "ACTIVE" and p.get("link_layer") == link_layer]


def _roce_gid_index(ports):
    for _name, port in ports:
        for gid in port.get("gids") or []:
            if gid.get("type") == "RoCE v2" and gid.get("ipv4"):
                return gid.get("index")
    return None


def _gdr_level(affinity, hcas):
    nearest = []
    for gpu in affinity or []:
        paths = [(gpu.get("paths") or {}).get(name) for name in hcas]
        paths = [p for p in paths if p in LEVELS]
        if paths:
            nearest.append(min(paths, key=LEVELS.index))
    if not nearest:
        return GDR_LIMIT
    farthest = max(nearest, key=LEVELS.index)
    return farthest if LEVELS.index(farthest) <= LEVELS.index(GDR_LIMIT) else GDR_LIMIT


def _text(value):
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def nccl_env(facts, ipoib_interfaces=None, overrides=None):
    """NCCL_* variables for /etc/nccl.conf (see DOCUMENTATION)."""
    for value, what in ((facts, "the input (ansible_facts.infiniband)"), (overrides, "overrides")):
        if value is not None and not isinstance(value, dict):
            raise AnsibleFilterError("nccl_env: %s must be a dict, got %s" % (what, type(value).__name__))
    if ipoib_interfaces is not None and not isinstance(ipoib_interfaces, list):
        raise AnsibleFilterError("nccl_env: ipoib_interfaces must be a list, got %s" % type(ipoib_interfaces).__name__)
    try:
        return _nccl_env(facts, ipoib_interfaces, overrides)
    except (AttributeError, KeyError, TypeError, ValueError, RecursionError) as exc:
        raise AnsibleFilterError("nccl_env: the input is not ansible_facts.infiniband as ib_facts sets it, or "
                                 "ipoib_interfaces/overrides are malformed (%s: %s)"
                                 % (type(exc).__name__, shortened(exc, 500))) from None


def _nccl_env(facts, ipoib_interfaces, overrides):
    devices = (facts or {}).get("devices") or []
    env = {}
    ports = _ports(devices, "InfiniBand")
    if not ports:
        ports = _ports(devices, "Ethernet")
        gid_index = _roce_gid_index(ports)
        if gid_index is not None:
            env["NCCL_IB_GID_INDEX"] = str(gid_index)
    if ports:
        env["NCCL_IB_HCA"] = "=" + ",".join("%s:%s" % (name, port["port"]) for name, port in ports)
    names = [i["interface"] for i in ipoib_interfaces or [] if isinstance(i, dict) and i.get("interface")]
    if names:
        env["NCCL_SOCKET_IFNAME"] = "=" + ",".join(names)
    env["NCCL_NET_GDR_LEVEL"] = _gdr_level((facts or {}).get("gpu_affinity"), sorted({n for n, _p in ports}))
    for key, value in (overrides or {}).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = _text(value)
    return dict(sorted(env.items()))


class FilterModule:
    def filters(self):
        return {"nccl_env": nccl_env}
