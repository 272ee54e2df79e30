"""gpu_feature_labels and nfd_feature_file on the facts gpu_facts gives for every NVML fixture (the module's main(), the
real pynvml, the fake libnvidia-ml.so.1, the PCI bus from mksysfs.py), the expected labels written out by hand from the
fixture files and GPU Feature Discovery v0.20.0's rules (internal/lm of NVIDIA/k8s-device-plugin)."""

from __future__ import annotations

import copy
import subprocess
import sys

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.accelops.gpu.plugins.modules import gpu_facts
from ansible_collections.accelops.gpu.plugins.plugin_utils._kubernetes_filters import (
    FilterModule,
    gpu_feature_labels,
    nfd_feature_file,
)
from simnode import FIXTURES, ROOT

# The driver and CUDA labels of each fixture's driver_version and cuda_driver_version.
R550 = {  # driver_version=550.54.15, cuda_driver_version=12040
    "nvidia.com/cuda.driver-version.full": "550.54.15",
    "nvidia.com/cuda.driver-version.major": "550",
    "nvidia.com/cuda.driver-version.minor": "54",
    "nvidia.com/cuda.driver-version.revision": "15",
    "nvidia.com/cuda.driver.major": "550",
    "nvidia.com/cuda.driver.minor": "54",
    "nvidia.com/cuda.driver.rev": "15",
    "nvidia.com/cuda.runtime-version.full": "12.4",
    "nvidia.com/cuda.runtime-version.major": "12",
    "nvidia.com/cuda.runtime-version.minor": "4",
    "nvidia.com/cuda.runtime.major": "12",
    "nvidia.com/cuda.runtime.minor": "4",
}
R535 = {  # driver_version=535.161.08 (the revision stays "08", as GFD splits text), cuda_driver_version=12020
    "nvidia.com/cuda.driver-version.full": "535.161.08",
    "nvidia.com/cuda.driver-version.major": "535",
    "nvidia.com/cuda.driver-version.minor": "161",
    "nvidia.com/cuda.driver-version.revision": "08",
    "nvidia.com/cuda.driver.major": "535",
    "nvidia.com/cuda.driver.minor": "161",
    "nvidia.com/cuda.driver.rev": "08",
    "nvidia.com/cuda.runtime-version.full": "12.2",
    "nvidia.com/cuda.runtime-version.major": "12",
    "nvidia.com/cuda.runtime-version.minor": "2",
    "nvidia.com/cuda.runtime.major": "12",
    "nvidia.com/cuda.runtime.minor": "2",
}
R470 = {  # driver_version=470.239.06, cuda_driver_version=11040
    "nvidia.com/cuda.driver-version.full": "470.239.06",
    "nvidia.com/cuda.driver-version.major": "470",
    "nvidia.com/cuda.driver-version.minor": "239",
    "nvidia.com/cuda.driver-version.revision": "06",
    "nvidia.com/cuda.driver.major": "470",
    "nvidia.com/cuda.driver.minor": "239",
    "nvidia.com/cuda.driver.rev": "06",
    "nvidia.com/cuda.runtime-version.full": "11.4",
    "nvidia.com/cuda.runtime-version.major": "11",
    "nvidia.com/cuda.runtime-version.minor": "4",
    "nvidia.com/cuda.runtime.major": "11",
    "nvidia.com/cuda.runtime.minor": "4",
}
# What every node without sharing and with its PCI bus in the facts has (mksysfs.py gives each GPU class 0x030200).
NODE = {"nvidia.com/gpu.machine": "unknown", "nvidia.com/gpu.mode": "compute", "nvidia.com/gpu.replicas": "1",
        "nvidia.com/gpu.sharing-strategy": "none", "nvidia.com/mps.capable": "false"}

