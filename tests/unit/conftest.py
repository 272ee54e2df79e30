"""Shared fixtures: the collection importable as ansible_collections.accelops.gpu, and the fake NVML library."""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COLLECTIONS = ROOT / "build" / "collections"
FIXTURES = ROOT / "tests" / "sim" / "fixtures"
FAKENVML_DIR = ROOT / "build" / "fakenvml"
FAKENVML = FAKENVML_DIR / "libnvidia-ml.so.1"


def _expose_collection():
    link = COLLECTIONS / "ansible_collections" / "accelops" / "gpu"
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(ROOT, target_is_directory=True)
    if str(COLLECTIONS) not in sys.path:
        sys.path.insert(0, str(COLLECTIONS))


_expose_collection()


def build_fake_nvml():
    subprocess.run([str(ROOT / "tests" / "sim" / "fakenvml" / "build.sh"), str(FAKENVML_DIR)], check=True)
    return FAKENVML


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


def read_fixture(path):
    """The fixture as a dict of key -> value (the same key=value format the library reads)."""
    values = {}
    for line in Path(path).read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    return values


def run_module(module, args):
    """Drive a module's main() with ansible-core's way of setting module args; return the parsed result."""
    from ansible.module_utils.testing import patch_module_args

    with patch_module_args(args), pytest.raises(SystemExit) as exit_info:
        module.main()
    return exit_info.value.code


@pytest.fixture
def module_result(capsys):
    """Call as module_result(module, args) -> (rc, result dict) for a module's main()."""

    def call(module, args):
        rc = run_module(module, args)
        out = capsys.readouterr().out
        return rc, json.loads(out)

    return call


def ansible_env(**extra):
    env = dict(os.environ)
    env.update(ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS), ANSIBLE_HOME=str(ROOT / ".ansible"), ANSIBLE_NOCOLOR="1")
    env.update(extra)
    return env
