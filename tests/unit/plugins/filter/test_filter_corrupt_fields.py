"""The public filters that read gpu_facts' facts, against real facts (the fake NVML's DGX H100) with one field of
another type or value at a time: each returns or raises AnsibleFilterError naming the filter, never another
exception."""

from __future__ import annotations

import copy

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.accelops.gpu.plugins.module_utils._gpu_facts import GpuFactsCollector, resolve_subsets
from ansible_collections.accelops.gpu.plugins.module_utils._nvml import NvmlSession
from ansible_collections.accelops.gpu.plugins.plugin_utils._gpu_summary_filters import FilterModule as Summary
from ansible_collections.accelops.gpu.plugins.plugin_utils._slurm_filters import FilterModule as Slurm

# The fields the attack changed, each to values of another type or out of range.
CHANGES = [
    ("name", 5), ("nvlinks", "x"), ("nvlinks", [None]), ("errors", 5), ("errors", True), ("mig_devices", "x"),
    ("mig_devices", [5]), ("minor_number", "x"), ("minor_number", float("nan")), ("pci_bus_id", 7),
    ("memory_total_mib", float("nan")), ("index", float("nan")),
]


@pytest.fixture(name="facts")
def facts_fixture(nvml_fixture):
    nvml_fixture("dgx-h100")
    with NvmlSession() as session:
        return GpuFactsCollector(session, resolve_subsets(["all", "!pci", "!processes"])).collect()


def filters():
    found = dict(Summary().filters())
    found.update(Slurm().filters())
    return found


@pytest.mark.parametrize("field, value", CHANGES, ids=["%s=%r" % change for change in CHANGES])
@pytest.mark.parametrize("name", ["gpu_summary", "topology_table", "gpu_processes", "slurm_node_gres"])
def test_one_field_changed(facts, name, field, value):
    broken = copy.deepcopy(facts)
    broken["gpus"][0][field] = value
    if field == "index":
        broken["gpu_count"] = value
    function = filters()[name]
    try:
        function(broken)
    except AnsibleFilterError as error:
        assert str(error).startswith(name + ": ")
