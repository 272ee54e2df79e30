"""Shared fixtures: the collection importable as ansible_collections.accelops.gpu, and the fake NVML library."""

from __future__ import annotations

import ctypes
import json
import shutil

import pytest

from simnode import FIXTURES, build_fake_nvml, expose_collection

expose_collection()


@pytest.fixture(scope="session")
def fake_nvml_lib():
    """Build the fake libnvidia-ml.so.1 and load it, so pynvml's CDLL("libnvidia-ml.so.1") finds it by soname."""
    path = build_fake_nvml()
    ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
    return path


@pytest.fixture
def nvml_fixture(fake_nvml_lib, tmp_path, monkeypatch):
    """Install a named fixture (a tmp copy, so setters cannot touch the committed file); returns its path."""

    def install(name):
        target = tmp_path / ("%s.conf" % name)
        shutil.copyfile(FIXTURES / ("%s.conf" % name), target)
        monkeypatch.setenv("FAKE_NVML_FIXTURE", str(target))
        return target

    return install


@pytest.fixture
def module_result(capsys):
    """Call as module_result(module, args) -> (rc, result dict): drives a module's main() the ansible-core 2.19 way."""
    from ansible.module_utils.testing import patch_module_args

    def call(module, args):
        with patch_module_args(args), pytest.raises(SystemExit) as exit_info:
            module.main()
        return exit_info.value.code, json.loads(capsys.readouterr().out)

    return call
