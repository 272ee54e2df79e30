# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: RDMA devices, their ports and their PCIe distance to GPUs, from sysfs."""

from __future__ import annotations

import os
import re

from ansible_collections.accelops.gpu.plugins.module_utils import _pci
from ansible_collections.accelops.gpu.plugins.module_utils._numbers import decimal_or_hex, natural
from ansible_collections.accelops.gpu.plugins.module_utils._sysfs import read_attribute

# Path types between two PCI functions, nearest first, with NVML's topology levels (nvmlGpuTopologyLevel_t) and
# the labels nvidia-smi topo -m and NCCL use.
PATH_LEVELS = {"PIX": 10, "PXB": 20, "PHB": 30, "NODE": 40, "SYS": 50}

NETDEV_TYPES = {1: "ethernet", 32: "ipoib"}  # ARPHRD_ETHER, ARPHRD_INFINIBAND

_HOST_BRIDGE = re.compile(r"^pci[0-9a-f]{4}:[0-9a-f]{2}$")
_PCI_ADDRESS = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*Gb/sec")


def _read(path):
    """A sysfs attribute's text, stripped; None when it is missing or cannot be read."""
    return read_attribute(path)


def _listdir(path):
    try:
        return sorted(os.listdir(path), key=natural)
    except OSError:
        return []


def parse_enum(text):
    """``4: ACTIVE`` -> ``ACTIVE`` (the name after the code, as sysfs prints port states and node types)."""
    if not text:
        return None
    return text.split(":", 1)[1].strip() if ":" in text else text


def parse_int(text):
    """A sysfs number in hex (``0x1a``) or decimal; None when it is neither."""
    return decimal_or_hex(text) if text else None


def parse_rate(text):
    """``400 Gb/sec (4X NDR)`` -> 400 (an int when whole, else a float such as 2.5); None when unparsable."""
    match = _RATE.match(text or "")
    if not match:
        return None
    value = float(match.group(1))
    return int(value) if value.is_integer() else value


def parse_numa(text):
    value = parse_int(text)
    return value if value is not None and value >= 0 else None


def parse_gid(text):
    """A GID as sysfs prints it; None when zero (an unused entry) or unparsable. Adds ``ipv4`` when IPv4-mapped."""
    if not text:
        return None
    groups = text.lower().split(":")
    if len(groups) != 8 or not all(re.match(r"^[0-9a-f]{4}$", g) for g in groups):
        return None
    if all(g == "0000" for g in groups):
        return None
    gid = {"gid": ":".join(groups), "ipv4": None}
    if groups[:6] == ["0000"] * 5 + ["ffff"]:
        raw = bytes.fromhex(groups[6] + groups[7])
        gid["ipv4"] = ".".join(str(b) for b in raw)
    return gid


def pci_dir(sysfs_root, name):
    """The PCI function directory behind RDMA device ``name``, or None (a software device such as rxe)."""
    base = os.path.join(sysfs_root, "class", "infiniband", name)
    for candidate in (os.path.join(base, "device"), os.path.dirname(os.path.dirname(os.path.realpath(base)))):
        real = os.path.realpath(candidate)
        if _PCI_ADDRESS.match(os.path.basename(real)) and os.path.isdir(real):
            return real
    return None


def read_port(port_dir, number):
    """One port: states, rate, link layer, LIDs and the GIDs in use."""
    gids = []
    for entry in _listdir(os.path.join(port_dir, "gids")):
        gid = parse_gid(_read(os.path.join(port_dir, "gids", entry)))
        if gid is None:
            continue
        gid["index"] = parse_int(entry)
        gid["type"] = _read(os.path.join(port_dir, "gid_attrs", "types", entry))
        gid["netdev"] = _read(os.path.join(port_dir, "gid_attrs", "ndevs", entry))
        gids.append(gid)
    rate = _read(os.path.join(port_dir, "rate"))
    return {
        "port": number,
        "state": parse_enum(_read(os.path.join(port_dir, "state"))),
        "phys_state": parse_enum(_read(os.path.join(port_dir, "phys_state"))),
        "rate": rate,
        "rate_gbps": parse_rate(rate),
        "link_layer": _read(os.path.join(port_dir, "link_layer")),
        "lid": parse_int(_read(os.path.join(port_dir, "lid"))),
        "sm_lid": parse_int(_read(os.path.join(port_dir, "sm_lid"))),
        "gids": gids,
    }


def read_netdevs(function_dir):
    """The network interfaces of a PCI function (IPoIB or Ethernet), with the RDMA port each belongs to."""
    found = []
    base = os.path.join(function_dir, "net")
    for name in _listdir(base):
        path = os.path.join(base, name)
        kind = parse_int(_read(os.path.join(path, "type")))
        dev_port = parse_int(_read(os.path.join(path, "dev_port")))
        found.append({
            "name": name,
            "port": (dev_port or 0) + 1,
            "type": NETDEV_TYPES.get(kind, kind),
            "address": _read(os.path.join(path, "address")),
            "operstate": _read(os.path.join(path, "operstate")),
            "mtu": parse_int(_read(os.path.join(path, "mtu"))),
        })
    return found


