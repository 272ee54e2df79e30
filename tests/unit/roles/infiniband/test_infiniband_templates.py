"""infiniband's IPoIB files for systemd-networkd, netplan and NetworkManager, its other templates, and the variables
it resolves per distribution, rendered by Ansible's own templating (netplan, NetworkManager and DOCA cannot run in
the test containers)."""

from __future__ import annotations

import configparser

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from simnode import ROOT

ROLE = ROOT / "roles" / "infiniband"
DGX = [{"interface": "ibp24s0", "address": "10.10.0.11/16", "mtu": 2044, "mode": "datagram"},
       {"interface": "ibp64s0", "address": "fd00:10:11::11/64", "mode": "connected"}]


def role_vars(facts, os_file=None, **overrides):
    loader = DataLoader()
    variables = {}
    files = ["defaults/main.yml", "vars/main.yml"] + (["vars/%s.yml" % os_file] if os_file else [])
    for part in files:  # loaded as Ansible loads role files: their strings are templates
        variables.update(loader.load_from_file(str(ROLE / part), trusted_as_template=True))
    variables.update(overrides)
    variables["ansible_facts"] = facts
    variables["ansible_managed"] = "Ansible managed"
    return Templar(loader=loader, variables=variables)


def render(name, **variables):
    templar = role_vars({}, **variables)
    return str(templar.template(trust_as_template((ROLE / "templates" / name).read_text())))


def resolve(templar, name):
    return str(templar.template(trust_as_template("{{ %s }}" % name))).strip()


@pytest.mark.parametrize("iface, expected", [
    (DGX[0], ["Name=ibp24s0", "MTUBytes=2044", "Address=10.10.0.11/16", "Mode=datagram"]),
    (DGX[1], ["Name=ibp64s0", "MTUBytes=65520", "Address=fd00:10:11::11/64", "Mode=connected"]),
    ({"interface": "ib0", "address": "192.168.0.1/24"}, ["MTUBytes=2044", "Mode=datagram"]),
])
def test_networkd_file(iface, expected):
    text = render("ipoib.network.j2", __infiniband_iface=iface)
    assert text.startswith("#")
    parser = configparser.ConfigParser()
    parser.optionxform = str
    parser.read_string(text)
    assert parser.sections() == ["Match", "Link", "Network", "IPoIB"]
    flat = ["%s=%s" % item for section in parser.sections() for item in parser[section].items()]
    for line in expected:
        assert line in flat


def test_netplan_file():
    text = render("ipoib-netplan.yaml.j2", infiniband_ipoib_interfaces=DGX)
    assert text.startswith("#")
    assert yaml.safe_load(text) == {"network": {"version": 2, "ethernets": {
        "ibp24s0": {"addresses": ["10.10.0.11/16"], "mtu": 2044, "infiniband-mode": "datagram"},
        "ibp64s0": {"addresses": ["fd00:10:11::11/64"], "mtu": 65520, "infiniband-mode": "connected"},
    }}}


@pytest.mark.parametrize("iface, ipv4, ipv6", [
    (DGX[0], {"method": "manual", "address1": "10.10.0.11/16"}, {"method": "disabled"}),
    (DGX[1], {"method": "disabled"}, {"method": "manual", "address1": "fd00:10:11::11/64"}),
])
def test_networkmanager_keyfile(iface, ipv4, ipv6):
    text = render("ipoib.nmconnection.j2", __infiniband_iface=iface)
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(text)
    connection = dict(parser["connection"])
    assert connection["type"] == "infiniband" and connection["interface-name"] == iface["interface"]
    assert connection["id"] == "accelops-" + iface["interface"]
    assert len(connection["uuid"]) == 36
    assert dict(parser["infiniband"]) == {"mtu": str(iface.get("mtu", 65520)), "transport-mode": iface["mode"]}
    assert dict(parser["ipv4"]) == ipv4 and dict(parser["ipv6"]) == ipv6
    # The same interface keeps its connection's uuid from run to run.
    assert text == render("ipoib.nmconnection.j2", __infiniband_iface=iface)


def test_limits_and_systemd_dropin():
    limits = render("memlock-limits.conf.j2", infiniband_memlock_users=["*", "@rdma"])
    assert limits.startswith("#")
    assert [line for line in limits.splitlines() if not line.startswith("#")] == [
        "* soft memlock unlimited", "* hard memlock unlimited",
        "@rdma soft memlock unlimited", "@rdma hard memlock unlimited"]
    assert "[Manager]\nDefaultLimitMEMLOCK=infinity\n" in render("systemd-memlock.conf.j2")


def test_modules_and_nccl_conf():
    modules = render("modules-load.conf.j2", __infiniband_modules=["ib_umad", "ib_ipoib", "rdma_ucm", "nvidia_peermem"])
    assert [line for line in modules.splitlines() if not line.startswith("#")] == [
        "ib_umad", "ib_ipoib", "rdma_ucm", "nvidia_peermem"]
    nccl = render("nccl.conf.j2", __infiniband_nccl={"NCCL_NET_GDR_LEVEL": "PIX", "NCCL_IB_HCA": "=mlx5_0:1"})
    assert [line for line in nccl.splitlines() if not line.startswith("#")] == [
        "NCCL_IB_HCA==mlx5_0:1", "NCCL_NET_GDR_LEVEL=PIX"]


@pytest.mark.parametrize("os_file, distribution, version, backend, doca_dir", [
    ("Debian", "Debian", "12.11", "networkd", "debian12.11/x86_64"),
    ("Ubuntu", "Ubuntu", "22.04", "netplan", "ubuntu22.04/x86_64"),
    ("RedHat", "Rocky", "9.4", "networkmanager", "rhel9.4/x86_64"),
])
def test_per_distribution(os_file, distribution, version, backend, doca_dir):
    facts = {"distribution": distribution, "distribution_version": version, "architecture": "x86_64"}
    templar = role_vars(facts, os_file)
    assert resolve(templar, "__infiniband_backend") == backend
    assert resolve(templar, "__infiniband_doca_dir") == doca_dir
    assert resolve(templar, "__infiniband_doca_url") == (
        "https://linux.mellanox.com/public/repo/doca/2.9.1/%s/" % doca_dir)
    assert resolve(templar, "__infiniband_doca_key") == "https://linux.mellanox.com/public/repo/doca/GPG-KEY-Mellanox.pub"


def test_doca_mirror_and_overrides():
    facts = {"distribution": "Ubuntu", "distribution_version": "24.04", "architecture": "aarch64"}
    templar = role_vars(facts, "Ubuntu", infiniband_doca_base_url="https://mirror.example/doca/",
                        infiniband_doca_version="3.2.1", infiniband_doca_key_fingerprint="ab12 " * 10,
                        infiniband_network_backend="networkd")
    assert resolve(templar, "__infiniband_doca_url") == "https://mirror.example/doca/3.2.1/ubuntu24.04/arm64-sbsa/"
    assert resolve(templar, "__infiniband_doca_key") == "https://mirror.example/doca/GPG-KEY-Mellanox.pub"
    assert resolve(templar, "__infiniband_doca_fingerprint") == "AB12" * 10
    assert resolve(templar, "__infiniband_backend") == "networkd"


def test_doca_defaults_are_https():
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    assert defaults["infiniband_doca_base_url"].startswith("https://")
    assert defaults["infiniband_stack"] == "inbox"