H100 = dict(R550, **NODE, **{  # dgx-h100.conf: 8x "NVIDIA H100 80GB HBM3", cc 9.0, 81559 MiB, mig.current=0
    "nvidia.com/gpu.compute.major": "9",
    "nvidia.com/gpu.compute.minor": "0",
    "nvidia.com/gpu.count": "8",
    "nvidia.com/gpu.family": "hopper",
    "nvidia.com/gpu.memory": "81559",
    "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
    "nvidia.com/mig.capable": "true",
})
# dgx-a100-mig.conf: 8x "NVIDIA A100-SXM4-80GB", cc 8.0, 81920 MiB; GPUs 0 and 1 in MIG mode, the others not.
A100 = dict(R535, **NODE, **{
    "nvidia.com/gpu.compute.major": "8",
    "nvidia.com/gpu.compute.minor": "0",
    "nvidia.com/gpu.count": "8",  # GPUs in MIG mode count with the whole ones of their product
    "nvidia.com/gpu.family": "ampere",
    "nvidia.com/gpu.memory": "81920",
    "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
    "nvidia.com/mig.capable": "true",
})
# single: GPUs in MIG mode beside whole ones, so GFD's MIG-INVALID labels override the whole GPUs' product, count,
# replicas, sharing-strategy and memory; family and compute capability stay.
A100_SINGLE = dict(A100, **{
    "nvidia.com/mig.strategy": "single",
    "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB-MIG-INVALID",
    "nvidia.com/gpu.count": "0",
    "nvidia.com/gpu.replicas": "0",
    "nvidia.com/gpu.sharing-strategy": "",
    "nvidia.com/gpu.memory": "0",
})
# mixed: GPU 0 holds seven 1g.10gb, GPU 1 a 3g.40gb (gi 2), a 2g.20gb (gi 3) and a 1g.10gb (gi 9); the memory is
# each profile's in the a100-80gb table (1g.10gb 9856, 2g.20gb 19968, 3g.40gb 40192 MiB).
A100_MIXED = dict(A100, **{"nvidia.com/mig.strategy": "mixed"})
for _profile, _count, _memory, _slices in (("1g.10gb", 8, 9856, 1), ("2g.20gb", 1, 19968, 2),
                                           ("3g.40gb", 1, 40192, 3)):
    A100_MIXED.update({
        "nvidia.com/mig-%s.product" % _profile: "NVIDIA-A100-SXM4-80GB-MIG-%s" % _profile,
        "nvidia.com/mig-%s.count" % _profile: str(_count),
        "nvidia.com/mig-%s.replicas" % _profile: "1",
        "nvidia.com/mig-%s.sharing-strategy" % _profile: "none",
        "nvidia.com/mig-%s.memory" % _profile: str(_memory),
        "nvidia.com/mig-%s.slices.gi" % _profile: str(_slices),
        "nvidia.com/mig-%s.slices.ci" % _profile: str(_slices),
    })
L40S = dict(R550, **NODE, **{  # pcie-l40s.conf: 2x "NVIDIA L40S", cc 8.9, 46068 MiB, no mig.* keys
    "nvidia.com/gpu.compute.major": "8",
    "nvidia.com/gpu.compute.minor": "9",
    "nvidia.com/gpu.count": "2",
    "nvidia.com/gpu.family": "ada-lovelace",
    "nvidia.com/gpu.memory": "46068",
    "nvidia.com/gpu.product": "NVIDIA-L40S",
    "nvidia.com/mig.capable": "false",
})
# gpu-lost.conf: 4x H100 with GPU 2 lost: three count; the lost one is not a GPU the node can offer.
LOST = dict(H100, **{"nvidia.com/gpu.count": "3"})
BUSY = dict(R550, **NODE, **{  # busy.conf: 2x "NVIDIA RTX 6000 Ada Generation", cc 8.9, 49140 MiB
    "nvidia.com/gpu.compute.major": "8",
    "nvidia.com/gpu.compute.minor": "9",
    "nvidia.com/gpu.count": "2",
    "nvidia.com/gpu.family": "ada-lovelace",
    "nvidia.com/gpu.memory": "49140",
    "nvidia.com/gpu.product": "NVIDIA-RTX-6000-Ada-Generation",
    "nvidia.com/mig.capable": "false",
})
V100 = dict(R470, **NODE, **{  # old-driver.conf: 8x "Tesla V100-SXM2-16GB", cc 7.0, 16160 MiB
    "nvidia.com/gpu.compute.major": "7",
    "nvidia.com/gpu.compute.minor": "0",
    "nvidia.com/gpu.count": "8",
    "nvidia.com/gpu.family": "volta",
    "nvidia.com/gpu.memory": "16160",
    "nvidia.com/gpu.product": "Tesla-V100-SXM2-16GB",
    "nvidia.com/mig.capable": "false",
})
NOT_LOADED = "gpu_feature_labels: NVML is not usable on this node, so no label can say what its GPUs are: "

