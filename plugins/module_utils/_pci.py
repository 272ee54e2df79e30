# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: NVIDIA devices on the PCI bus, read from sysfs without any driver."""

from __future__ import annotations

import os

from ansible_collections.accelops.gpu.plugins.module_utils._numbers import decimal, decimal_or_hex
from ansible_collections.accelops.gpu.plugins.module_utils._sysfs import read_attribute

NVIDIA_VENDOR_ID = 0x10DE

# PCI device-id ranges of NVIDIA GPU dies, per architecture, from the PCI ID repository (pci.ids) entries
# for each die (e.g. GH100 0x2300-0x237F: H100 SXM5 0x2330, H200 0x2335, GH200 0x2342).
DEVICE_ID_RANGES = (
    (0x0FC0, 0x12FF, "kepler"),  # GK107, GK110, GK104, GK106, GK208
    (0x1340, 0x17FF, "maxwell"),  # GM108, GM107, GM204, GM206, GM200
    (0x15F0, 0x15FF, "pascal"),  # GP100 (inside the Maxwell block; listed later so it wins)
    (0x1B00, 0x1D7F, "pascal"),  # GP102, GP104, GP106, GP107, GP108
    (0x1D80, 0x1DFF, "volta"),  # GV100: V100, V100S, Titan V
    (0x1E00, 0x1FFF, "turing"),  # TU102, TU104 (T4 0x1EB8), TU106, TU117
    (0x2080, 0x20FF, "ampere"),  # GA100: A100, A30, A800
    (0x2180, 0x21FF, "turing"),  # TU116
    (0x2200, 0x25FF, "ampere"),  # GA102 (A40, A10), GA103, GA104, GA106, GA107 (A2)
    (0x2300, 0x237F, "hopper"),  # GH100 (H100, H200, H800), GH200
    (0x2680, 0x28FF, "ada"),  # AD102 (L40, L40S), AD103, AD104 (L4), AD106, AD107
    (0x2900, 0x29FF, "blackwell"),  # GB100/GB102 (B200, GB200)
    (0x2B00, 0x2FFF, "blackwell"),  # GB202, GB203, GB205, GB206, GB207, GB10
)

ARCH_ORDER = ("kepler", "maxwell", "pascal", "volta", "turing", "ampere", "ada", "hopper", "blackwell")

# NVIDIA's open GPU kernel modules run on Turing and newer; Blackwell is supported by the open modules only.
OPEN_MODULE_MIN_ARCH = "turing"
OPEN_MODULE_ONLY_FROM = "blackwell"


def architecture_from_device_id(device_id):
    """Return the architecture name for an NVIDIA PCI device id (int), or None when it is not a known GPU die."""
    found = None
    for low, high, arch in DEVICE_ID_RANGES:
        if low <= device_id <= high:
            found = arch
    return found


def open_module_support(architecture):
    """``required``, ``supported`` or ``unsupported`` for NVIDIA's open kernel modules; None when unknown."""
    if architecture not in ARCH_ORDER:
        return None
    rank = ARCH_ORDER.index(architecture)
    if rank >= ARCH_ORDER.index(OPEN_MODULE_ONLY_FROM):
        return "required"
    if rank >= ARCH_ORDER.index(OPEN_MODULE_MIN_ARCH):
        return "supported"
    return "unsupported"


def device_kind(pci_class):
    """Classify an NVIDIA PCI function by its class code (int, 24 bits); None (unreadable) is ``unknown``."""
    if pci_class is None:
        return "unknown"
    base, sub = pci_class >> 16, (pci_class >> 8) & 0xFF
    if base == 0x03:
        return "gpu"  # VGA (0x0300) or 3D controller (0x0302)
    if base == 0x06 and sub == 0x80:
        return "nvswitch"  # NVSwitch presents itself as an "other" bridge
    if base == 0x04:
        return "audio"
    if base == 0x0C:
        return "usb"
    return "other"


def _read(path):
    return read_attribute(path)


def _read_hex(path):
    """A sysfs hex number (``0x10de``); None for anything else."""
    value = _read(path)
    if not value:
        return None
    return decimal_or_hex(value if value.lower().startswith("0x") else "0x" + value)


def numa_node(text):
    """sysfs ``numa_node`` (-1 when the platform has none) as an int, or None."""
    value = decimal(text or "", negative=True)
    return value if value is not None and value >= 0 else None


def scan(sysfs_root="/sys", strict=False):
    """Every NVIDIA PCI function under ``<sysfs_root>/bus/pci/devices``, sorted by address. A tree without that
    directory has no devices, unless strict: then the OSError of listing it is raised (nobody can tell what is on the
    bus)."""
    base = os.path.join(sysfs_root, "bus", "pci", "devices")
    try:
        addresses = sorted(os.listdir(base))
    except OSError:
        if strict:
            raise
        return []
    devices = []
    for address in addresses:
        path = os.path.join(base, address)
        if _read_hex(os.path.join(path, "vendor")) != NVIDIA_VENDOR_ID:
            continue
        device_id = _read_hex(os.path.join(path, "device"))
        # An unreadable class is not "other": the function may well be a GPU.
        pci_class = _read_hex(os.path.join(path, "class"))
        kind = device_kind(pci_class)
        # A function of unknown class may be a GPU: its device id still names the die.
        arch = (architecture_from_device_id(device_id) if kind in ("gpu", "unknown") and device_id is not None
                else None)
        driver_link = os.path.join(path, "driver")
        numa = _read(os.path.join(path, "numa_node"))
        devices.append({
            "pci_bus_id": address,
            "vendor_id": "0x%04x" % NVIDIA_VENDOR_ID,
            "device_id": "0x%04x" % device_id if device_id is not None else None,
            "class": "0x%06x" % pci_class if pci_class is not None else None,
            "kind": kind,
            "architecture": arch,
            "open_kernel_modules": open_module_support(arch) if arch else None,
            "driver": os.path.basename(os.path.realpath(driver_link)) if os.path.exists(driver_link) else None,
            "numa_node": numa_node(numa),
        })
    return devices
