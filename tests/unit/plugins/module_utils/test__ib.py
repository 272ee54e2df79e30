"""_ib against the simulated fabrics of tests/sim/host/mkfabric.py: real sysfs layouts, values of the modelled
machines."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ansible_collections.accelops.gpu.plugins.module_utils import _ib
from simnode import ROOT, load_sim_script

mkfabric = load_sim_script("host/mkfabric.py", "mkfabric")

# DGX H100 user guide, network modules table: GPU -> its compute ConnectX-7 (RDMA name, IPoIB name).
DGX_H100_RAILS = [
    ("0000:1b:00.0", "mlx5_0", "ibp24s0"), ("0000:43:00.0", "mlx5_3", "ibp64s0"),
    ("0000:52:00.0", "mlx5_4", "ibp79s0"), ("0000:61:00.0", "mlx5_5", "ibp94s0"),
    ("0000:9d:00.0", "mlx5_6", "ibp154s0"), ("0000:c3:00.0", "mlx5_9", "ibp192s0"),
    ("0000:d1:00.0", "mlx5_10", "ibp206s0"), ("0000:df:00.0", "mlx5_11", "ibp220s0"),
]
COMPUTE = [hca for _gpu, hca, _ifname in DGX_H100_RAILS]
STORAGE = ["mlx5_1", "mlx5_2", "mlx5_7", "mlx5_8"]


@pytest.fixture
def fabric(tmp_path):
    """fabric(profile, flat=False, peermem=False) -> the sysfs root of a freshly built simulated fabric."""

    def build(profile, flat=False, peermem=False):
        root = tmp_path / ("%s%s" % (profile, "-flat" if flat else ""))
        mkfabric.main(profile, str(root), flat=flat, peermem=peermem)
        return str(root)

    return build


def by_name(facts):
    return {d["name"]: d for d in facts["devices"]}


@pytest.mark.parametrize("text, value", [("4: ACTIVE", "ACTIVE"), ("1: DOWN", "DOWN"), ("5: LinkUp", "LinkUp"),
                                         ("2: Polling", "Polling"), ("1: CA", "CA"), ("ACTIVE", "ACTIVE"),
                                         ("", None), (None, None)])
def test_parse_enum(text, value):
    assert _ib.parse_enum(text) == value


@pytest.mark.parametrize("text, gbps", [("400 Gb/sec (4X NDR)", 400), ("200 Gb/sec (4X HDR)", 200),
                                        ("100 Gb/sec (4X EDR)", 100), ("2.5 Gb/sec (1X SDR)", 2.5),
                                        ("56 Gb/sec (4X FDR)", 56), ("fast", None), ("", None), (None, None)])
def test_parse_rate(text, gbps):
    assert _ib.parse_rate(text) == gbps


@pytest.mark.parametrize("text, value", [("0x1a", 26), ("0x0", 0), ("0xffff", 65535), ("7", 7), ("zz", None),
                                         (None, None)])
def test_parse_int(text, value):
    assert _ib.parse_int(text) == value


@pytest.mark.parametrize("text, gid, ipv4", [
    ("fe80:0000:0000:0000:a088:c203:005f:c218", "fe80:0000:0000:0000:a088:c203:005f:c218", None),
    ("0000:0000:0000:0000:0000:ffff:c0a8:640b", "0000:0000:0000:0000:0000:ffff:c0a8:640b", "192.168.100.11"),
    ("0000:0000:0000:0000:0000:ffff:0a82:0115", "0000:0000:0000:0000:0000:ffff:0a82:0115", "10.130.1.21"),
])
def test_parse_gid(text, gid, ipv4):
    assert _ib.parse_gid(text) == {"gid": gid, "ipv4": ipv4}


@pytest.mark.parametrize("text", ["0000:0000:0000:0000:0000:0000:0000:0000", "fe80::1", "", None])
def test_parse_gid_drops_unused_and_unparsable_entries(text):
    assert _ib.parse_gid(text) is None


@pytest.mark.parametrize("a, b, numa, path", [
    # Two ports of one switch: downstream, upstream, downstream.
    (["pci0000:15", "0000:15:01.0", "0000:16:00.0", "0000:17:00.0", "0000:18:00.0"],
     ["pci0000:15", "0000:15:01.0", "0000:16:00.0", "0000:17:03.0", "0000:1b:00.0"], (0, 0), "PIX"),
    # Two functions of one device.
    (["pci0000:28", "0000:28:01.0", "0000:29:00.0"], ["pci0000:28", "0000:28:01.0", "0000:29:00.1"], (0, 0), "PIX"),
    # One side two switches down.
    (["pci0000:40", "0000:40:01.1", "0000:41:00.0", "0000:42:00.0", "0000:43:00.0", "0000:44:00.0", "0000:45:00.0"],
     ["pci0000:40", "0000:40:01.1", "0000:41:00.0", "0000:42:04.0", "0000:4b:00.0"], (0, 0), "PXB"),
    # Two root ports of one host bridge.
    (["pci0000:40", "0000:40:03.1", "0000:4c:00.0"], ["pci0000:40", "0000:40:01.1", "0000:4b:00.0"], (0, 0), "PHB"),
    # Two host bridges.
    (["pci0000:15", "0000:15:01.0", "0000:18:00.0"], ["pci0000:3d", "0000:3d:01.0", "0000:40:00.0"], (0, 0), "NODE"),
    (["pci0000:15", "0000:15:01.0", "0000:18:00.0"], ["pci0000:97", "0000:97:01.0", "0000:9a:00.0"], (0, 1), "SYS"),
    # Flat trees: NUMA nodes only.
    (None, None, (1, 1), "NODE"), (None, None, (0, 1), "SYS"), (None, None, (None, None), "NODE"),
    (None, ["pci0000:15", "0000:15:01.0", "0000:18:00.0"], (0, None), "SYS"),
])
def test_path_type(a, b, numa, path):
    assert _ib.path_type(a, b, *numa) == path
    assert _ib.path_type(b, a, *reversed(numa)) == path


def test_dgx_h100_compute_hcas_are_active_ndr_infiniband(fabric):
    facts = _ib.collect(fabric("dgx-h100"))
    devices = by_name(facts)
    assert list(devices) == ["mlx5_%d" % n for n in range(12)]
    for gpu_address, name, ifname in DGX_H100_RAILS:
        hca = devices[name]
        assert (hca["vendor_id"], hca["device_id"], hca["hca_type"]) == ("0x15b3", "0x1021", "MT4129")
        assert (hca["node_type"], hca["fw_ver"], hca["board_id"]) == ("CA", "28.39.1002", "MT_0000000838")
        assert hca["node_guid"] == hca["sys_image_guid"] and hca["node_guid"].startswith("a088:c203:")
        assert hca["pci_bus_id"] == "0000:%02x:00.0" % int(ifname[3:-2])  # ibp<bus>s0 names the bus in decimal
        assert hca["numa_node"] == (0 if int(gpu_address[5:7], 16) < 0x80 else 1)
        (port,) = hca["ports"]
        assert (port["port"], port["state"], port["phys_state"], port["link_layer"]) == (
            1, "ACTIVE", "LinkUp", "InfiniBand")
        assert (port["rate"], port["rate_gbps"]) == ("400 Gb/sec (4X NDR)", 400)
        assert port["sm_lid"] == 1 and 0 < port["lid"] < 0xC000  # a unicast LID from the subnet manager
        assert [g["gid"] for g in port["gids"]] == ["fe80:0000:0000:0000:" + hca["node_guid"]]
        (netdev,) = hca["netdevs"]
        assert (netdev["name"], netdev["type"], netdev["port"], netdev["operstate"]) == (ifname, "ipoib", 1, "up")
        assert netdev["address"].replace(":", "").endswith(hca["node_guid"].replace(":", ""))
    assert facts["summary"] == {"devices": 12, "ports": 12, "active_ports": 10, "active_infiniband_ports": 8,
                                "active_ethernet_ports": 2, "active_hcas": 10, "gpus": 8}


def test_dgx_h100_storage_ports_are_ethernet_with_port_2_up(fabric):
    facts = _ib.collect(fabric("dgx-h100"))
    devices = by_name(facts)
    assert [devices[n]["ports"][0]["link_layer"] for n in STORAGE] == ["Ethernet"] * 4
    assert [devices[n]["netdevs"][0]["name"] for n in STORAGE] == [
        "enp41s0f0np0", "enp41s0f1np1", "enp170s0f0np0", "enp170s0f1np1"]
    assert [devices[n]["ports"][0]["state"] for n in STORAGE] == ["DOWN", "ACTIVE", "DOWN", "ACTIVE"]
    assert devices["mlx5_1"]["ports"][0]["phys_state"] == "Disabled"
    assert devices["mlx5_2"]["ports"][0]["rate_gbps"] == 100
    assert [(d["pci_bus_id"], d["numa_node"]) for d in (devices[n] for n in STORAGE)] == [
        ("0000:29:00.0", 0), ("0000:29:00.1", 0), ("0000:aa:00.0", 1), ("0000:aa:00.1", 1)]
    assert facts["active_hcas"] == sorted([*COMPUTE, "mlx5_2", "mlx5_8"], key=lambda n: int(n[5:]))


def test_dgx_h100_each_gpu_shares_a_switch_with_its_hca(fabric):
    facts = _ib.collect(fabric("dgx-h100"))
    affinity = facts["gpu_affinity"]
    assert [a["pci_bus_id"] for a in affinity] == [gpu for gpu, _hca, _ifname in DGX_H100_RAILS]
    for entry, (_gpu, name, _ifname) in zip(affinity, DGX_H100_RAILS):
        assert (entry["closest"], entry["path"]) == ([name], "PIX")
        socket = entry["numa_node"]
        for other, path in entry["paths"].items():
            other_socket = by_name(facts)[other]["numa_node"]
            if other != name:
                assert path == ("NODE" if other_socket == socket else "SYS"), (entry["pci_bus_id"], other)
    assert [a["numa_node"] for a in affinity] == [0, 0, 0, 0, 1, 1, 1, 1]


def test_peermem_follows_the_module_directory(fabric):
    assert _ib.collect(fabric("dgx-h100"))["peermem_loaded"] is False
    root = fabric("roce-host", peermem=True)
    assert _ib.peermem_loaded(root) is True
    with open(os.path.join(root, "module", "nvidia_peermem", "initstate"), "w") as handle:
        handle.write("going\n")
    assert _ib.peermem_loaded(root) is False


def test_roce_host_reports_ethernet_and_ipv4_mapped_gids(fabric):
    facts = _ib.collect(fabric("roce-host"))
    devices = by_name(facts)
    assert list(devices) == ["mlx5_0", "mlx5_1"]
    hca = devices["mlx5_0"]
    assert (hca["hca_type"], hca["device_id"], hca["fw_ver"]) == ("MT4125", "0x101d", "22.38.1900")
    (port,) = hca["ports"]
    assert (port["link_layer"], port["state"], port["rate_gbps"]) == ("Ethernet", "ACTIVE", 100)
    assert (port["lid"], port["sm_lid"]) == (0, 0)  # no LIDs and no subnet manager on Ethernet
    assert [(g["index"], g["type"], g["ipv4"]) for g in port["gids"]] == [
        (0, "IB/RoCE v1", None), (1, "RoCE v2", None),
        (2, "IB/RoCE v1", "192.168.100.11"), (3, "RoCE v2", "192.168.100.11")]
    assert port["gids"][0]["gid"] == "fe80:0000:0000:0000:1270:fdff:fe58:3a10"  # EUI-64 of 10:70:fd:58:3a:10
    assert {g["netdev"] for g in port["gids"]} == {"enp75s0f0np0"}
    assert hca["netdevs"][0]["type"] == "ethernet" and hca["netdevs"][0]["address"] == "10:70:fd:58:3a:10"
    assert by_name(facts)["mlx5_1"]["ports"][0]["gids"][3]["ipv4"] == "192.168.101.11"
    assert facts["summary"]["active_infiniband_ports"] == 0 and facts["summary"]["active_ethernet_ports"] == 2


def test_roce_host_paths_through_two_switches_and_the_host_bridge(fabric):
    affinity = _ib.collect(fabric("roce-host"))["gpu_affinity"]
    assert [(a["pci_bus_id"], a["path"], a["closest"]) for a in affinity] == [
        ("0000:45:00.0", "PXB", ["mlx5_0", "mlx5_1"]), ("0000:4c:00.0", "PHB", ["mlx5_0", "mlx5_1"])]


def test_ports_down_are_reported_not_active(fabric):
    facts = _ib.collect(fabric("ports-down"))
    ports = {d["name"]: d["ports"][0] for d in facts["devices"]}
    assert [(p["state"], p["phys_state"]) for p in ports.values()] == [
        ("INIT", "LinkUp"), ("DOWN", "Polling"), ("DOWN", "Disabled")]
    assert ports["mlx5_1"]["rate"] == "10 Gb/sec (4X SDR)"
    assert ports["mlx5_0"]["lid"] == 0  # no subnet manager has assigned one
    assert facts["active_hcas"] == []
    assert facts["summary"]["active_ports"] == 0 and facts["summary"]["ports"] == 3
    assert [d["netdevs"][0]["operstate"] for d in facts["devices"]] == ["down"] * 3
    assert [(a["closest"], a["path"]) for a in facts["gpu_affinity"]] == [(["mlx5_0"], "PIX"), (["mlx5_2"], "PIX")]


def test_no_rdma_gives_empty_lists_and_gpus_without_hcas(fabric):
    facts = _ib.collect(fabric("no-rdma"))
    assert (facts["devices"], facts["active_hcas"], facts["peermem_loaded"]) == ([], [], False)
    assert facts["gpu_affinity"] == [
        {"pci_bus_id": "0000:4a:00.0", "numa_node": 0, "closest": [], "path": None, "paths": {}},
        {"pci_bus_id": "0000:ca:00.0", "numa_node": 1, "closest": [], "path": None, "paths": {}}]
    assert facts["summary"]["devices"] == 0 and facts["summary"]["gpus"] == 2


def test_flat_tree_falls_back_to_numa_nodes(fabric):
    root = fabric("dgx-h100", flat=True)
    assert _ib.pci_chain(root, "0000:1b:00.0") is None
    facts = _ib.collect(root)
    assert facts["active_hcas"] == _ib.collect(fabric("dgx-h100"))["active_hcas"]
    socket0 = ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_4", "mlx5_5"]
    socket1 = ["mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9", "mlx5_10", "mlx5_11"]
    for entry in facts["gpu_affinity"]:
        near, far = (socket0, socket1) if entry["numa_node"] == 0 else (socket1, socket0)
        assert (entry["path"], entry["closest"]) == ("NODE", near)
        assert {entry["paths"][n] for n in far} == {"SYS"}


def test_mksysfs_tree_lists_gpus_without_rdma(tmp_path):
    subprocess.run([sys.executable, str(ROOT / "tests/sim/host/mksysfs.py"),
                    str(ROOT / "tests/sim/nvml/fixtures/dgx-h100.conf"),
                    str(tmp_path / "sys")], check=True, capture_output=True)
    facts = _ib.collect(str(tmp_path / "sys"))
    assert facts["devices"] == [] and len(facts["gpu_affinity"]) == 8  # NVSwitches and the host bridge left out
    assert {a["path"] for a in facts["gpu_affinity"]} == {None}


def test_unreadable_attributes_are_null(fabric):
    root = fabric("dgx-h100")
    dev = os.path.realpath(os.path.join(root, "class", "infiniband", "mlx5_0"))
    os.remove(os.path.join(dev, "fw_ver"))
    port = os.path.join(dev, "ports", "1")
    os.remove(os.path.join(port, "rate"))
    os.mkdir(os.path.join(port, "rate"))  # reading a directory fails, as an attribute the driver refuses does
    with open(os.path.join(port, "lid"), "w") as handle:
        handle.write("garbage\n")
    with open(os.path.join(port, "gids", "0"), "wb") as handle:
        handle.write(b"\xff\xfe\x00")
    os.remove(os.path.join(dev, "device", "numa_node"))
    facts = _ib.collect(root)
    hca = by_name(facts)["mlx5_0"]
    assert (hca["fw_ver"], hca["numa_node"]) == (None, None)
    assert (hca["ports"][0]["rate"], hca["ports"][0]["rate_gbps"], hca["ports"][0]["lid"]) == (None, None, None)
    assert hca["ports"][0]["gids"] == [] and hca["ports"][0]["state"] == "ACTIVE"
    assert facts["gpu_affinity"][0]["path"] == "PIX"  # the hierarchy still places it


def test_software_rdma_device_without_pci_function(fabric):
    root = fabric("no-rdma")
    soft = os.path.join(root, "devices", "virtual", "infiniband", "rxe0")
    os.makedirs(os.path.join(soft, "ports", "1"))
    with open(os.path.join(soft, "ports", "1", "link_layer"), "w") as handle:
        handle.write("Ethernet\n")
    os.makedirs(os.path.join(root, "class", "infiniband"))
    os.symlink(os.path.relpath(soft, os.path.join(root, "class", "infiniband")),
               os.path.join(root, "class", "infiniband", "rxe0"))
    facts = _ib.collect(root)
    (rxe,) = facts["devices"]
    assert (rxe["name"], rxe["pci_bus_id"], rxe["numa_node"], rxe["netdevs"]) == ("rxe0", None, None, [])
    assert rxe["ports"][0]["link_layer"] == "Ethernet" and rxe["ports"][0]["state"] is None
    assert [a["paths"] for a in facts["gpu_affinity"]] == [{}, {}]


def test_missing_sysfs_root_is_empty(tmp_path):
    facts = _ib.collect(str(tmp_path / "nothing"))
    assert (facts["devices"], facts["gpu_affinity"], facts["active_hcas"], facts["peermem_loaded"]) == (
        [], [], [], False)


def test_command_line(tmp_path):
    script = str(ROOT / "tests" / "sim" / "host" / "mkfabric.py")
    out = subprocess.run([sys.executable, script, "--peermem", "roce-host", str(tmp_path / "sys")],
                         check=True, capture_output=True, text=True)
    assert out.stdout == "roce-host: 11 PCI functions\n"
    assert os.path.isdir(str(tmp_path / "sys" / "module" / "nvidia_peermem"))
    assert os.path.islink(str(tmp_path / "sys" / "bus" / "pci" / "devices" / "0000:4b:00.0"))
    bad = subprocess.run([sys.executable, script, "dgx-a100", str(tmp_path / "other")], capture_output=True, text=True,
                         check=False)
    assert bad.returncode != 0 and "Usage: mkfabric.py" in bad.stderr


@pytest.mark.parametrize("text, value", [
    ("0x1a", 26), ("26", 26), ("-1", None), ("³", None), ("٣", None), ("1" * 5000, None), ("0x" + "f" * 17, None),
    (" 7 ", 7), ("", None), ("7\n", 7),
])
def test_ib_numbers_take_ascii_digits_only(text, value):
    assert _ib.parse_int(text) == value