# Fixture -> {mig strategy: expected labels, or the start of the error}. Every fixture is here.
EXPECTED = {
    "dgx-h100": {"none": H100, "single": dict(H100, **{"nvidia.com/mig.strategy": "single"}),
                 "mixed": dict(H100, **{"nvidia.com/mig.strategy": "mixed"})},
    "dgx-a100-mig": {"none": A100, "single": A100_SINGLE, "mixed": A100_MIXED},
    "pcie-l40s": {"none": L40S, "mixed": dict(L40S, **{"nvidia.com/mig.strategy": "mixed"})},
    "gpu-lost": {"none": LOST},
    "busy": {"none": BUSY},
    "old-driver": {"none": V100},
    "no-gpu": {"none": {}, "mixed": {}},
    "driver-not-loaded": {"none": NOT_LOADED + "the NVIDIA kernel driver is not loaded"},
    "driver-mismatch": {"none": NOT_LOADED + "driver/library version mismatch"},
}


@pytest.fixture
def node_facts(module_result, nvml_fixture, tmp_path):
    """node_facts(name, extra="") -> ansible_facts.nvidia of gpu_facts (every subset) on that fixture, with extra
    fixture lines appended, and the PCI bus mksysfs.py makes from it."""

    def gather(name, extra=""):
        path = nvml_fixture(name)
        if extra:
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(extra)
        sysfs = tmp_path / ("sys-%d" % len(list(tmp_path.glob("sys-*"))))
        subprocess.run([sys.executable, str(ROOT / "tests/sim/host/mksysfs.py"), str(path), str(sysfs)], check=True,
                       capture_output=True)
        rc, result = module_result(gpu_facts, {"sysfs_root": str(sysfs)})
        assert rc == 0, result
        return result["ansible_facts"]["nvidia"]

    return gather


def test_every_fixture_has_its_expected_labels():
    assert sorted(EXPECTED) == sorted(path.stem for path in FIXTURES.glob("*.conf"))


def test_filters_are_registered():
    filters = FilterModule().filters()
    assert set(filters) == {"gpu_feature_labels", "nfd_feature_file", "_kubernetes_health_actions", "_kubectl_steps",
                            "_kubernetes_maintenance", "_kubernetes_gpu_pods"}
    assert (filters["gpu_feature_labels"], filters["nfd_feature_file"]) == (gpu_feature_labels, nfd_feature_file)


@pytest.mark.parametrize("name, strategy", [(name, strategy) for name, cases in EXPECTED.items() for strategy in cases])
def test_labels_of_each_fixture(node_facts, name, strategy):
    facts = node_facts(name)
    expected = EXPECTED[name][strategy]
    if isinstance(expected, str):
        with pytest.raises(AnsibleFilterError) as raised:
            gpu_feature_labels(facts, strategy)
        assert str(raised.value).startswith(expected), str(raised.value)
        return
    labels = gpu_feature_labels(facts, strategy)
    assert labels == expected
    assert list(labels) == sorted(labels)
    # The file: every label on its own line, sorted, nothing else.
    text = nfd_feature_file(labels)
    assert text == "".join("%s=%s\n" % item for item in sorted(expected.items()))


def test_the_h100_feature_file_as_nfd_reads_it(node_facts):
    text = nfd_feature_file(gpu_feature_labels(node_facts("dgx-h100"), machine="DGX H100"))
    assert text.splitlines()[:3] == ["nvidia.com/cuda.driver-version.full=550.54.15",
                                     "nvidia.com/cuda.driver-version.major=550",
                                     "nvidia.com/cuda.driver-version.minor=54"]
    assert "nvidia.com/gpu.machine=DGX-H100\n" in text
    assert "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3\n" in text
    # Read as NFD's local source reads it (source/local/local.go): trimmed lines, # comments, name=value.
    read = dict(line.strip().split("=", 1) for line in text.splitlines() if line.strip() and line[0] != "#")
    assert read == dict(H100, **{"nvidia.com/gpu.machine": "DGX-H100"})


