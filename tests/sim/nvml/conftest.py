"""Fixtures of the fake NVML's ABI tests: the library loaded once, and left uninitialised after every test."""

from __future__ import annotations

import ctypes
import pathlib

import pynvml
import pytest

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(scope="session")
def lib(fake_nvml_lib):
    """The library loaded by path before pynvml loads it by soname.

    LD_LIBRARY_PATH cannot change inside a running process; once an object with the soname
    libnvidia-ml.so.1 is loaded RTLD_GLOBAL, glibc resolves pynvml's CDLL("libnvidia-ml.so.1") to it.
    """
    return ctypes.CDLL(str(fake_nvml_lib), mode=ctypes.RTLD_GLOBAL)


@pytest.fixture(autouse=True)
def _balanced_init(lib):
    """Leave the library uninitialised after every test, whatever the test did."""
    yield
    while lib.nvmlShutdown() == 0:
        pass


@pytest.fixture
def nvml(tmp_path, monkeypatch, lib):
    """Initialise pynvml on a copy of a fixture (a file name in fixtures/) plus extra lines; returns the copy's path."""

    def start(name, *extra_lines):
        path = tmp_path / "nvml.conf"
        path.write_text((FIXTURES / name).read_text() + "".join(line + "\n" for line in extra_lines))
        monkeypatch.setenv("FAKE_NVML_FIXTURE", str(path))
        pynvml.nvmlInit()
        return path

    return start
