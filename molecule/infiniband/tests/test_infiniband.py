"""What converge left on the simulated DGX H100 node, and the refused runs (molecule/infiniband/refusals.yml)."""

from __future__ import annotations

import os
import subprocess

import pytest

COMPUTE_HCAS = ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"]


def settings(host, path):
    """key=value lines of a file, comments left out."""
    lines = host.file(path).content_string.splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))


@pytest.mark.parametrize("package", ["rdma-core", "ibverbs-utils", "libibverbs1", "infiniband-diags", "perftest",
                                     "ibverbs-providers"])
def test_inbox_stack_installed(host, package):
    assert host.package(package).is_installed


def test_no_doca_packages(host):
    listed = host.check_output("dpkg-query -W -f='${Package}\\n'").split()
    assert not [p for p in listed if p.startswith(("doca-", "mlnx-", "ofed-"))]


def test_ib_write_bw_available(host):
    assert host.exists("ib_write_bw")


def test_modules_load_at_boot(host):
    conf = host.file("/etc/modules-load.d/infiniband.conf")
    assert conf.mode == 0o644 and conf.user == "root"
    modules = [line for line in conf.content_string.splitlines() if line and not line.startswith("#")]
    # nvidia_peermem because the simulated node has GPUs and reports the module loaded (mkfabric --peermem).
    assert modules == ["ib_umad", "ib_ipoib", "rdma_ucm", "nvidia_peermem"]


def test_memlock_limits(host):
    limits = host.file("/etc/security/limits.d/90-infiniband-memlock.conf").content_string
    assert "* soft memlock unlimited" in limits and "* hard memlock unlimited" in limits


def test_memlock_for_services(host):
    dropin = host.file("/etc/systemd/system.conf.d/90-infiniband-memlock.conf").content_string
    assert "[Manager]\nDefaultLimitMEMLOCK=infinity" in dropin
    # The handler re-executed systemd, so the manager uses it now.
    assert host.check_output("systemctl show -p DefaultLimitMEMLOCK") == "DefaultLimitMEMLOCK=infinity"


@pytest.mark.parametrize("name, address, mtu, mode", [
    ("ibp24s0", "10.10.0.11/16", "2044", "datagram"),
    ("ibp64s0", "fd00:10:11::11/64", "65520", "connected"),
])
def test_networkd_files(host, name, address, mtu, mode):
    network = host.file("/etc/systemd/network/50-accelops-%s.network" % name)
    assert network.mode == 0o644
    text = network.content_string
    for line in ("Name=" + name, "MTUBytes=" + mtu, "Address=" + address, "Mode=" + mode):
        assert line in text.splitlines(), line
    assert "[IPoIB]" in text


def test_network_services_left_alone_in_a_container(host):
    assert not host.service("systemd-networkd").is_running


def test_nccl_conf(host):
    assert host.file("/etc/nccl.conf").mode == 0o644
    assert settings(host, "/etc/nccl.conf") == {
        "NCCL_IB_HCA": "=" + ",".join(h + ":1" for h in COMPUTE_HCAS),  # the storage ports are Ethernet
        "NCCL_SOCKET_IFNAME": "=ibp24s0,ibp64s0",
        "NCCL_NET_GDR_LEVEL": "PIX",  # every H100 shares a PCIe switch with its ConnectX-7
        "NCCL_DEBUG": "WARN",  # infiniband_nccl_env
    }


def test_no_opensm(host):
    assert not host.package("opensm").is_installed


def test_refusals_change_nothing():
    """Bad variables and a stack switch are refused with the variable named, and the node stays as it was."""
    scenario = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    result = subprocess.run(
        ["ansible-playbook", "-i", os.environ["MOLECULE_INVENTORY_FILE"], os.path.join(scenario, "refusals.yml")],
        capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert "failed=0" in result.stdout and "ok=" in result.stdout