def test_single_with_every_gpu_in_mig_mode_with_one_profile(node_facts):
    """The A100 fixture cut to its GPU 0 (seven 1g.10gb): the MIG devices are nvidia.com/gpu."""
    labels = gpu_feature_labels(node_facts("dgx-a100-mig", "gpu_count=1\n"), "single")
    assert labels == dict(A100, **{
        "nvidia.com/mig.strategy": "single",
        "nvidia.com/gpu.count": "7",
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb",
        "nvidia.com/gpu.memory": "9856",
        "nvidia.com/gpu.replicas": "1",
        "nvidia.com/gpu.sharing-strategy": "none",
        "nvidia.com/gpu.slices.gi": "1",
        "nvidia.com/gpu.slices.ci": "1",
    })
    # none: the whole GPU in MIG mode, without sharing (0 replicas), as GFD labels it.
    assert gpu_feature_labels(node_facts("dgx-a100-mig", "gpu_count=1\n")) == dict(A100, **{
        "nvidia.com/gpu.count": "1", "nvidia.com/gpu.replicas": "0"})


def test_a_gpu_in_mig_mode_without_mig_devices(node_facts):
    facts = node_facts("dgx-a100-mig", "gpu_count=1\n")
    facts["gpus"][0]["mig_devices"] = []
    assert gpu_feature_labels(facts, "single")["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-80GB-MIG-INVALID"
    mixed = gpu_feature_labels(facts, "mixed")
    assert not [key for key in mixed if key.startswith("nvidia.com/mig-")]
    assert mixed["nvidia.com/mig.strategy"] == "mixed"


def test_single_with_two_profiles_is_invalid(node_facts):
    facts = node_facts("dgx-a100-mig", "gpu_count=2\n")  # GPU 0: 1g.10gb; GPU 1: 3g.40gb, 2g.20gb, 1g.10gb
    labels = gpu_feature_labels(facts, "single")
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-80GB-MIG-INVALID"
    assert labels["nvidia.com/gpu.count"] == "0"


def test_a_registered_result_is_read_as_its_facts(node_facts):
    facts = node_facts("pcie-l40s")
    assert gpu_feature_labels({"changed": False, "ansible_facts": {"nvidia": facts}}) == L40S
    assert gpu_feature_labels({"changed": False, "nvidia": facts}) == L40S


@pytest.mark.parametrize("kwargs, changed", [
    ({"sharing_strategy": "time-slicing", "replicas": 4},
     {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-SHARED", "nvidia.com/gpu.replicas": "4",
      "nvidia.com/gpu.sharing-strategy": "time-slicing"}),
    ({"sharing_strategy": "time-slicing", "replicas": 4, "rename_by_default": True},
     {"nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.sharing-strategy": "time-slicing"}),
    ({"sharing_strategy": "mps", "replicas": 2},
     {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-SHARED", "nvidia.com/gpu.replicas": "2",
      "nvidia.com/gpu.sharing-strategy": "mps", "nvidia.com/mps.capable": "true"}),
    # One replica is no sharing, as in GFD.
    ({"sharing_strategy": "time-slicing", "replicas": 1}, {}),
    ({"machine": "DGX H100 (rev. 2)"}, {"nvidia.com/gpu.machine": "DGX-H100-rev.-2"}),
    ({"machine": ""}, {"nvidia.com/gpu.machine": ""}),
])
def test_sharing_and_machine(node_facts, kwargs, changed):
    assert gpu_feature_labels(node_facts("dgx-h100"), **kwargs) == dict(H100, **changed)


def test_sharing_reaches_the_mig_devices_of_single_but_not_the_mig_resources_of_mixed(node_facts):
    facts = node_facts("dgx-a100-mig", "gpu_count=1\n")
    single = gpu_feature_labels(facts, "single", sharing_strategy="time-slicing", replicas=2)
    assert single["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb-SHARED"
    assert (single["nvidia.com/gpu.replicas"], single["nvidia.com/gpu.sharing-strategy"]) == ("2", "time-slicing")
    mixed = gpu_feature_labels(node_facts("dgx-a100-mig"), "mixed", sharing_strategy="time-slicing", replicas=2)
    assert mixed["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-80GB-SHARED"
    assert (mixed["nvidia.com/mig-1g.10gb.replicas"], mixed["nvidia.com/mig-1g.10gb.sharing-strategy"]) == ("1", "none")


def test_mps_with_a_gpu_in_mig_mode_is_refused(node_facts):
    with pytest.raises(AnsibleFilterError, match="MPS sharing is not supported for MIG devices"):
        gpu_feature_labels(node_facts("dgx-a100-mig"), sharing_strategy="mps", replicas=2)


def test_mixed_products_label_the_lowest_index_with_its_own_count(node_facts):
    facts = node_facts("pcie-l40s")
    facts["gpus"][1].update(name="NVIDIA L4", memory_total_mib=23034)
    labels = gpu_feature_labels(facts)
    assert (labels["nvidia.com/gpu.product"], labels["nvidia.com/gpu.count"], labels["nvidia.com/gpu.memory"]) == (
        "NVIDIA-L40S", "1", "46068")
    # Whole GPUs win over GPUs in MIG mode (newGPULabelers builds those first).
    facts = node_facts("dgx-a100-mig")
    for gpu in facts["gpus"][2:]:
        gpu["name"] = "NVIDIA A100-SXM4-40GB"
    labels = gpu_feature_labels(facts)
    assert (labels["nvidia.com/gpu.product"], labels["nvidia.com/gpu.count"], labels["nvidia.com/gpu.replicas"]) == (
        "NVIDIA-A100-SXM4-40GB", "6", "1")


@pytest.mark.parametrize("classes, mode", [
    (["0x030200", "0x030200"], "compute"),
    (["0x030000", "0x030000"], "graphics"),
    (["0x030000", "0x030200"], "unknown"),
    (["0x030200", None], "unknown"),
    (["0x038000", "0x038000"], "unknown"),
])
def test_gpu_mode_from_the_pci_class(node_facts, classes, mode):
    facts = node_facts("pcie-l40s")
    for gpu, pci_class in zip(facts["gpus"], classes):
        next(d for d in facts["pci_devices"] if d["pci_bus_id"] == gpu["pci_bus_id"])["class"] = pci_class
    assert gpu_feature_labels(facts)["nvidia.com/gpu.mode"] == mode


def test_gpu_mode_is_unknown_without_the_pci_subset(node_facts):
    facts = node_facts("pcie-l40s")
    facts["pci_devices"] = None
    assert gpu_feature_labels(facts) == dict(L40S, **{"nvidia.com/gpu.mode": "unknown"})


@pytest.mark.parametrize("name, product", [
    ("NVIDIA H100\nnvidia.com/gpu.count=99", "NVIDIA-H100nvidia.comgpu.count99"),
    # GFD drops a tab before it splits the words at blanks.
    ("  NVIDIA   H100\t80GB  ", "NVIDIA-H10080GB"),
    ("NVIDIA H100 (80GB) #1", "NVIDIA-H100-80GB-1"),
    ("NVIDIA Ĥ100", "NVIDIA-100"),
])
def test_hostile_product_names_are_sanitised_as_gfd_does(node_facts, name, product):
    facts = node_facts("dgx-h100")
    for gpu in facts["gpus"]:
        gpu["name"] = name
    labels = gpu_feature_labels(facts)
    assert labels["nvidia.com/gpu.product"] == product
    assert labels["nvidia.com/gpu.count"] == "8"
    assert nfd_feature_file(labels).count("\n") == len(labels)


@pytest.mark.parametrize("name, message", [
    ("-NVIDIA H100", "label nvidia.com/gpu.product: value '-NVIDIA-H100' is not a Kubernetes label value"),
    ("NVIDIA H100 " + "X" * 60, "label nvidia.com/gpu.product: value 'NVIDIA-H100-XXXX"),
    ("ĤĦ", "GPU 0's name 'ĤĦ' gives no product label"),
    (None, "GPU 0's name is None, not what gpu_facts gives"),
])
def test_a_product_name_kubernetes_cannot_take_is_an_error(node_facts, name, message):
    facts = node_facts("dgx-h100")
    for gpu in facts["gpus"]:
        gpu["name"] = name
    with pytest.raises(AnsibleFilterError) as raised:
        gpu_feature_labels(facts)
    assert str(raised.value).startswith("gpu_feature_labels: " + message), str(raised.value)


@pytest.mark.parametrize("profile", ["1g.10gb/../x", "1g.10gb\n", "big", "1g.10gb+me,gfx"])
def test_a_mig_profile_that_cannot_name_a_resource_is_an_error(node_facts, profile):
    facts = node_facts("dgx-a100-mig")
    facts["gpus"][1]["mig_devices"][0]["profile"] = profile
    with pytest.raises(AnsibleFilterError,
                       match=r"gpu_feature_labels: (GPU 1's MIG device 0's profile|label name 'nvidia)"):
        gpu_feature_labels(facts, "mixed")


def test_a_mig_profile_with_attributes_names_its_resource_as_gfd_does(node_facts):
    facts = node_facts("dgx-a100-mig")
    facts["gpus"][1]["mig_devices"][2]["profile"] = "1g.10gb+me"
    labels = gpu_feature_labels(facts, "mixed")
    assert labels["nvidia.com/mig-1g.10gb.me.product"] == "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb.me"
    assert labels["nvidia.com/mig-1g.10gb.count"] == "7"


@pytest.mark.parametrize("strategy", ["None", "", "MIXED", None, 1, ["mixed"]])
def test_a_bad_strategy_is_one_clear_error(node_facts, strategy):
    with pytest.raises(AnsibleFilterError) as raised:
        gpu_feature_labels(node_facts("dgx-h100"), strategy)
    assert str(raised.value).startswith("gpu_feature_labels: mig_strategy must be one of none, single, mixed (the GPU "
                                        "Operator's mig.strategy), got ")


@pytest.mark.parametrize("kwargs, message", [
    ({"sharing_strategy": "timeslicing"}, "sharing_strategy must be one of none, time-slicing, mps, got 'timeslicing'"),
    ({"replicas": 0}, "replicas must be a whole number from 1 to 65536, got 0"),
    ({"replicas": True}, "replicas must be a whole number from 1 to 65536, got True"),
    ({"replicas": "4"}, "replicas must be a whole number from 1 to 65536, got '4'"),
    ({"replicas": 4}, "replicas 4 needs sharing_strategy time-slicing or mps"),
    ({"rename_by_default": "yes"}, "rename_by_default must be true or false, got 'yes'"),
    ({"machine": 5}, "machine must be the node's product name (text), got 5"),
    ({"machine": "-"}, "label nvidia.com/gpu.machine: value '-' is not a Kubernetes label value"),
])
def test_bad_options_are_one_clear_error(node_facts, kwargs, message):
    with pytest.raises(AnsibleFilterError) as raised:
        gpu_feature_labels(node_facts("dgx-h100"), **kwargs)
    assert str(raised.value).startswith("gpu_feature_labels: " + message), str(raised.value)


def _lose(facts, *indexes):
    for index in indexes:
        facts["gpus"][index] = dict({key: None for key in facts["gpus"][index]}, index=index, lost=True, errors=[])
    return facts


def test_gpus_that_do_not_answer_are_not_counted_and_none_answering_is_an_error(node_facts):
    facts = node_facts("dgx-h100")
    facts["gpus"][5] = {"index": 5, "lost": False, "errors": [], "error": "nvmlDeviceGetHandleByIndex: Unknown "
                        "Error (NVML error 999)"}
    assert gpu_feature_labels(_lose(facts, 0, 7))["nvidia.com/gpu.count"] == "5"
    with pytest.raises(AnsibleFilterError) as raised:
        gpu_feature_labels(_lose(node_facts("gpu-lost"), 0, 1, 3))
    assert str(raised.value) == ("gpu_feature_labels: none of the node's 4 GPU(s) answers (lost or unreadable): "
                                 "no label would be true")


@pytest.mark.parametrize("change, message", [
    (lambda f: f["gpus"][3]["errors"].append("nvmlDeviceGetMemoryInfo: Unknown Error (NVML error 999)"),
     "GPU 3: NVML failed to give what the labels read: nvmlDeviceGetMemoryInfo: Unknown Error (NVML error 999)"),
    (lambda f: f["gpus"][0]["errors"].append("nvmlDeviceGetMigMode: Insufficient Permissions (NVML error 4)"),
     "GPU 0: NVML failed to give what the labels read: nvmlDeviceGetMigMode"),
    (lambda f: f["gpus"][2].update(compute_capability=None), "GPU 2's compute capability is None"),
    (lambda f: f["gpus"][2].update(memory_total_mib=None), "GPU 2's total memory is None"),
    (lambda f: f["gpus"][2].pop("mig_mode"), "GPU 2: the facts lack the mig subset"),
    (lambda f: f["gpus"][0].pop("memory_total_mib"), "GPU 0: the facts lack the memory subset"),
    (lambda f: f.update(driver_version=None, errors=["nvmlSystemGetDriverVersion: Unknown Error (NVML error 999)"]),
     "NVML failed to give the driver version: nvmlSystemGetDriverVersion: Unknown Error (NVML error 999)"),
    (lambda f: f.update(driver_version=None), "the driver version is None"),
    (lambda f: f.update(driver_version="550"), "the driver version '550' does not match X.Y[.Z]"),
    (lambda f: f.update(driver_version="550.54.15\nx=y"), "label nvidia.com/cuda.driver-version.full: value"),
    (lambda f: f.update(cuda_driver_version=None), "the CUDA driver version is None"),
    (lambda f: f.update(gpu_count=None, reason="NVML cannot count the GPUs: nvmlDeviceGetCount: Unknown Error"),
     "NVML could not count the GPUs (gpu_count None for 8 listed): NVML cannot count the GPUs"),
    (lambda f: f.update(driver_loaded=False, reason=None), NOT_LOADED[len("gpu_feature_labels: "):]
     + "the facts say the driver is not loaded"),
])
def test_nvml_errors_are_never_healthy_labels(node_facts, change, message):
    facts = node_facts("dgx-h100")
    change(facts)
    with pytest.raises(AnsibleFilterError) as raised:
        gpu_feature_labels(facts)
    assert str(raised.value).startswith("gpu_feature_labels: " + message), str(raised.value)


def test_an_nvml_error_on_the_cuda_version_is_said_as_nvmls(node_facts):
    """The facts of an NVML that failed to give the CUDA version: the refusal says NVML's error, not that the facts
    are not gpu_facts'."""
    facts = node_facts("dgx-h100", "fail.nvmlSystemGetCudaDriverVersion=1+:UNKNOWN\n")
    assert facts["cuda_driver_version"] is None and facts["errors"], facts["errors"]
    with pytest.raises(AnsibleFilterError) as raised:
        gpu_feature_labels(facts)
    assert str(raised.value).startswith("gpu_feature_labels: NVML failed to give the CUDA driver version: "
                                        "nvmlSystemGetCudaDriverVersion"), str(raised.value)


def test_a_gpu_error_the_labels_do_not_read_leaves_them_as_they_are(node_facts):
    facts = node_facts("dgx-h100")
    facts["gpus"][0]["errors"].append("nvmlDeviceGetTemperature: Unknown Error (NVML error 999)")
    assert gpu_feature_labels(facts) == H100


@pytest.mark.parametrize("value, message", [
    ({"skipped": True, "changed": False}, "the input is the result of a gpu_facts task that was skipped"),
    ({"failed": True, "msg": "boom"}, "the input is the result of a gpu_facts task that failed: boom"),
    ({"driver_loaded": True}, "the input must be ansible_facts.nvidia as accelops.gpu.gpu_facts sets it"),
    ("nvidia", "the input must be ansible_facts.nvidia"),
])
def test_input_that_is_not_facts(value, message):
    with pytest.raises(AnsibleFilterError) as raised:
        gpu_feature_labels(value)
    assert str(raised.value).startswith("gpu_feature_labels: " + message), str(raised.value)


def test_the_facts_are_not_changed(node_facts):
    facts = node_facts("dgx-a100-mig")
    before = copy.deepcopy(facts)
    gpu_feature_labels(facts, "mixed")
    assert facts == before


# nfd_feature_file

def test_the_file_is_sorted_lines_with_the_expiry_first():
    text = nfd_feature_file({"vendor.io/b": "2", "nvidia.com/gpu.count": 8, "vendor.io/a": ""},
                            "2026-07-01T00:00:00Z")
    assert text == ("# +expiry-time=2026-07-01T00:00:00Z\nnvidia.com/gpu.count=8\nvendor.io/a=\nvendor.io/b=2\n")
    assert nfd_feature_file({}) == ""
    assert nfd_feature_file({}, "2026-07-01T00:00:00.5+02:00") == "# +expiry-time=2026-07-01T00:00:00.5+02:00\n"
    assert nfd_feature_file({}, "2026-07-01T00:00:00-23:59") == "# +expiry-time=2026-07-01T00:00:00-23:59\n"


@pytest.mark.parametrize("labels, expiry, message", [
    ({"gpu.count": "8"}, None, "label name 'gpu.count' is not a Kubernetes label name with a prefix"),
    ({"Nvidia.com/gpu": "8"}, None, "label name 'Nvidia.com/gpu' is not a Kubernetes label name with a prefix"),
    ({"nvidia.com/" + "x" * 64: "8"}, None, "label name 'nvidia.com/xxx"),
    ({"nvidia.com/a=b": "8"}, None, "label name 'nvidia.com/a=b'"),
    ({"node.kubernetes.io/gpu": "8"}, None, "label name 'node.kubernetes.io/gpu' is in a namespace that NFD refuses"),
    ({"nvidia.com/gpu": "a\nb"}, None, "label nvidia.com/gpu: value 'a\\nb' is not a Kubernetes label value"),
    ({"nvidia.com/gpu": "x" * 64}, None, "label nvidia.com/gpu: value 'xxx"),
    ({"nvidia.com/gpu": True}, None, "label nvidia.com/gpu: value True is not a Kubernetes label value"),
    ({"nvidia.com/gpu": -1}, None, "label nvidia.com/gpu: value '-1' is not a Kubernetes label value"),
    ({"nvidia.com/gpu": None}, None, "label nvidia.com/gpu: value None"),
    ({5: "x"}, None, "a label name must be text, got 5"),
    ([("nvidia.com/gpu", "8")], None, "the input must be the labels (a dict of label name to value)"),
    ({}, "2026-07-01", "expiry must be a time in RFC 3339 (2026-07-01T00:00:00Z), got '2026-07-01'"),
    ({}, "2026-02-30T00:00:00Z", "expiry '2026-02-30T00:00:00Z' is not a time that exists"),
    ({}, "2026-07-01T00:00:00Z\nvendor.io/x=1", "expiry must be a time in RFC 3339"),
    ({}, 1782864000, "expiry must be a time in RFC 3339"),
    # Go's time.Parse (NFD) refuses an offset past 23:59, which Python's fromisoformat takes.
    ({}, "2026-07-01T00:00:00+24:00", "expiry '2026-07-01T00:00:00+24:00' is not a time that exists"),
    ({}, "2026-07-01T00:00:00-05:60", "expiry '2026-07-01T00:00:00-05:60' is not a time that exists"),
    ({}, "2026-07-01T00:00:60Z", "expiry '2026-07-01T00:00:60Z' is not a time that exists"),
])
def test_a_label_nfd_or_kubernetes_would_refuse_is_one_clear_error(labels, expiry, message):
    with pytest.raises(AnsibleFilterError) as raised:
        nfd_feature_file(labels, expiry)
    assert str(raised.value).startswith("nfd_feature_file: " + message), str(raised.value)


def test_nfds_own_namespaces_pass():
    assert nfd_feature_file({"feature.node.kubernetes.io/gpu": "true", "x.feature.node.kubernetes.io/gpu": "1"}) == (
        "feature.node.kubernetes.io/gpu=true\nx.feature.node.kubernetes.io/gpu=1\n")


def test_a_file_larger_than_nfd_reads_is_refused():
    labels = {"vendor.io/label-%05d" % n: "x" * 60 for n in range(1000)}
    with pytest.raises(AnsibleFilterError, match=r"the feature file would be 8[0-9]{4} bytes; NFD ignores one larger "
                                                 r"than 65536"):
        nfd_feature_file(labels)
