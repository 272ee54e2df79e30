from __future__ import annotations

import pytest

from ansible_collections.accelops.gpu.plugins.module_utils import _gpu_facts as gf


@pytest.mark.parametrize("requested, included, excluded", [
    (["all"], set(gf.SUBSETS), set()),
    ([], set(gf.SUBSETS), set()),
    (["memory"], {"basic", "memory"}, {"power", "health", "topology"}),
    (["all", "!processes", "!topology"], {"basic", "mig", "health"}, {"processes", "topology"}),
    (["!processes"], set(gf.SUBSETS) - {"processes"}, {"processes"}),
    (["health"], {"basic", "health", "ecc", "thermal", "clocks", "nvlink", "pcie"}, {"memory", "mig"}),
    (["!basic"], {"basic"}, set()),
])
def test_resolve_subsets(requested, included, excluded):
    subsets = gf.resolve_subsets(requested)
    assert included <= subsets
    assert not excluded & subsets


@pytest.mark.parametrize("value, text", [(12040, "12.4"), (12090, "12.9"), (13000, "13.0"), (11080, "11.8"),
                                         (0, None), (None, None)])
def test_cuda_version_string(value, text):
    assert gf.cuda_version_string(value) == text


def test_clock_event_reason_names():
    assert gf.clock_event_reason_names(0x1 | 0x40) == ["gpu_idle", "hw_thermal_slowdown"]
    assert gf.clock_event_reason_names(0) == []
    assert gf.clock_event_reason_names(None) is None


def gpu(index, bus, links):
    return {"index": index, "pci_bus_id": bus,
            "nvlinks": [{"index": n, "active": active, "remote_type": kind, "remote_pci_bus_id": remote}
                        for n, (active, kind, remote) in enumerate(links)]}


def test_topology_through_nvswitches_counts_links_per_pair():
    to_switch = [(True, "switch", "0000:05:00.0")] * 18
    gpus = [gpu(i, "0000:%02x:00.0" % (0x18 + i), to_switch) for i in range(3)]
    assert gf.topology_matrix(gpus, {}) == [["X", "NV18", "NV18"], ["NV18", "X", "NV18"], ["NV18", "NV18", "X"]]


def test_topology_direct_links_and_pci_levels():
    a, b, c = "0000:01:00.0", "0000:02:00.0", "0000:81:00.0"
    gpus = [gpu(0, a, [(True, "gpu", b)] * 4 + [(False, None, None)]),
            gpu(1, b, [(True, "gpu", a)] * 4),
            gpu(2, c, [])]
    levels = {(0, 2): 50, (2, 0): 50, (1, 2): 40, (2, 1): 40}
    assert gf.topology_matrix(gpus, levels) == [["X", "NV4", "SYS"], ["NV4", "X", "NODE"], ["SYS", "NODE", "X"]]


@pytest.mark.parametrize("level, label", [(10, "PIX"), (20, "PXB"), (30, "PHB"), (40, "NODE"), (50, "SYS"),
                                          (None, None)])
def test_pci_levels_map_to_nvidia_smi_labels(level, label):
    gpus = [gpu(0, "0000:01:00.0", []), gpu(1, "0000:02:00.0", [])]
    assert gf.topology_matrix(gpus, {(0, 1): level, (1, 0): level})[0][1] == label


@pytest.mark.parametrize("words, cpus", [
    ([0x00FFFFFFFFFFFFFF, 0xFFFF000000000000, 0x000000FFFFFFFFFF, 0], "0-55,112-167"),  # DGX H100, NUMA node 0
    ([0xFF00000000000000, 0x0000FFFFFFFFFFFF, 0xFFFFFF0000000000, 0x00000000FFFFFFFF], "56-111,168-223"),
    ([0b1011], "0-1,3"),
    ([1 << 63, 1], "63-64"),  # a run across two words
    ([0, 0, 1 << 5], "133"),
    ([0, 0], None),  # names no CPU
    (None, None),  # NVML does not support it
])
def test_cpu_list(words, cpus):
    assert gf.cpu_list(words) == cpus
