"""/etc/nccl.conf's variables and the IPoIB checks, computed from ib_facts of the simulated fabrics."""

from __future__ import annotations

import importlib.util

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.accelops.gpu.plugins.module_utils import _ib
from ansible_collections.accelops.gpu.plugins.plugin_utils._ipoib_problems_filters import ipoib_problems
from ansible_collections.accelops.gpu.plugins.plugin_utils._nccl_env_filters import nccl_env
from simnode import ROOT

spec = importlib.util.spec_from_file_location("mkfabric", ROOT / "tests" / "sim" / "host" / "mkfabric.py")
mkfabric = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mkfabric)

DGX_HCAS = "=mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_9:1,mlx5_10:1,mlx5_11:1"


@pytest.fixture
def fabric(tmp_path):
    def build(profile, flat=False):
        root = tmp_path / profile
        mkfabric.main(profile, str(root), flat=flat)
        return _ib.collect(str(root))
    return build


def test_dgx_h100(fabric):
    env = nccl_env(fabric("dgx-h100"), [{"interface": "ibp24s0"}, {"interface": "ibp64s0"}])
    assert env == {"NCCL_IB_HCA": DGX_HCAS, "NCCL_NET_GDR_LEVEL": "PIX", "NCCL_SOCKET_IFNAME": "=ibp24s0,ibp64s0"}


def test_exact_names_keep_mlx5_1_from_matching_mlx5_10(fabric):
    hcas = nccl_env(fabric("dgx-h100"))["NCCL_IB_HCA"]
    assert hcas.startswith("=") and "mlx5_1:" not in hcas.replace("mlx5_10:", "").replace("mlx5_11:", "")


def test_roce_host_uses_its_roce_ports_and_v2_gid(fabric):
    env = nccl_env(fabric("roce-host"))
    # GPU 0 is PXB from the NIC, GPU 1 PHB: the farthest nearest path decides.
    assert env == {"NCCL_IB_HCA": "=mlx5_0:1,mlx5_1:1", "NCCL_IB_GID_INDEX": "3", "NCCL_NET_GDR_LEVEL": "PHB"}


def test_ports_down_lists_no_hca(fabric):
    assert nccl_env(fabric("ports-down")) == {"NCCL_NET_GDR_LEVEL": "PHB"}


def test_flat_tree_caps_gdr_at_phb(fabric):
    # Without the PCI hierarchy only NODE and SYS can be told apart: GPUDirect is capped at PHB.
    assert nccl_env(fabric("dgx-h100", flat=True))["NCCL_NET_GDR_LEVEL"] == "PHB"


def test_overrides_win_and_null_removes(fabric):
    env = nccl_env(fabric("dgx-h100"), [], {"NCCL_IB_HCA": "=mlx5_0:1", "NCCL_NET_GDR_LEVEL": None,
                                            "NCCL_DEBUG": "INFO", "NCCL_IB_DISABLE": False})
    assert env == {"NCCL_DEBUG": "INFO", "NCCL_IB_DISABLE": "0", "NCCL_IB_HCA": "=mlx5_0:1"}


def test_no_facts():
    assert nccl_env({}) == {"NCCL_NET_GDR_LEVEL": "PHB"}


NETDEVS = ["ibp24s0", "ibp64s0"]


