from __future__ import annotations

import os

import pytest

from ansible_collections.accelops.gpu.plugins.module_utils import _pci


@pytest.mark.parametrize("device_id, arch", [
    (0x1DB1, "volta"),  # V100 SXM2 16GB
    (0x1DB5, "volta"),  # V100 SXM2 32GB
    (0x1EB8, "turing"),  # T4
    (0x2182, "turing"),  # TU116
    (0x20B0, "ampere"),  # A100 SXM4 40GB
    (0x20B2, "ampere"),  # A100 SXM4 80GB
    (0x2236, "ampere"),  # A10
    (0x15F8, "pascal"),  # P100 PCIe 16GB
    (0x1B38, "pascal"),  # P40
    (0x2330, "hopper"),  # H100 SXM5 80GB
    (0x2335, "hopper"),  # H200
    (0x2342, "hopper"),  # GH200
    (0x26B9, "ada"),  # L40S
    (0x27B8, "ada"),  # L4
    (0x2901, "blackwell"),  # B200
    (0x2B85, "blackwell"),  # RTX 5090
    (0x102D, "kepler"),  # K80
    (0x13F2, "maxwell"),  # M60
    (0x0A20, None),  # Tesla-era GT216: older than anything the drivers here support
])
def test_architecture_from_device_id(device_id, arch):
    assert _pci.architecture_from_device_id(device_id) == arch


@pytest.mark.parametrize("arch, support", [
    ("pascal", "unsupported"), ("volta", "unsupported"), ("turing", "supported"), ("ampere", "supported"),
    ("hopper", "supported"), ("blackwell", "required"), ("unknown", None), (None, None),
])
def test_open_module_support(arch, support):
    assert _pci.open_module_support(arch) == support


@pytest.mark.parametrize("pci_class, kind", [
    (0x030200, "gpu"), (0x030000, "gpu"), (0x068000, "nvswitch"), (0x040300, "audio"), (0x0C0330, "usb"),
    (0x020700, "other"),
])
def test_device_kind(pci_class, kind):
    assert _pci.device_kind(pci_class) == kind


def _device(root, address, vendor, device, pci_class, *, numa="0", driver=None):
    path = root / "bus" / "pci" / "devices" / address
    path.mkdir(parents=True)
    (path / "vendor").write_text("0x%04x\n" % vendor)
    (path / "device").write_text("0x%04x\n" % device)
    (path / "class").write_text("0x%06x\n" % pci_class)
    (path / "numa_node").write_text(numa + "\n")
    if driver:
        target = root / "bus" / "pci" / "drivers" / driver
        target.mkdir(parents=True, exist_ok=True)
        os.symlink(target, path / "driver")


def test_scan_lists_only_nvidia_functions_sorted(tmp_path):
    _device(tmp_path, "0000:db:00.0", 0x10DE, 0x2330, 0x030200, numa="1", driver="nvidia")
    _device(tmp_path, "0000:18:00.0", 0x10DE, 0x2330, 0x030200)
    _device(tmp_path, "0000:05:00.0", 0x10DE, 0x22A3, 0x068000, numa="-1")
    _device(tmp_path, "0000:00:1f.0", 0x8086, 0x1234, 0x060100)
    devices = _pci.scan(str(tmp_path))
    assert [d["pci_bus_id"] for d in devices] == ["0000:05:00.0", "0000:18:00.0", "0000:db:00.0"]
    switch, gpu, bound = devices
    assert switch["kind"] == "nvswitch" and switch["architecture"] is None and switch["numa_node"] is None
    assert gpu == {
        "pci_bus_id": "0000:18:00.0", "vendor_id": "0x10de", "device_id": "0x2330", "class": "0x030200",
        "kind": "gpu", "architecture": "hopper", "open_kernel_modules": "supported", "driver": None, "numa_node": 0,
    }
    assert bound["driver"] == "nvidia" and bound["numa_node"] == 1


def test_scan_of_a_missing_tree_is_empty(tmp_path):
    assert _pci.scan(str(tmp_path / "nothing")) == []


def test_a_strict_scan_of_an_unreadable_bus_raises(tmp_path):
    (tmp_path / "bus" / "pci").mkdir(parents=True)
    (tmp_path / "bus" / "pci" / "devices").write_text("not a directory")
    with pytest.raises(OSError):
        _pci.scan(str(tmp_path), strict=True)
    (tmp_path / "bus" / "pci" / "devices").unlink()
    (tmp_path / "bus" / "pci" / "devices").mkdir()
    assert _pci.scan(str(tmp_path), strict=True) == []  # an empty bus is an answer


def test_pci_scan_survives_a_fifo_bad_bytes_and_non_ascii_digits(tmp_path):
    base = tmp_path / "bus" / "pci" / "devices"
    good, bad = base / "0000:18:00.0", base / "0000:19:00.0"
    for device in (good, bad):
        device.mkdir(parents=True)
        (device / "vendor").write_text("0x10de\n")
        (device / "class").write_text("0x030200\n")
    (good / "device").write_text("0x2330\n")
    (good / "numa_node").write_text("٣\n")  # an Arabic-Indic three is no NUMA node
    os.mkfifo(bad / "device")
    (bad / "numa_node").write_bytes(b"\xff1\n")
    devices = _pci.scan(str(tmp_path))
    assert [(d["pci_bus_id"], d["device_id"], d["numa_node"]) for d in devices] == [
        ("0000:18:00.0", "0x2330", None), ("0000:19:00.0", None, None)]


def test_an_unreadable_class_is_unknown_not_other(tmp_path):
    """A GPU whose class cannot be read must not drop out of the GPUs as "other"."""
    device = tmp_path / "bus" / "pci" / "devices" / "0000:18:00.0"
    device.mkdir(parents=True)
    (device / "vendor").write_text("0x10de\n")
    (device / "device").write_text("0x2330\n")
    (device / "class").mkdir()  # a directory where the attribute should be: unreadable
    found = _pci.scan(str(tmp_path))
    assert [(d["kind"], d["class"], d["architecture"]) for d in found] == [("unknown", None, "hopper")]
