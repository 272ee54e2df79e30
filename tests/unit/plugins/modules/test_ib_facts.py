"""ib_facts end to end in-process: the module's main() on the simulated fabrics of tests/sim/host/mkfabric.py."""

from __future__ import annotations

import hashlib
import os

import pytest

from ansible_collections.accelops.gpu.plugins.modules import ib_facts
from simnode import load_sim_script

mkfabric = load_sim_script("host/mkfabric.py", "mkfabric")


@pytest.fixture
def fabric(tmp_path):
    def build(profile, **flags):
        root = tmp_path / profile
        mkfabric.main(profile, str(root), **flags)
        return str(root)

    return build


def gather(module_result, root, **args):
    rc, result = module_result(ib_facts, dict(sysfs_root=root, **args))
    assert rc == 0, result
    assert result["changed"] is False
    return result["ansible_facts"]["infiniband"]


def snapshot(root):
    """Every path, link target and file digest under root."""
    seen = {}
    for top, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(top, name)
            if os.path.islink(path):
                seen[path] = "-> " + os.readlink(path)
            elif os.path.isfile(path):
                with open(path, "rb") as handle:
                    seen[path] = hashlib.sha256(handle.read()).hexdigest()
            else:
                seen[path] = "dir"
    return seen


def test_dgx_h100(module_result, fabric):
    facts = gather(module_result, fabric("dgx-h100", peermem=True))
    assert facts["peermem_loaded"] is True
    compute = [d for d in facts["devices"] if d["ports"][0]["link_layer"] == "InfiniBand"]
    assert len(compute) == 8
    assert {(p["state"], p["rate_gbps"]) for d in compute for p in d["ports"]} == {("ACTIVE", 400)}
    assert {d["board_id"] for d in compute} == {"MT_0000000838"}
    assert [(a["closest"], a["path"]) for a in facts["gpu_affinity"]] == [
        (["mlx5_0"], "PIX"), (["mlx5_3"], "PIX"), (["mlx5_4"], "PIX"), (["mlx5_5"], "PIX"),
        (["mlx5_6"], "PIX"), (["mlx5_9"], "PIX"), (["mlx5_10"], "PIX"), (["mlx5_11"], "PIX")]
    assert facts["active_hcas"] == ["mlx5_0", "mlx5_2", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_8", "mlx5_9",
                                    "mlx5_10", "mlx5_11"]
    assert facts["summary"]["active_infiniband_ports"] == 8 and facts["summary"]["gpus"] == 8


def test_roce_host(module_result, fabric):
    facts = gather(module_result, fabric("roce-host"))
    assert {d["ports"][0]["link_layer"] for d in facts["devices"]} == {"Ethernet"}
    v2 = [g for g in facts["devices"][0]["ports"][0]["gids"] if g["type"] == "RoCE v2" and g["ipv4"]]
    assert [(g["index"], g["gid"], g["ipv4"]) for g in v2] == [
        (3, "0000:0000:0000:0000:0000:ffff:c0a8:640b", "192.168.100.11")]
    assert [a["path"] for a in facts["gpu_affinity"]] == ["PXB", "PHB"]


def test_ports_down(module_result, fabric):
    facts = gather(module_result, fabric("ports-down"))
    assert facts["active_hcas"] == []
    assert [d["ports"][0]["state"] for d in facts["devices"]] == ["INIT", "DOWN", "DOWN"]
    assert [d["ports"][0]["phys_state"] for d in facts["devices"]] == ["LinkUp", "Polling", "Disabled"]


def test_host_without_rdma_is_not_a_failure(module_result, fabric):
    facts = gather(module_result, fabric("no-rdma"))
    assert (facts["devices"], facts["active_hcas"], facts["peermem_loaded"]) == ([], [], False)
    assert [(a["closest"], a["path"]) for a in facts["gpu_affinity"]] == [([], None), ([], None)]


def test_empty_sysfs_gives_empty_facts(module_result, tmp_path):
    facts = gather(module_result, str(tmp_path))
    assert facts == {"devices": [], "peermem_loaded": False, "gpu_affinity": [], "active_hcas": [],
                     "summary": {"devices": 0, "ports": 0, "active_ports": 0, "active_infiniband_ports": 0,
                                 "active_ethernet_ports": 0, "active_hcas": 0, "gpus": 0}}


def test_flat_tree_falls_back_to_numa(module_result, fabric):
    facts = gather(module_result, fabric("dgx-h100", flat=True))
    assert {a["path"] for a in facts["gpu_affinity"]} == {"NODE"}
    assert facts["gpu_affinity"][0]["closest"] == ["mlx5_%d" % n for n in range(6)]


def test_check_mode_gives_the_same_facts(module_result, fabric):
    root = fabric("dgx-h100")
    assert gather(module_result, root, _ansible_check_mode=True) == gather(module_result, root)


def test_tree_is_never_written(module_result, fabric):
    root = fabric("roce-host", peermem=True)
    before = snapshot(root)
    gather(module_result, root)
    assert snapshot(root) == before


def test_missing_sysfs_root_is_one_clear_error(module_result, tmp_path):
    rc, result = module_result(ib_facts, {"sysfs_root": str(tmp_path / "nothing")})
    assert rc == 1 and result["failed"]
    assert result["msg"] == "sysfs_root: %s is not a directory" % (tmp_path / "nothing")


@pytest.mark.parametrize("root, message", [(".", "sysfs_root: give an absolute directory path, got '.'"),
                                           ("/no/such", "sysfs_root: /no/such is not a directory"),
                                           ("/a\x00b", "sysfs_root: give an absolute directory path, got '/a\\x00b'")])
def test_a_sysfs_root_that_is_no_absolute_directory_is_refused(module_result, root, message):
    rc, result = module_result(ib_facts, {"sysfs_root": root})
    assert rc == 1 and result["msg"] == message