def read_device(sysfs_root, name):
    """One RDMA device under ``<sysfs_root>/class/infiniband``; any attribute that cannot be read is None."""
    base = os.path.join(sysfs_root, "class", "infiniband", name)
    function = pci_dir(sysfs_root, name)
    ports = []
    for entry in _listdir(os.path.join(base, "ports")):
        number = parse_int(entry)
        if number is not None:
            ports.append(read_port(os.path.join(base, "ports", entry), number))
    vendor = parse_int(_read(os.path.join(function, "vendor"))) if function else None
    device = parse_int(_read(os.path.join(function, "device"))) if function else None
    return {
        "name": name,
        "pci_bus_id": os.path.basename(function) if function else None,
        "numa_node": parse_numa(_read(os.path.join(function, "numa_node"))) if function else None,
        "vendor_id": None if vendor is None else "0x" + format(vendor, "04x"),
        "device_id": None if device is None else "0x" + format(device, "04x"),
        "hca_type": _read(os.path.join(base, "hca_type")),
        "node_type": parse_enum(_read(os.path.join(base, "node_type"))),
        "node_guid": _read(os.path.join(base, "node_guid")),
        "sys_image_guid": _read(os.path.join(base, "sys_image_guid")),
        "fw_ver": _read(os.path.join(base, "fw_ver")),
        "board_id": _read(os.path.join(base, "board_id")),
        "netdevs": read_netdevs(function) if function else [],
        "ports": ports,
    }


def scan_devices(sysfs_root="/sys"):
    """Every RDMA device, by name (mlx5_0, mlx5_1, ..., mlx5_10)."""
    return [read_device(sysfs_root, name) for name in _listdir(os.path.join(sysfs_root, "class", "infiniband"))]


def peermem_loaded(sysfs_root="/sys"):
    """Whether nvidia_peermem (GPUDirect RDMA for the inbox RDMA stack) is loaded."""
    module = os.path.join(sysfs_root, "module", "nvidia_peermem")
    if not os.path.isdir(module):
        return False
    state = _read(os.path.join(module, "initstate"))
    return state is None or state == "live"


def pci_chain(sysfs_root, address):
    """The host bridge and the bridges down to ``address`` (its realpath under /sys/devices), or None when flat."""
    real = os.path.realpath(os.path.join(sysfs_root, "bus", "pci", "devices", address))
    parts = real.split(os.sep)
    for i, part in enumerate(parts):
        if _HOST_BRIDGE.match(part):
            return parts[i:]
    return None


def path_type(chain_a, chain_b, numa_a, numa_b):
    """The nvidia-smi/NCCL path type between two PCI functions from their chains (see pci_chain).

    PIX: at most one PCIe switch between them; PXB: several switches, below the same root port; PHB: through the
    host bridge; NODE: different host bridges on the same NUMA node; SYS: across NUMA nodes. Without a hierarchy
    (a flat tree), NODE or SYS from the NUMA nodes alone.
    """
    if chain_a and chain_b and chain_a[0] == chain_b[0]:
        bridges_a, bridges_b = chain_a[1:-1], chain_b[1:-1]
        common = 0
        while common < min(len(bridges_a), len(bridges_b)) and bridges_a[common] == bridges_b[common]:
            common += 1
        if common == 0:
            return "PHB"
        if len(bridges_a) - common <= 1 and len(bridges_b) - common <= 1:
            return "PIX"
        return "PXB"
    return "NODE" if numa_a == numa_b else "SYS"


def gpu_affinity(sysfs_root, devices, gpus):
    """For each GPU, the path type to every RDMA device on the PCI bus and the nearest ones."""
    hcas = [(d["name"], pci_chain(sysfs_root, d["pci_bus_id"]), d["numa_node"]) for d in devices if d["pci_bus_id"]]
    affinity = []
    for gpu in gpus:
        chain = pci_chain(sysfs_root, gpu["pci_bus_id"])
        paths = {name: path_type(chain, hca_chain, gpu["numa_node"], numa) for name, hca_chain, numa in hcas}
        best = min(paths.values(), key=PATH_LEVELS.get) if paths else None
        affinity.append({
            "pci_bus_id": gpu["pci_bus_id"],
            "numa_node": gpu["numa_node"],
            "closest": [name for name, _hca_chain, _numa in hcas if paths[name] == best],
            "path": best,
            "paths": paths,
        })
    return affinity


def collect(sysfs_root="/sys"):
    """The facts ib_facts sets under ``ansible_facts.infiniband``."""
    devices = scan_devices(sysfs_root)
    gpus = [d for d in _pci.scan(sysfs_root) if d["kind"] == "gpu"]
    ports = [p for d in devices for p in d["ports"]]
    active = [p for p in ports if p["state"] == "ACTIVE"]
    active_hcas = [d["name"] for d in devices if any(p["state"] == "ACTIVE" for p in d["ports"])]
    return {
        "devices": devices,
        "peermem_loaded": peermem_loaded(sysfs_root),
        "gpu_affinity": gpu_affinity(sysfs_root, devices, gpus),
        "active_hcas": active_hcas,
        "summary": {
            "devices": len(devices),
            "ports": len(ports),
            "active_ports": len(active),
            "active_infiniband_ports": len([p for p in active if p["link_layer"] == "InfiniBand"]),
            "active_ethernet_ports": len([p for p in active if p["link_layer"] == "Ethernet"]),
            "active_hcas": len(active_hcas),
            "gpus": len(gpus),
        },
    }
