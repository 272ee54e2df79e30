"""sysfs reads that can neither block nor crash."""

from __future__ import annotations

import os
import threading

import pytest

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
