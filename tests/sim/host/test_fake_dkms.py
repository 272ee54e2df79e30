"""The dkms stand-in of simulated nodes (tests/sim/host/fake-dkms.py): its tree, its answers and its errors."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

DKMS = Path(__file__).resolve().parent / "fake-dkms.py"
RUNNING = os.uname().release


@pytest.fixture
def node(tmp_path):
    """A node with two kernels: 6.1.0-901-amd64 with its headers, 6.1.0-902-amd64 without."""
    modules = tmp_path / "modules"
    (tmp_path / "headers").mkdir()
    (modules / "6.1.0-901-amd64").mkdir(parents=True)
    (modules / "6.1.0-901-amd64" / "build").symlink_to(tmp_path / "headers")
    (modules / "6.1.0-902-amd64").mkdir()
    env = dict(os.environ, ACCELOPS_SIM_DKMS_TREE=str(tmp_path / "dkms"), ACCELOPS_SIM_MODULES=str(modules),
               ACCELOPS_SIM_DKMS_FAIL=str(tmp_path / "dkms-fail"))

    def dkms(*args, code=0):
        result = subprocess.run([sys.executable, str(DKMS), *args], env=env, capture_output=True, text=True,
                                check=False)
        assert result.returncode == code, result.stdout + result.stderr
        return result

    dkms.root = tmp_path
    return dkms


def test_a_module_is_installed_for_a_kernel_with_headers(node):
    # DKMS keeps its module signing key in the tree too.
    (node.root / "dkms").mkdir()
    (node.root / "dkms" / "mok.key").write_text("key", encoding="utf-8")
    node("add", "-m", "nvidia-current-open", "-v", "550.54.15")
    assert node("status").stdout == "nvidia-current-open/550.54.15: added\n"
    node("install", "nvidia-current-open/550.54.15", "-k", "6.1.0-901-amd64")
    assert node("status", "-m", "nvidia-current-open").stdout == (
        "nvidia-current-open/550.54.15, 6.1.0-901-amd64, x86_64: installed\n")
    assert (node.root / "modules/6.1.0-901-amd64/updates/dkms/nvidia.ko").is_file()


def test_a_kernel_without_headers_is_refused_by_name(node):
    node("add", "nvidia-current-open/550.54.15")
    error = node("install", "-m", "nvidia-current-open", "-v", "550.54.15", "-k", "6.1.0-902-amd64", code=21).stderr
    assert "Your kernel headers for kernel 6.1.0-902-amd64 cannot be found" in error
    assert "linux-headers-6.1.0-902-amd64" in error
    assert node("status", "-k", "6.1.0-902-amd64").stdout == ""


def test_a_listed_kernel_fails_to_build(node):
    (node.root / "dkms-fail").write_text("6.1.0-901-amd64\n", encoding="utf-8")
    node("add", "nvidia-current/550.54.15")
    error = node("build", "nvidia-current/550.54.15", "-k", "6.1.0-901-amd64", code=10).stderr
    assert "Bad return status for module build on kernel: 6.1.0-901-amd64 (x86_64)" in error


def test_build_without_install_says_built(node):
    node("add", "nvidia-current/550.54.15")
    node("build", "nvidia-current/550.54.15", "-k", "6.1.0-901-amd64")
    assert node("status").stdout == "nvidia-current/550.54.15, 6.1.0-901-amd64, x86_64: built\n"


def test_autoinstall_builds_every_added_module_for_a_kernel(node):
    node("add", "nvidia-current/550.54.15")
    node("autoinstall", "-k", "6.1.0-901-amd64")
    assert "6.1.0-901-amd64, x86_64: installed" in node("status").stdout


def test_autoinstall_takes_the_newest_version(node):
    node("add", "nvidia-current/550.54.15")
    node("add", "nvidia-current/550.127.08")
    node("autoinstall", "-k", "6.1.0-901-amd64")
    assert "nvidia-current/550.127.08, 6.1.0-901-amd64, x86_64: installed" in node("status").stdout


def test_remove_all_forgets_the_module_and_its_builds(node):
    node("add", "nvidia-current/550.54.15")
    node("install", "nvidia-current/550.54.15", "-k", "6.1.0-901-amd64")
    node("remove", "nvidia-current/550.54.15", "--all")
    assert node("status").stdout == ""
    assert not (node.root / "modules/6.1.0-901-amd64/updates/dkms/nvidia.ko").exists()


def test_remove_for_one_kernel_keeps_the_source(node):
    node("add", "nvidia-current/550.54.15")
    node("install", "nvidia-current/550.54.15", "-k", "6.1.0-901-amd64")
    node("remove", "nvidia-current/550.54.15", "-k", "6.1.0-901-amd64")
    assert node("status").stdout == "nvidia-current/550.54.15: added\n"


def test_a_module_never_added_cannot_be_built(node):
    error = node("install", "nvidia/1.0", "-k", "6.1.0-901-amd64", code=1).stderr
    assert "/usr/src/nvidia-1.0 does not exist" in error


def test_the_running_kernel_is_the_default(node):
    node("add", "nvidia/1.0")
    error = node("install", "nvidia/1.0", code=21).stderr
    assert "kernel %s cannot be found" % RUNNING in error