@pytest.mark.parametrize("interfaces, problem", [
    ([{"interface": "ibp24s0", "address": "10.10.0.11/16"}], None),
    ([{"interface": "ibp24s0", "address": "fd00::11/64", "mode": "connected", "mtu": 65520}], None),
    ([{"interface": "ibp24s0", "address": "10.10.0.300/16"}],
     "infiniband_ipoib_interfaces[0].address: '10.10.0.300/16' is not an IP address"),
    ([{"interface": "ibp24s0", "address": "10.10.0.11"}], "infiniband_ipoib_interfaces[0].address: must be an IP"),
    ([{"interface": "ibp24s0", "address": "10.10.0.0/16"}], "is the network's own address"),
    ([{"interface": "ibp24s0"}], "infiniband_ipoib_interfaces[0].address: must be"),
    ([{"interface": "ib9", "address": "10.10.0.11/16"}],
     "infiniband_ipoib_interfaces[0].interface: 'ib9' is not an IPoIB interface of this host (ib_facts found: ibp24s0"),
    ([{"address": "10.10.0.11/16"}], "infiniband_ipoib_interfaces[0].interface: required"),
    ([{"interface": "ibp24s0", "address": "10.10.0.11/16"}, {"interface": "ibp24s0", "address": "10.10.0.12/16"}],
     "infiniband_ipoib_interfaces[1].interface: 'ibp24s0' is defined twice"),
    ([{"interface": "ibp24s0", "address": "10.10.0.11/16", "mtu": 65520}],
     "infiniband_ipoib_interfaces[0].mtu: must be between 1280 and 4092 in datagram mode"),
    ([{"interface": "ibp24s0", "address": "10.10.0.11/16", "mtu": "big"}],
     "infiniband_ipoib_interfaces[0].mtu: must be a number"),
    ([{"interface": "ibp24s0", "address": "10.10.0.11/16", "mtu": "\uff12\uff10\uff14\uff14"}],
     "infiniband_ipoib_interfaces[0].mtu: must be a number, whole and in ASCII digits, got '\uff12\uff10\uff14\uff14'"),
    ([{"interface": "ibp24s0", "address": "10.10.0.11/16", "mtu": "9" * 5000}],
     "infiniband_ipoib_interfaces[0].mtu: must be a number, whole and in ASCII digits, got '999"),
    ([{"interface": "ibp24s0", "address": "10.10.0.11/16", "mtu": 2044.5}],
     "infiniband_ipoib_interfaces[0].mtu: must be a number, whole and in ASCII digits, got 2044.5"),
    ([{"interface": "ibp24s0", "address": "10.10.0.11/16", "mode": "fast"}],
     "infiniband_ipoib_interfaces[0].mode: must be"),
    ([{"interface": "ibp24s0", "address": "10.10.0.11/16", "gateway": "x"}],
     "infiniband_ipoib_interfaces[0].gateway: unknown key"),
    (["ibp24s0"], "infiniband_ipoib_interfaces[0]: must be a dict"),
    ("ibp24s0", "infiniband_ipoib_interfaces: must be a list"),
])
def test_ipoib_problems(interfaces, problem):
    problems = ipoib_problems(interfaces, NETDEVS)
    if problem is None:
        assert problems == []
    else:
        assert any(p.startswith(problem) or problem in p for p in problems), problems


def test_a_huge_integer_mtu_is_a_problem_not_a_crash():
    problems = ipoib_problems([{"interface": "ibp24s0", "address": "10.10.0.11/16", "mtu": 10 ** 5000}], NETDEVS)
    assert problems == ["infiniband_ipoib_interfaces[0].mtu: must be a number, whole and in ASCII digits, got an "
                        "integer of 16610 bits"]


def test_every_problem_is_reported_at_once():
    problems = ipoib_problems([{"interface": "ib9", "address": "bad/99", "mode": "fast"}], [])
    assert len(problems) == 3 and "ib_facts found: none" in problems[0]


@pytest.mark.parametrize("facts, interfaces, overrides", [
    ({"devices": "x"}, None, None), ({"devices": [None]}, None, None), ({"devices": [{"ports": [None]}]}, None, None),
    ({}, [{"interface": 5}], None), ({}, "ib0", None), (1, None, None), ({}, None, ["NCCL_X"]),
])
def test_malformed_input_is_a_filter_error(facts, interfaces, overrides):
    with pytest.raises(AnsibleFilterError, match="nccl_env: "):
        nccl_env(facts, interfaces, overrides)
