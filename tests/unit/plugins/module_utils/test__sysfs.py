"""sysfs reads that can neither block nor crash, and numbers in ASCII digits only."""

from __future__ import annotations

import os
import threading

import pytest

from ansible_collections.accelops.gpu.plugins.module_utils import _ib, _numbers, _pci
from ansible_collections.accelops.gpu.plugins.module_utils._sysfs import MAX_ATTRIBUTE_BYTES, read_attribute


def test_a_fifo_where_an_attribute_should_be_is_not_waited_on(tmp_path):
    fifo = tmp_path / "vendor"
    os.mkfifo(fifo)
    result = []
    reader = threading.Thread(target=lambda: result.append(read_attribute(str(fifo))), daemon=True)
    reader.start()
    reader.join(5)
    assert not reader.is_alive() and result == [None]


def test_bad_bytes_are_replaced_and_size_is_bounded(tmp_path):
    (tmp_path / "a").write_bytes(b"0x10de\xff\xfe\n")
    assert read_attribute(str(tmp_path / "a")) == "0x10de\ufffd\ufffd"
    (tmp_path / "big").write_bytes(b"1" * (MAX_ATTRIBUTE_BYTES * 4))
    assert len(read_attribute(str(tmp_path / "big"))) == MAX_ATTRIBUTE_BYTES


@pytest.mark.parametrize("path", ["/no/such/file", "/tmp", "/tmp/a\x00b", None])
def test_missing_directories_nul_bytes_read_as_none(path):
    assert read_attribute(path) is None


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


@pytest.mark.parametrize("text, value", [
    ("0x1a", 26), ("26", 26), ("-1", None), ("³", None), ("٣", None), ("1" * 5000, None), ("0x" + "f" * 17, None),
    (" 7 ", 7), ("", None), ("7\n", 7),
])
def test_ib_numbers_take_ascii_digits_only(text, value):
    assert _ib.parse_int(text) == value


@pytest.mark.parametrize("value, expected", [
    (3, 3), ("3", 3), (True, None), ("³", None), ("٣", None), ("3\n", None), (" 3", None), (-1, None),
    (2 ** 64, None), (3.0, None), ("9" * 21, None),
])
def test_whole_numbers(value, expected):
    assert _numbers.whole(value) == expected
    assert _numbers.whole(10 ** 5000) is None


def test_shown_never_fails_on_a_huge_integer():
    assert _numbers.shown(10 ** 5000) == "an integer of 16610 bits"
    assert _numbers.shown("x" * 200).endswith("...") and len(_numbers.shown("x" * 200)) == 80
