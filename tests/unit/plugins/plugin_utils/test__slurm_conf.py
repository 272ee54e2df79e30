"""Slurm's view of a node's GPUs from GPU facts: the fixtures' facts through the real collector and the fake NVML,
hand-written facts for what no fixture has, and what slurmd -C and slurmd -G print."""

from __future__ import annotations

import copy
import re

import pytest
from hostile import huge, nested

from ansible_collections.accelops.gpu.plugins.module_utils._gpu_facts import GpuFactsCollector, resolve_subsets
from ansible_collections.accelops.gpu.plugins.module_utils._nvml import NvmlSession
from ansible_collections.accelops.gpu.plugins.plugin_utils import _slurm_conf
from ansible_collections.accelops.gpu.plugins.plugin_utils._slurm_conf import (
    SlurmError,
    cores,
    foreign_scripts,
    gres_conf_lines,
    gres_mismatch,
    gres_summary,
    gres_type,
    mig_gres_type,
    node_gres,
    node_line,
    parse_mig_minors,
    parse_slurmd_gres,
    site_scripts,
    slurmd_hardware,
)

H100 = "nvidia_h100_80gb_hbm3"
# slurmd -C of the DGX H100 (2x 56 cores, SMT) and of the L40S node (2x 32 cores, SMT), as Slurm 24.11 prints them.
DGX_C = ("NodeName=dgx01 CPUs=224 Boards=1 SocketsPerBoard=2 CoresPerSocket=56 ThreadsPerCore=2 RealMemory=2063937\n"
         "UpTime=12-03:04:05\n")
L40S_C = ("NodeName=l40s-07 CPUs=128 Boards=1 SocketsPerBoard=2 CoresPerSocket=32 ThreadsPerCore=2 RealMemory=515614 "
          "Gres=gpu:nvidia_l40s:2\n"
          "Found gpu:nvidia_l40s:2 with Autodetect=nvml (Substring of gpu name may be used instead)\n"
          "UpTime=0-01:00:00\n")


def mig_minors(gpus=8):
    """/proc/driver/nvidia-caps/mig-minors as the driver writes it: 15 GPU instances per GPU, 8 compute instances per
    GPU instance, numbered from 3 after config and monitor."""
    lines = ["config 1", "monitor 2"]
    for gpu in range(gpus):
        for gi in range(15):
            lines.append("gpu%d/gi%d/access %d" % (gpu, gi, 3 + gpu * 135 + gi * 9))
            lines += ["gpu%d/gi%d/ci%d/access %d" % (gpu, gi, ci, 4 + gpu * 135 + gi * 9 + ci) for ci in range(8)]
    return "\n".join(lines) + "\n"


@pytest.fixture
def facts_of(nvml_fixture):
    """The facts gpu_facts gathers on a fixture: the real collector, the real pynvml, the fake libnvidia-ml."""

    def gather(name):
        nvml_fixture(name)
        with NvmlSession() as session:
            return GpuFactsCollector(session, resolve_subsets(["all", "!pci", "!processes"])).collect()

    return gather


def slurmd_g(records, hardware):
    """What slurmd -G logs (DebugFlags=Gres) for the records: Index is the number that ends File."""
    lines = ["slurmd: debug:  Log file re-opened"]
    for r in records:
        index = int(re.search(r"([0-9]+)\Z", r["file"]).group(1))
        lines.append("slurmd: Gres Name=gpu Type=%s Count=1 Index=%d ID=7696487 File=%s Cores=%s CoreCnt=%d Links=%s "
                     "Flags=HAS_FILE,HAS_TYPE,ENV_NVML" % (r["type"], index, r["file"], r["cores"], hardware["cpus"],
                                                           r["links"] or "(null)"))
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- types


@pytest.mark.parametrize("name, kind", [
    ("NVIDIA H100 80GB HBM3", H100),
    ("NVIDIA A100-SXM4-80GB", "nvidia_a100-sxm4-80gb"),
    ("Tesla V100-SXM2-16GB", "tesla_v100-sxm2-16gb"),
    ("NVIDIA L40S", "nvidia_l40s"),
    ("NVIDIA RTX 6000 Ada Generation", "nvidia_rtx_6000_ada_generation"),
])
def test_gres_type(name, kind):
    assert gres_type(name) == kind


@pytest.mark.parametrize("gpu, mig, kind", [
    ("NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB MIG 3g.40gb", "nvidia_a100_3g.40gb"),
    ("NVIDIA A100-SXM4-40GB", "NVIDIA A100-SXM4-40GB MIG 1c.3g.20gb", "nvidia_a100_1c.3g.20gb"),
    # no "-" in the GPU's name: its whole type stays
    ("NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3 MIG 1g.10gb", "nvidia_h100_80gb_hbm3_1g.10gb"),
    ("NVIDIA H100 NVL", "NVIDIA H100 NVL MIG 7g.94gb", "nvidia_h100_nvl_7g.94gb"),
])
def test_mig_gres_type(gpu, mig, kind):
    assert mig_gres_type(gpu, mig) == kind


def test_a_mig_name_without_profile_is_refused():
    with pytest.raises(SlurmError, match=r"'NVIDIA A100-SXM4-80GB' holds no 'MIG <profile>'"):
        mig_gres_type("NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB")


# --------------------------------------------------------------------------- fixtures through the collector


def test_dgx_h100_every_gpu_alone_behind_nvswitches(facts_of):
    facts = facts_of("dgx-h100")
    records = node_gres(facts, slurmd_hardware(DGX_C))
    assert [r["type"] for r in records] == [H100] * 8
    assert [r["file"] for r in records] == ["/dev/nvidia%d" % i for i in range(8)]
    assert [r["uuid"] for r in records] == [gpu["uuid"] for gpu in facts["gpus"]]
    # NVSwitch links end at a switch's bus, never at a GPU's: Slurm counts none
    assert [r["links"] for r in records] == [",".join("-1" if j == i else "0" for j in range(8)) for i in range(8)]
    assert [r["cores"] for r in records] == ["0-55"] * 4 + ["56-111"] * 4
    assert [r["cpu_affinity"] for r in records] == ["0-55,112-167"] * 4 + ["56-111,168-223"] * 4
    assert {(r["name"], r["count"], r["mig_index"]) for r in records} == {("gpu", 1, None)}
    assert [r["index"] for r in records] == list(range(8))
    assert gres_summary(records) == "gpu:%s:8" % H100
    assert gres_conf_lines(records, False)[:2] == [
        "AutoDetect=off", "Name=gpu Type=%s File=/dev/nvidia0 Cores=0-55 Links=-1,0,0,0,0,0,0,0" % H100]
    assert gres_conf_lines(records, True) == ["AutoDetect=nvml"]
    assert [r["cores"] for r in node_gres(facts)] == [None] * 8  # without hardware


def test_dgx_a100_mig_devices_take_their_gpus_place(facts_of):
    facts = facts_of("dgx-a100-mig")
    # a DGX A100: 2x 64 cores, SMT
    hardware = slurmd_hardware(DGX_C.replace("CPUs=224", "CPUs=256").replace("CoresPerSocket=56", "CoresPerSocket=64"))
    records = node_gres(facts, hardware, mig_minors())
    gpu0 = [r for r in records if r["index"] == 0]
    assert [r["type"] for r in gpu0] == ["nvidia_a100_1g.10gb"] * 7
    assert [r["mig_index"] for r in gpu0] == list(range(7))
    assert [r["uuid"] for r in gpu0] == [d["uuid"] for d in facts["gpus"][0]["mig_devices"]]
    # GPU 0 is /dev/nvidia2 (minor 2); its GPU instances 7..13, compute instance 0 each
    assert [r["file"] for r in gpu0] == ["/dev/nvidia2,/dev/nvidia-caps/nvidia-cap%d,/dev/nvidia-caps/nvidia-cap%d"
                                         % (3 + 270 + gi * 9, 4 + 270 + gi * 9) for gi in range(7, 14)]
    assert {r["links"] for r in gpu0} == {None}
    assert {r["cores"] for r in gpu0} == {"0-63"}
    gpu1 = [r for r in records if r["index"] == 1]
    assert [r["type"] for r in gpu1] == ["nvidia_a100_3g.40gb", "nvidia_a100_2g.20gb", "nvidia_a100_1g.10gb"]
    whole = [r for r in records if r["mig_index"] is None]
    assert [(r["index"], r["type"]) for r in whole] == [(i, "nvidia_a100-sxm4-80gb") for i in range(2, 8)]
    assert whole[0]["links"] == "0,0,-1,0,0,0,0,0"
    assert gres_summary(records) == ("gpu:nvidia_a100_1g.10gb:8,gpu:nvidia_a100_3g.40gb:1,gpu:nvidia_a100_2g.20gb:1,"
                                     "gpu:nvidia_a100-sxm4-80gb:6")
    lines = gres_conf_lines(records, False)
    assert lines[1] == ("Name=gpu Type=nvidia_a100_1g.10gb MultipleFiles=/dev/nvidia2,/dev/nvidia-caps/nvidia-cap336,"
                        "/dev/nvidia-caps/nvidia-cap337 Cores=0-63")
    assert lines[11] == "Name=gpu Type=nvidia_a100-sxm4-80gb File=/dev/nvidia0 Cores=0-63 Links=0,0,-1,0,0,0,0,0"


def test_mig_devices_without_mig_minors_have_no_files(facts_of):
    records = node_gres(facts_of("dgx-a100-mig"))
    assert [r["file"] for r in records if r["mig_index"] is not None] == [None] * 10
    assert gres_conf_lines(records, True) == ["AutoDetect=nvml"]
    with pytest.raises(SlurmError, match=r"^GPU 0 MIG device 0: no device file; .*/proc/driver/nvidia-caps/mig-minors"):
        gres_conf_lines(records, False)


def test_a_mig_device_mig_minors_lacks_is_refused(facts_of):
    text = mig_minors().replace("gpu3/gi3/ci0/access", "gpu3/gi3/ci1/acces")  # GPU 1 (minor 3), its 2g.20gb
    with pytest.raises(SlurmError, match=r"^GPU 1 MIG device 1: mig-minors has no gpu3/gi3/ci0/access, so slurmd "
                                         r"would skip this MIG device$"):
        node_gres(facts_of("dgx-a100-mig"), None, text)


@pytest.mark.parametrize("text, message", [
    ("config 1\nmonitor\n", r"^mig_minors line 2 is not '<name> <minor>': 'monitor'$"),
    ("gpu0/gi1/access twelve\n", r"^mig_minors line 1 is not"),
    (b"config 1\n", r"^mig_minors must be the text of /proc/driver/nvidia-caps/mig-minors, got bytes$"),
])
def test_malformed_mig_minors(text, message):
    with pytest.raises(SlurmError, match=message):
        parse_mig_minors(text)


def test_mig_minors_blank_lines_are_nothing():
    assert parse_mig_minors("\nconfig 1\n\n  gpu0/gi1/access 12  \n") == {"config": 1, "gpu0/gi1/access": 12}


def test_pcie_l40s_without_nvlink(facts_of):
    records = node_gres(facts_of("pcie-l40s"), slurmd_hardware(L40S_C))
    assert [(r["type"], r["file"], r["links"], r["cores"]) for r in records] == [
        ("nvidia_l40s", "/dev/nvidia0", "-1,0", "0-31"), ("nvidia_l40s", "/dev/nvidia1", "0,-1", "32-63")]
    # what slurmd -C's own autodetection printed
    assert gres_summary(records) == slurmd_hardware(L40S_C)["gres"] == "gpu:nvidia_l40s:2"


def test_a_node_without_gpus_has_no_records(facts_of):
    records = node_gres(facts_of("no-gpu"))
    assert records == [] and gres_summary(records) == ""
    assert gres_conf_lines(records, False) == ["AutoDetect=off"]
    assert "Gres=" not in node_line("cpu01", slurmd_hardware(DGX_C), records)


@pytest.mark.parametrize("fixture, message", [
    ("driver-not-loaded", r"^NVML is not usable on this node, so slurmd cannot detect its GPUs: the NVIDIA kernel "
                          r"driver is not loaded"),
    ("gpu-lost", r"^GPU 2 is lost \(NVML error 15\): slurmd cannot detect it"),
])
def test_fixtures_of_broken_nodes_are_refused(facts_of, fixture, message):
    with pytest.raises(SlurmError, match=message):
        node_gres(facts_of(fixture))


# --------------------------------------------------------------------------- hand-written facts


def gpu(index, links=(), **fields):
    """A GPU's facts as gpu_facts gives them; links are (active, remote bus id)."""
    facts = {"index": index, "lost": False, "errors": [], "name": "NVIDIA A100-SXM4-40GB",
             "uuid": "GPU-0000000%d-0000-0000-0000-000000000000" % index, "pci_bus_id": "0000:%02x:00.0" % (index + 1),
             "minor_number": index, "mig_mode": False, "mig_devices": [], "cpu_affinity": "0-15",
             "nvlinks": [{"index": n, "active": active, "remote_pci_bus_id": bus, "remote_type": "gpu"}
                         for n, (active, bus) in enumerate(links)] or None}
    facts.update(fields)
    return facts


def node(*gpus, **fields):
    facts = {"pynvml_available": True, "nvml_available": True, "driver_loaded": True, "reason": None,
             "driver_version": "535.161.08", "gpu_count": len(gpus), "gpus": list(gpus), "errors": []}
    facts.update(fields)
    return facts


def bus(index, nvml_style=False):
    return ("00000000:%02X:00.0" if nvml_style else "0000:%02x:00.0") % (index + 1)


def test_nvlink_bridges_count_per_pair():
    """Four GPUs, every pair joined by two links (as on an HGX A100 4-GPU board); a link down, one to a bus that is
    no GPU, and one to itself do not count; remote bus ids in NVML's own spelling still match."""
    gpus = [gpu(i, [(True, bus(j, nvml_style=j == 3)) for j in range(4) if j != i for _link in range(2)])
            for i in range(4)]
    gpus[0]["nvlinks"] += [{"index": 6, "active": False, "remote_pci_bus_id": bus(1), "remote_type": "gpu"},
                           {"index": 7, "active": True, "remote_pci_bus_id": "0000:c1:00.0", "remote_type": "switch"},
                           {"index": 8, "active": True, "remote_pci_bus_id": bus(0), "remote_type": "gpu"}]
    assert [r["links"] for r in node_gres(node(*gpus))] == ["-1,2,2,2", "2,-1,2,2", "2,2,-1,2", "2,2,2,-1"]


def test_nvlink_bridged_pairs():
    """Two pairs of PCIe cards, each pair joined by an NVLink bridge of four links."""
    gpus = [gpu(i, [(True, bus(i ^ 1))] * 4) for i in range(4)]
    assert [r["links"] for r in node_gres(node(*gpus))] == ["-1,4,0,0", "4,-1,0,0", "0,0,-1,4", "0,0,4,-1"]


def test_minor_numbers_need_not_follow_the_index():
    records = node_gres(node(gpu(0, minor_number=3), gpu(1, minor_number=0)))
    assert [(r["index"], r["file"]) for r in records] == [(0, "/dev/nvidia3"), (1, "/dev/nvidia0")]


def test_mig_devices_of_a_driver_before_470_42_01_are_named_by_their_gpu():
    mig = {"index": 0, "uuid": "MIG-GPU-00000000-0000-0000-0000-000000000000/1/0", "name": "A100-SXM4-40GB MIG 7g.40gb",
           "profile": "7g.40gb", "gpu_instance_id": 1, "compute_instance_id": 0}
    facts = node(gpu(0, mig_mode=True, mig_devices=[mig], name="A100-SXM4-40GB"), driver_version="460.73.01")
    (record,) = node_gres(facts, None, "gpu0/gi1/access 12\ngpu0/gi1/ci0/access 13\n")
    assert record["uuid"] == "MIG-GPU-00000000-0000-0000-0000-000000000000/1/0"
    assert record["type"] == "a100_7g.40gb"
    assert record["file"] == "/dev/nvidia0,/dev/nvidia-caps/nvidia-cap12,/dev/nvidia-caps/nvidia-cap13"


def broken(change):
    facts = node(gpu(0), gpu(1))
    change(facts)
    return facts


@pytest.mark.parametrize("facts, message", [
    (node(gpu(0), driver_loaded=False, reason="the NVIDIA kernel driver is not loaded (libnvidia-ml.so.1 is present)"),
     r"^NVML is not usable on this node, so slurmd cannot detect its GPUs: the NVIDIA kernel driver is not loaded"),
    (node(nvml_available=False, driver_loaded=False, gpu_count=0,
          reason="libnvidia-ml.so.1 was not found: the NVIDIA driver is not installed"),
     r"^NVML is not usable on this node, so slurmd cannot detect its GPUs: libnvidia-ml.so.1 was not found"),
    (node(gpu_count=None, reason="NVML cannot count the GPUs: nvmlDeviceGetCount: Unknown Error (NVML error 999)"),
     r"^NVML could not count the GPUs: NVML cannot count the GPUs: nvmlDeviceGetCount: Unknown Error"),
    (node(errors=["nvmlSystemGetDriverVersion: Timeout (NVML error 10)"]),
     r"^NVML counted no GPU but failed to answer: nvmlSystemGetDriverVersion: Timeout"),
    (node(gpu(0), gpu_count=2), r"^gpu_count is 2 but the facts list 1 GPUs$"),
    (broken(lambda f: f["gpus"][1].update(lost=True, name=None)), r"^GPU 1 is lost \(NVML error 15\)"),
    (broken(lambda f: f["gpus"][1].update(error="nvmlDeviceGetHandleByIndex: Unknown Error (NVML error 999)")),
     r"^GPU 1 could not be read: nvmlDeviceGetHandleByIndex: Unknown Error"),
    (broken(lambda f: f["gpus"][0].update(errors=["nvmlDeviceGetCpuAffinity: Timeout (NVML error 10)"])),
     r"^GPU 0: NVML failed to answer what slurmd reads: nvmlDeviceGetCpuAffinity: Timeout"),
    (broken(lambda f: f["gpus"][1].update(name=None)), r"^GPU 1: NVML gave no name$"),
    (broken(lambda f: f["gpus"][1].update(minor_number=None)), r"^GPU 1: NVML gave no minor_number$"),
    (broken(lambda f: f["gpus"][0].update(uuid=None)), r"^GPU 0: NVML gave no uuid$"),
    (broken(lambda f: f["gpus"][0].update(pci_bus_id=None)), r"^GPU 0: NVML gave no pci_bus_id$"),
    (broken(lambda f: f["gpus"][0].pop("nvlinks")),
     r"^GPU 0: the facts lack nvlinks; gather the nvlink subset of accelops.gpu.gpu_facts$"),
    (broken(lambda f: f["gpus"][1].pop("cpu_affinity")), r"^GPU 1: the facts lack cpu_affinity; gather the topology"),
    (broken(lambda f: f["gpus"][0].update(mig_mode=True)),
     r"^GPU 0 \(/dev/nvidia0\) is in MIG mode without MIG devices: slurmd logs an error and offers the whole GPU"),
    (broken(lambda f: f["gpus"][0].update(mig_mode=True, mig_devices=[{"index": 0, "name": "x MIG 1g.5gb"}])),
     r"^GPU 0 MIG device 0: NVML gave no uuid$"),
    (broken(lambda f: f["gpus"][1].update(name="NVIDIA A100:SXM4")), r"^GPU 1: Slurm's type 'nvidia_a100:sxm4' for "),
    (broken(lambda f: f["gpus"].reverse()), r"^GPU 0: the facts' entry is not a GPU of index 0$"),
    ([], r"^facts must be ansible_facts.nvidia as accelops.gpu.gpu_facts returns it \(a dict\), got list$"),
])
def test_facts_that_are_no_description_are_refused(facts, message):
    with pytest.raises(SlurmError, match=message):
        node_gres(facts)


def test_errors_slurmd_does_not_read_do_not_matter():
    facts = node(gpu(0, errors=["nvmlDeviceGetTemperature: Timeout (NVML error 10)"]))
    assert node_gres(facts)[0]["type"] == "nvidia_a100-sxm4-40gb"


# --------------------------------------------------------------------------- cores


def hw(sockets, cores_per_socket, threads, boards=1):
    return {"cpus": boards * sockets * cores_per_socket * threads, "boards": boards, "sockets_per_board": sockets,
            "sockets": boards * sockets, "cores_per_socket": cores_per_socket, "threads_per_core": threads,
            "real_memory": 1024}


@pytest.mark.parametrize("cpus, hardware, expected", [
    ("0-55,112-167", hw(2, 56, 2), "0-55"),
    ("56-111,168-223", hw(2, 56, 2), "56-111"),
    ("0-15", hw(2, 16, 1), "0-15"),  # no SMT
    ("3,35", hw(2, 16, 2), "3"),  # a core and its sibling
    ("0-7,32-39", hw(4, 8, 2), "0-7"),  # four sockets, each its own NUMA node
    ("0-3,16-19", hw(2, 4, 2, boards=2), "0-3"),  # two boards of two sockets
    ("0-55,112-167", hw(2, 28, 2), None),  # CPUs this node does not have: the affinity does not fit it
    ("0-55", None, None),  # no hardware
    (None, hw(2, 56, 2), None),  # NVML gave no affinity
])
def test_cores(cpus, hardware, expected):
    assert cores(cpus, hardware) == expected


@pytest.mark.parametrize("cpus, hardware, message", [
    ("0-x", hw(1, 2, 1), r"^GPU 3: cpu_affinity must be a cpulist such as 0-55,112-167, got '0-x'$"),
    ("0", dict(hw(1, 2, 1), cores_per_socket=0), r"^hardware: cores_per_socket must be a positive whole number"),
    ("0", dict(hw(1, 2, 1), cpus=True), r"^hardware: cpus must be a positive whole number, got True$"),
    ("0", dict(hw(1, 2, 1), sockets=3), r"^hardware: sockets \(3\) must be boards times sockets_per_board \(1\)$"),
    ("0", "CPUs=2", r"^hardware must be what slurm_hardware reads from slurmd -C \(a dict\), got str$"),
])
def test_bad_cores_input(cpus, hardware, message):
    with pytest.raises(SlurmError, match=message):
        cores(cpus, hardware, "GPU 3")


# --------------------------------------------------------------------------- slurmd -C and node lines


@pytest.mark.parametrize("text, expected", [
    (DGX_C, {"name": "dgx01", "cpus": 224, "boards": 1, "sockets_per_board": 2, "sockets": 2, "cores_per_socket": 56,
             "threads_per_core": 2, "real_memory": 2063937, "gres": None}),
    (L40S_C, {"name": "l40s-07", "cpus": 128, "boards": 1, "sockets_per_board": 2, "sockets": 2,
              "cores_per_socket": 32, "threads_per_core": 2, "real_memory": 515614, "gres": "gpu:nvidia_l40s:2"}),
    ("NodeName=node1 CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=7940",
     {"name": "node1", "cpus": 2, "boards": 1, "sockets_per_board": 1, "sockets": 1, "cores_per_socket": 2,
      "threads_per_core": 1, "real_memory": 7940, "gres": None}),
    ("\n  NodeName=big CPUs=256 Boards=2 SocketsPerBoard=2 CoresPerSocket=32 ThreadsPerCore=2 RealMemory=1  \n",
     {"name": "big", "cpus": 256, "boards": 2, "sockets_per_board": 2, "sockets": 4, "cores_per_socket": 32,
      "threads_per_core": 2, "real_memory": 1, "gres": None}),
])
def test_slurmd_hardware(text, expected):
    assert slurmd_hardware(text) == expected


@pytest.mark.parametrize("text, message", [
    ("", r"^slurmd -C should print 'NodeName=<name> CPUs=<n> .*' first, got ''$"),
    ("slurmd: error: Unable to read slurm.conf\n", r"got 'slurmd: error: Unable to read slurm.conf'$"),
    ("NodeName=n CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 RealMemory=7940", r"^slurmd -C should print"),
    ("NodeName=n CPUs=0 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=7940",
     r"^hardware: cpus must be a positive whole number, got 0$"),
    (None, r"^the input must be what slurmd -C printed, got NoneType$"),
])
def test_slurmd_hardware_refuses_anything_else(text, message):
    with pytest.raises(SlurmError, match=message):
        slurmd_hardware(text)


def test_two_kinds_of_nodes_in_one_cluster(facts_of):
    dgx = node_gres(facts_of("dgx-h100"), slurmd_hardware(DGX_C))
    l40s = node_gres(facts_of("pcie-l40s"), slurmd_hardware(L40S_C))
    assert node_line("dgx01", slurmd_hardware(DGX_C), dgx, addr="10.0.0.11") == (
        "NodeName=dgx01 NodeAddr=10.0.0.11 CPUs=224 Boards=1 SocketsPerBoard=2 CoresPerSocket=56 ThreadsPerCore=2 "
        "RealMemory=2063937 Gres=gpu:nvidia_h100_80gb_hbm3:8 State=UNKNOWN")
    extra = {"Features": "l40s,pcie", "Weight": 10}
    assert node_line("l40s-07", slurmd_hardware(L40S_C), l40s, port=6818, extra=extra) == (
        "NodeName=l40s-07 Port=6818 CPUs=128 Boards=1 SocketsPerBoard=2 CoresPerSocket=32 ThreadsPerCore=2 "
        "RealMemory=515614 Gres=gpu:nvidia_l40s:2 Features=l40s,pcie Weight=10 State=UNKNOWN")


@pytest.mark.parametrize("gres, value", [("gpu:nvidia_l40s:2", "Gres=gpu:nvidia_l40s:2"), ("", None),
                                         ("gpu:2,gpu:nvidia_a100_1g.10gb:7", "Gres=gpu:2,gpu:nvidia_a100_1g.10gb:7")])
def test_node_line_takes_a_gres_value(gres, value):
    line = node_line("n1.cluster", hw(1, 2, 1), gres, addr="fe80::1", port="6818")
    assert line.startswith("NodeName=n1.cluster NodeAddr=fe80::1 Port=6818 CPUs=2 ")
    assert (value in line.split()) if value else "Gres=" not in line


@pytest.mark.parametrize("args, kwargs, message", [
    (("node 1", hw(1, 2, 1), ""), {}, r"^name: a Slurm node name is letters, digits, .*; got 'node 1'$"),
    (("n1\nNodeName=evil", hw(1, 2, 1), ""), {}, r"^name: "),
    (("DEFAULT", hw(1, 2, 1), ""), {}, r"^name: .*not DEFAULT; got 'DEFAULT'$"),
    (("-n1", hw(1, 2, 1), ""), {}, r"^name: "),
    ((None, hw(1, 2, 1), ""), {}, r"^name: "),
    (("n1", hw(1, 2, 1), ""), {"addr": "host name"}, r"^addr: give a host name or an IP address, got 'host name'$"),
    (("n1", hw(1, 2, 1), ""), {"addr": "a..b"}, r"^addr: "),
    (("n1", hw(1, 2, 1), ""), {"port": 0}, r"^port: give a port number from 1 to 65535, got 0$"),
    (("n1", hw(1, 2, 1), ""), {"port": 65536}, r"^port: "),
    (("n1", hw(1, 2, 1), ""), {"port": True}, r"^port: "),
    (("n1", hw(1, 2, 1), ""), {"port": "68 18"}, r"^port: "),
    (("n1", hw(1, 2, 1), "gpu:a b:2"), {}, r"^gres: give the records of slurm_node_gres or a Gres= value"),
    (("n1", hw(1, 2, 1), "gpu:h100:0"), {}, r"^gres: "),
    (("n1", hw(1, 2, 1), [{"name": "gpu", "type": "a=b"}]), {}, r"^GPU None: type 'a=b' is not a Slurm GRES type$"),
    (("n1", {"cpus": 2}, ""), {}, r"^hardware: boards must be a positive whole number, got None$"),
    (("n1", hw(1, 2, 1), ""), {"extra": {"State": "DOWN"}}, r"^extra: 'State' is not a node parameter this line may"),
    (("n1", hw(1, 2, 1), ""), {"extra": {"Features": "a b"}}, r"^extra: Features='a b' holds characters slurm.conf "),
    (("n1", hw(1, 2, 1), ""), {"extra": ["Weight=1"]}, r"^extra must be a dict of slurm.conf node parameters"),
])
def test_node_line_refuses_what_slurm_conf_cannot_hold(args, kwargs, message):
    with pytest.raises(SlurmError, match=message):
        node_line(*args, **kwargs)


# --------------------------------------------------------------------------- gres.conf


@pytest.mark.parametrize("change, message", [
    ({"file": "/dev/nvidia0 Cores=0"}, r"^GPU 0: file '/dev/nvidia0 Cores=0' is not a device path$"),
    ({"file": 7}, r"^GPU 0: file 7 is not a device path$"),
    ({"cores": "0-3\nName=gpu"}, r"^GPU 0: cores '0-3\\nName=gpu' is not a Slurm cores list$"),
    ({"links": "-1,x"}, r"^GPU 0: links '-1,x' is not a Slurm links list$"),
    ({"type": "h 100"}, r"^GPU 0: type 'h 100' is not a Slurm GRES type$"),
])
def test_gres_conf_refuses_what_it_cannot_hold(change, message):
    record = dict(node_gres(node(gpu(0)))[0], **change)
    with pytest.raises(SlurmError, match=message):
        gres_conf_lines([record], False)


@pytest.mark.parametrize("records, autodetect, message", [
    ([], "yes", r"^autodetect must be true \(AutoDetect=nvml\) or false \(one line per device\), got 'yes'$"),
    ("gpu:h100:8", True, r"^records must be the list slurm_node_gres returns, got 'gpu:h100:8'$"),
    ([{"name": "mps", "type": "x"}], False, r"^records must be the list slurm_node_gres returns"),
])
def test_gres_conf_refuses_bad_arguments(records, autodetect, message):
    with pytest.raises(SlurmError, match=message):
        gres_conf_lines(records, autodetect)


def test_a_gres_conf_line_without_cores_or_links():
    record = dict(node_gres(node(gpu(0)))[0], links=None)
    assert gres_conf_lines([record], False) == ["AutoDetect=off",
                                                "Name=gpu Type=nvidia_a100-sxm4-40gb File=/dev/nvidia0"]


# --------------------------------------------------------------------------- slurmd -G


SLURMD_G = """\
slurmd: debug:  gres/gpu: init: loaded
slurmd: gpu/nvml: _get_system_gpu_list_nvml: 8 GPU system device(s) detected
slurmd: Gres Name=gpu Type=nvidia_h100_80gb_hbm3 Count=1 Index=0 ID=7696487 File=/dev/nvidia0 Cores=0-55 \
CoreCnt=224 Links=-1,0,0,0,0,0,0,0 Flags=HAS_FILE,HAS_TYPE,ENV_NVML
Gres Name=gpu Type=nvidia_a100_3g.40gb Count=1 Index=427 ID=7696487 File=/dev/nvidia3,/dev/nvidia-caps/nvidia-cap426,\
/dev/nvidia-caps/nvidia-cap427 Links=(null) Flags=HAS_FILE,HAS_TYPE,ENV_NVML
[2025-03-01T10:00:00.123] Gres Name=gpu Type=(null) Count=2 ID=7696487 File=/dev/nvidia[4-5] Links=(null) \
Flags=HAS_FILE
slurmd: Gres Name=mps Type=(null) Count=200 ID=7959394 Links=(null) Flags=
slurmd: Gres Name=gpu Type=nvidia_l40s Count=2 Flags=HAS_TYPE,ENV_NVML
slurmd: error: Gres Name is not a line of ours
"""


# Slurm 22.05 (Debian 12): the first line as slurmd -G printed it on the simulated DGX H100 (on stderr), no Flags=;
# the others in 22.05's formats for a device without links ("%s" of a NULL links string: "(null)").
SLURMD_G_2205 = """\
slurmd: Gres Name=gpu Type=nvidia_h100_80gb_hbm3 Count=1 Index=0 ID=7696487 File=/dev/nvidia0 Links=-1,0,0,0,0,0,0,0
slurmd: Gres Name=gpu Type=nvidia_h100_80gb_hbm3 Count=1 Index=1 ID=7696487 File=/dev/nvidia1 Cores=0-55 CoreCnt=224 \
Links=0,-1,0,0,0,0,0,0
slurmd: Gres Name=gpu Type=nvidia_a100_1g.10gb Count=1 Index=30 ID=7696487 File=/dev/nvidia0,\
/dev/nvidia-caps/nvidia-cap21,/dev/nvidia-caps/nvidia-cap30 Cores=0-63 CoreCnt=256 (null)
slurmd-dgx01: Gres Name=gpu Type=nvidia_l40s Count=2 ID=7696487 (null)
slurmd: error: gres.conf rejected: Gres Name=gpu Type=nvidia_l40s Count=8 ID=7696487 (null)
"""


def test_parse_slurmd_gres_reads_slurm_22_05():
    assert parse_slurmd_gres(SLURMD_G_2205) == [
        {"name": "gpu", "type": H100, "count": 1, "index": 0, "file": "/dev/nvidia0", "links": "-1,0,0,0,0,0,0,0",
         "flags": []},
        {"name": "gpu", "type": H100, "count": 1, "index": 1, "file": "/dev/nvidia1", "cores": "0-55",
         "links": "0,-1,0,0,0,0,0,0", "flags": []},
        {"name": "gpu", "type": "nvidia_a100_1g.10gb", "count": 1, "index": 30, "cores": "0-63",
         "file": "/dev/nvidia0,/dev/nvidia-caps/nvidia-cap21,/dev/nvidia-caps/nvidia-cap30", "flags": []},
        {"name": "gpu", "type": "nvidia_l40s", "count": 2, "flags": []},
    ]


def test_parse_slurmd_gres_reads_every_format():
    assert parse_slurmd_gres(SLURMD_G) == [
        {"name": "gpu", "type": H100, "count": 1, "index": 0, "file": "/dev/nvidia0", "cores": "0-55",
         "links": "-1,0,0,0,0,0,0,0", "flags": ["HAS_FILE", "HAS_TYPE", "ENV_NVML"]},
        {"name": "gpu", "type": "nvidia_a100_3g.40gb", "count": 1, "index": 427,
         "file": "/dev/nvidia3,/dev/nvidia-caps/nvidia-cap426,/dev/nvidia-caps/nvidia-cap427", "links": None,
         "flags": ["HAS_FILE", "HAS_TYPE", "ENV_NVML"]},
        {"name": "gpu", "type": None, "count": 2, "file": "/dev/nvidia[4-5]", "links": None, "flags": ["HAS_FILE"]},
        {"name": "mps", "type": None, "count": 200, "links": None, "flags": []},
        {"name": "gpu", "type": "nvidia_l40s", "count": 2, "flags": ["HAS_TYPE", "ENV_NVML"]},
    ]


@pytest.mark.parametrize("text", ["", "slurmd: fatal: Unable to process configuration file\n"])
def test_parse_slurmd_gres_without_gres_lines(text):
    assert parse_slurmd_gres(text) == []


def test_parse_slurmd_gres_wants_text():
    with pytest.raises(SlurmError, match=r"^the input must be what slurmd -G printed, got list$"):
        parse_slurmd_gres(["Gres Name=gpu"])


@pytest.fixture
def dgx(facts_of):
    hardware = slurmd_hardware(DGX_C)
    return node_gres(facts_of("dgx-h100"), hardware), hardware


def test_slurmd_detecting_what_the_facts_expect_agrees(dgx):
    records, hardware = dgx
    assert gres_mismatch(records, slurmd_g(records, hardware)) == []
    assert gres_mismatch([], "") == []


def test_mig_node_agrees_with_its_own_lines(facts_of):
    records = node_gres(facts_of("dgx-a100-mig"), None, mig_minors())
    assert gres_mismatch(records, slurmd_g(records, {"cpus": 256})) == []


def test_a_gpu_slurmd_does_not_find(dgx):
    records, hardware = dgx
    assert gres_mismatch(records, slurmd_g(records[:7], hardware)) == [
        "GPU type nvidia_h100_80gb_hbm3: gres.conf/facts expect 8, slurmd -G detects 7",
        "GPU 7 (/dev/nvidia7): expected as type nvidia_h100_80gb_hbm3, but slurmd -G lists no GPU with this File"]


def test_another_type_other_links_and_an_extra_device(dgx):
    records, hardware = dgx
    seen = copy.deepcopy(records)
    seen[2]["type"] = "nvidia_h100"
    seen[5]["links"] = "0,0,0,0,0,-1,0,18"
    seen.append(dict(seen[7], file="/dev/nvidia8", links=None))
    assert gres_mismatch(records, slurmd_g(seen, hardware)) == [
        "GPU type nvidia_h100: gres.conf/facts expect 0, slurmd -G detects 1",
        "GPU 2 (/dev/nvidia2): type nvidia_h100_80gb_hbm3 expected, slurmd -G detects type nvidia_h100",
        "GPU 5 (/dev/nvidia5): Links=0,0,0,0,0,-1,0,0 expected, slurmd -G detects Links=0,0,0,0,0,-1,0,18",
        "slurmd -G lists a GPU of type nvidia_h100_80gb_hbm3 at Index=8 with File=/dev/nvidia8, which the facts do "
        "not have"]


def test_unknown_links_are_not_compared(dgx):
    records, hardware = dgx
    seen = [dict(record, links=None) for record in records]
    assert gres_mismatch(records, slurmd_g(seen, hardware)) == []


def test_counts_only_without_debug_flags(dgx):
    records = dgx[0]
    verbose = "slurmd: Gres Name=gpu Type=nvidia_h100_80gb_hbm3 Count=7 Flags=HAS_FILE,HAS_TYPE,ENV_NVML\n"
    assert gres_mismatch(records, verbose) == [
        "GPU type nvidia_h100_80gb_hbm3: gres.conf/facts expect 8, slurmd -G detects 7"]
    assert gres_mismatch(records, verbose.replace("Count=7", "Count=8")) == []


def test_no_gres_line_at_all_says_how_to_get_them(dgx):
    assert gres_mismatch(dgx[0], "slurmd: debug:  Log file re-opened\n") == [
        "GPU type nvidia_h100_80gb_hbm3: gres.conf/facts expect 8, slurmd -G detects 0",
        "slurmd -G printed no Gres line: it prints them with DebugFlags=Gres in slurm.conf, or with -v"]


def test_other_gres_are_not_compared(dgx):
    records, hardware = dgx
    text = slurmd_g(records, hardware) + "slurmd: Gres Name=mps Type=(null) Count=800 ID=7959394 Links=(null) Flags=\n"
    assert gres_mismatch(records, text) == []
    extra = ["slurmd -G lists a GPU of type nvidia_h100_80gb_hbm3 at Index=%d with File=/dev/nvidia%d, which the "
             "facts do not have" % (i, i) for i in range(8)]
    assert gres_mismatch([], text) == [
        "GPU type nvidia_h100_80gb_hbm3: gres.conf/facts expect 0, slurmd -G detects 8", *extra]


@pytest.mark.parametrize("detected, message", [
    (42, r"^detected must be what slurmd -G printed or its parsed lines, got 42$"),
    ([{"name": "gpu"}], r"^detected must be what slurmd -G printed or its parsed lines"),
])
def test_gres_mismatch_refuses_what_it_cannot_read(detected, message):
    with pytest.raises(SlurmError, match=message):
        gres_mismatch([], detected)


def test_the_error_is_a_value_error():
    assert issubclass(_slurm_conf.SlurmError, ValueError)


@pytest.mark.parametrize("addr", ["fe80::1%eth0", "fe80::1%x\nNodeName=evil State=IDLE", "fe80::1%eth0 Gres=gpu:x:9"])
def test_an_ipv6_scope_is_no_address(addr):
    """Python reads any text after "%" as an IPv6 scope, blanks and newlines included."""
    with pytest.raises(SlurmError, match=r"^addr: give a host name or an IP address, got "):
        node_line("n1", hw(1, 2, 1), "", addr=addr)


@pytest.mark.parametrize("extra", [{"STATE": "DRAIN"}, {"GRES": "gpu:x:9"}, {"Nodename": "x"},
                                   {"Weight": 1, "WEIGHT": 2}])
def test_extra_keys_are_compared_as_slurm_does_without_case(extra):
    with pytest.raises(SlurmError, match=r"^extra: '[A-Za-z]+' is not a node parameter this line may add"):
        node_line("n1", hw(1, 2, 1), "", extra=extra)


@pytest.mark.parametrize("kind", ["nvidia_a100(sxm4)", "a(b)"])
def test_a_type_with_parentheses_is_refused(kind):
    """scontrol prints a node's Gres as gpu:<type>:<count>(S:0-1): a type with a parenthesis would read back wrong."""
    with pytest.raises(SlurmError, match=r"^GPU 0: "):
        node_gres(node(gpu(0, name=kind)))
    with pytest.raises(SlurmError, match=r"^gres: "):
        node_line("n1", hw(1, 2, 1), "gpu:%s:1" % kind)


def test_a_descending_cpu_range_is_refused():
    with pytest.raises(SlurmError, match=r"^GPU 0: cpu_affinity must be a cpulist such as 0-55,112-167 \(each range "
                                         r"ascending\), got '5-3'$"):
        cores("5-3", hw(1, 8, 1), "GPU 0")


@pytest.mark.parametrize("cpus, hardware", [
    ("0-111", hw(2, 56, 2)),  # hyperthread siblings side by side (0 and 1 share a core): not Linux's usual numbering
    ("0-55,112-167", dict(hw(2, 56, 2), cpus=200)),  # CPUs that are not sockets x cores x threads (some offline)
    ("0-55", hw(2, 56, 2)),  # only the first thread of each core
])
def test_cores_are_not_guessed_where_the_numbering_does_not_fit(cpus, hardware):
    assert cores(cpus, hardware) is None


def test_a_huge_cpu_range_is_not_expanded():
    assert cores("0-%d" % 10 ** 12, hw(2, 56, 2)) is None  # off the node, answered without a set of 10**12 CPUs


def test_counts_slurm_cannot_hold_are_refused():
    with pytest.raises(SlurmError, match=r"^hardware: cpus must be at most 65535, got 99999999999999999999$"):
        slurmd_hardware("NodeName=x CPUs=99999999999999999999 Boards=1 SocketsPerBoard=1 CoresPerSocket=4 "
                        "ThreadsPerCore=1 RealMemory=10")


def pci(index, driver="nvidia", kind="gpu"):
    return {"pci_bus_id": bus(index), "kind": kind, "driver": driver, "vendor_id": "0x10de"}


@pytest.mark.parametrize("devices", [
    None,  # the pci subset was not gathered
    [],
    [pci(0), pci(1)],
    [dict(pci(0), pci_bus_id=bus(0, nvml_style=True)), pci(1)],
    [pci(0), pci(1), pci(2, driver="vfio-pci")],  # handed to a virtual machine: not this node's
    [pci(0), pci(1), pci(2, driver=None)],  # no driver bound
    [pci(0), pci(1), pci(8, kind="nvswitch")],
])
def test_gpus_on_the_bus_that_nvml_lists(devices):
    assert len(node_gres(node(gpu(0), gpu(1), pci_devices=devices))) == 2


def test_a_gpu_the_driver_holds_but_nvml_does_not_list_is_refused():
    """A GPU that dropped out of NVML (but not off the bus) would quietly leave slurm.conf with one GPU fewer."""
    facts = node(gpu(0), gpu(1), pci_devices=[pci(0), pci(1), pci(2), pci(3, driver="vfio-pci")])
    with pytest.raises(SlurmError, match=r"^the nvidia driver holds 1 GPU\(s\) that NVML does not list "
                                         r"\(0000:03:00.0\): slurmd would not detect them"):
        node_gres(facts)


def test_a_gpu_count_that_is_no_number_is_refused():
    with pytest.raises(SlurmError, match=r"^gpu_count is True but the facts list 1 GPUs$"):
        node_gres(node(gpu(0), gpu_count=True))


# --------------------------------------------------------------------------- GPUs shared: gres/shard and gres/mps


def shares_g(records, name="shard", count=None):
    """The lines slurmd -G logs (DebugFlags=Gres) for the shares of the records, after the GPUs' own."""
    line = ("slurmd: Gres Name=%s Type=%s Count=%d Index=%s ID=7696487 File=%s Cores=%s CoreCnt=224 Links=(null) "
            "Flags=HAS_FILE,HAS_TYPE,SHARED\n")
    return "".join(line % (name, r["type"], r["count"] if count is None else count, r["file"][len("/dev/nvidia"):],
                           r["file"], r["cores"]) for r in records if r["name"] == name)


def test_shards_on_every_gpu_of_a_dgx_h100(facts_of):
    hardware = slurmd_hardware(DGX_C)
    records = node_gres(facts_of("dgx-h100"), hardware, shards_per_gpu=4)
    gpus, shards = records[:8], records[8:]
    assert gpus == node_gres(facts_of("dgx-h100"), hardware)
    assert [(r["name"], r["count"], r["file"], r["type"]) for r in shards] == [
        ("shard", 4, "/dev/nvidia%d" % i, H100) for i in range(8)]
    assert gres_summary(records) == "gpu:%s:8,shard:32" % H100
    assert node_line("dgx01", hardware, records).split()[-2] == "Gres=gpu:%s:8,shard:32" % H100
    shard_lines = ["Name=shard Count=4 File=/dev/nvidia%d" % i for i in range(8)]
    # With AutoDetect=nvml too: Slurm matches each line's File to the GPU it detects.
    assert gres_conf_lines(records, True) == ["AutoDetect=nvml", *shard_lines]
    written = gres_conf_lines(records, False)
    assert written[:9] == gres_conf_lines(gpus, False) and written[9:] == shard_lines


def test_mps_and_shards_together(facts_of):
    records = node_gres(facts_of("pcie-l40s"), slurmd_hardware(L40S_C), shards_per_gpu=1, mps=True)
    assert [(r["name"], r["count"], r["file"]) for r in records] == [
        ("gpu", 1, "/dev/nvidia0"), ("gpu", 1, "/dev/nvidia1"), ("shard", 1, "/dev/nvidia0"),
        ("shard", 1, "/dev/nvidia1"), ("mps", 100, "/dev/nvidia0"), ("mps", 100, "/dev/nvidia1")]
    assert gres_summary(records) == "gpu:nvidia_l40s:2,shard:2,mps:200"
    assert gres_conf_lines(records, True)[1:] == [
        "Name=shard Count=1 File=/dev/nvidia0", "Name=shard Count=1 File=/dev/nvidia1",
        "Name=mps Count=100 File=/dev/nvidia0", "Name=mps Count=100 File=/dev/nvidia1"]


def test_a_gpu_in_mig_mode_gets_no_shards(facts_of):
    """GPUs 0 and 1 of the DGX A100 are in MIG mode: their ten MIG devices stay whole GPUs of their own type, the six
    whole GPUs get the shards."""
    facts = facts_of("dgx-a100-mig")
    records = node_gres(facts, None, mig_minors(), shards_per_gpu=3, mps=True)
    shards = [r for r in records if r["name"] == "shard"]
    files = ["/dev/nvidia%d" % gpu["minor_number"] for gpu in facts["gpus"][2:]]
    assert [(r["index"], r["file"]) for r in shards] == list(zip(range(2, 8), files))
    assert gres_summary(records).endswith(",gpu:nvidia_a100-sxm4-80gb:6,shard:18,mps:600")
    assert gres_conf_lines(records, False)[17:23] == ["Name=shard Count=3 File=%s" % file for file in files]
    # A node whose every GPU is in MIG mode offers no shard at all.
    only_mig = [r for r in records if r["mig_index"] is not None]
    assert gres_summary(only_mig) == "gpu:nvidia_a100_1g.10gb:8,gpu:nvidia_a100_3g.40gb:1,gpu:nvidia_a100_2g.20gb:1"


def test_no_shards_leaves_the_records_as_they_were(facts_of):
    facts = facts_of("pcie-l40s")
    assert node_gres(facts, shards_per_gpu=0, mps=False) == node_gres(facts)


@pytest.mark.parametrize("shards", [-1, 129, 100000, 2.5, 4.0, "4", True, None, [4]])
def test_a_shard_count_that_is_no_count_is_refused(facts_of, shards):
    facts = facts_of("pcie-l40s")
    with pytest.raises(SlurmError, match=r"^shards_per_gpu must be a whole number from 0 \(no shards\) to 128, got "):
        node_gres(facts, shards_per_gpu=shards)


@pytest.mark.parametrize("mps", ["yes", 1, None])
def test_mps_must_be_a_boolean(facts_of, mps):
    with pytest.raises(SlurmError, match=r"^mps must be true \(gres/mps on every whole GPU\) or false, got "):
        node_gres(facts_of("pcie-l40s"), mps=mps)


@pytest.mark.parametrize("change, message", [
    ({"count": 0}, r"^records must be the list slurm_node_gres returns"),
    ({"count": True}, r"^records must be the list slurm_node_gres returns"),
    ({"file": "/dev/nvidia0,/dev/nvidia-caps/nvidia-cap1"}, r"^GPU 0: shard file '/dev/nvidia0,/dev/nvidia-caps/"),
    ({"file": None}, r"^GPU 0: shard file None is not a GPU's device path$"),
])
def test_a_shard_record_gres_conf_cannot_hold_is_refused(facts_of, change, message):
    records = node_gres(facts_of("pcie-l40s"), shards_per_gpu=2)
    records[2] = dict(records[2], **change)
    with pytest.raises(SlurmError, match=message):
        gres_conf_lines(records, True)


@pytest.fixture
def dgx_shards(facts_of):
    hardware = slurmd_hardware(DGX_C)
    return node_gres(facts_of("dgx-h100"), hardware, shards_per_gpu=4), hardware


def test_slurmd_giving_each_gpu_its_shards_agrees(dgx_shards):
    records, hardware = dgx_shards
    gpus = [r for r in records if r["name"] == "gpu"]
    assert parse_slurmd_gres(shares_g(records))[0] == {
        "name": "shard", "type": H100, "count": 4, "index": 0, "file": "/dev/nvidia0", "cores": "0-55", "links": None,
        "flags": ["HAS_FILE", "HAS_TYPE", "SHARED"]}
    assert gres_mismatch(records, slurmd_g(gpus, hardware) + shares_g(records)) == []
    # Without DebugFlags=Gres: the node's total.
    verbose = ("slurmd: Gres Name=gpu Type=%s Count=8 Flags=HAS_FILE,HAS_TYPE,ENV_NVML\n"
               "slurmd: Gres Name=shard Type=%s Count=32 Flags=HAS_TYPE,SHARED\n" % (H100, H100))
    assert gres_mismatch(records, verbose) == []
    assert gres_mismatch(records, verbose.replace("Count=32", "Count=24")) == [
        "shard: gres.conf/facts expect 32 in all, slurmd -G detects 24"]
    # A MIG device gets a share of Count=0, which is none.
    mig = "slurmd: Gres Name=shard Type=nvidia_a100_1g.10gb Count=0 ID=7696487 File=/dev/nvidia9,/dev/nvidia-caps/" \
          "nvidia-cap3,/dev/nvidia-caps/nvidia-cap4 Links=(null) Flags=HAS_FILE\n"
    assert gres_mismatch(records, slurmd_g(gpus, hardware) + shares_g(records) + mig) == []


def test_shards_slurmd_gives_otherwise_are_named(dgx_shards):
    records, hardware = dgx_shards
    gpus = [r for r in records if r["name"] == "gpu"]
    seen = shares_g(records).replace("Count=4 Index=3", "Count=2 Index=3")
    seen = "\n".join(line for line in seen.splitlines() if "File=/dev/nvidia7 " not in line) + "\n"
    seen += "slurmd: Gres Name=shard Type=%s Count=4 Index=8 ID=7696487 File=/dev/nvidia8 Links=(null) Flags=\n" % H100
    assert gres_mismatch(records, slurmd_g(gpus, hardware) + seen) == [
        "GPU 3 (/dev/nvidia3): shard Count=4 expected, slurmd -G detects 2",
        "GPU 7 (/dev/nvidia7): shard Count=4 expected, slurmd -G detects 0",
        "slurmd -G gives shard Count=4 to File=/dev/nvidia8, which gres.conf gives none"]
    assert gres_mismatch(records, slurmd_g(gpus, hardware)) == [
        "shard: gres.conf/facts expect 32 in all, slurmd -G detects 0"]
    # The GPUs themselves are compared as before, whatever the shares.
    assert gres_mismatch(records, slurmd_g(gpus[:7], hardware) + shares_g(records)) == [
        "GPU type nvidia_h100_80gb_hbm3: gres.conf/facts expect 8, slurmd -G detects 7",
        "GPU 7 (/dev/nvidia7): expected as type nvidia_h100_80gb_hbm3, but slurmd -G lists no GPU with this File"]


def test_mps_is_compared_where_the_records_hold_it(facts_of):
    hardware = slurmd_hardware(L40S_C)
    records = node_gres(facts_of("pcie-l40s"), hardware, mps=True)
    gpus = [r for r in records if r["name"] == "gpu"]
    assert gres_mismatch(records, slurmd_g(gpus, hardware) + shares_g(records, "mps")) == []
    assert gres_mismatch(records, slurmd_g(gpus, hardware) + shares_g(records, "mps", 50)) == [
        "GPU 0 (/dev/nvidia0): mps Count=100 expected, slurmd -G detects 50",
        "GPU 1 (/dev/nvidia1): mps Count=100 expected, slurmd -G detects 50"]


# --------------------------------------------------------------------------- The site's own script settings

ROLE_SCRIPTS = {"Prolog": "/etc/slurm/prolog.d/*", "Epilog": "/etc/slurm/epilog.d/*", "PrologFlags": "Alloc"}


def test_the_site_keys_are_the_script_settings_beside_the_roles():
    assert _slurm_conf.SITE_SCRIPT_KEYS == (
        "PrologSlurmctld", "EpilogSlurmctld", "TaskProlog", "TaskEpilog", "SrunProlog", "SrunEpilog",
        "HealthCheckProgram", "HealthCheckInterval", "HealthCheckNodeState")
    assert _slurm_conf.SCRIPT_KEYS == ("Prolog", "Epilog", "PrologFlags", *_slurm_conf.SITE_SCRIPT_KEYS)


@pytest.mark.parametrize("value, settings", [
    (None, {}),
    ({}, {}),
    ({"TaskProlog": "/usr/local/sbin/task-prolog"}, {"TaskProlog": "/usr/local/sbin/task-prolog"}),
    # Keys in any case, as Slurm reads them; written in Slurm's spelling.
    ({"prologslurmctld": "/opt/site/ctld-prolog", "EPILOGSLURMCTLD": "/opt/site/ctld-epilog",
      "srunprolog": "/opt/site/srun-prolog", "SrunEpilog": "/opt/site/srun-epilog", "taskepilog": "/opt/te"},
     {"PrologSlurmctld": "/opt/site/ctld-prolog", "EpilogSlurmctld": "/opt/site/ctld-epilog",
      "SrunProlog": "/opt/site/srun-prolog", "SrunEpilog": "/opt/site/srun-epilog", "TaskEpilog": "/opt/te"}),
    ({"HealthCheckProgram": "/usr/sbin/nhc", "healthcheckinterval": 300},
     {"HealthCheckProgram": "/usr/sbin/nhc", "HealthCheckInterval": "300"}),
    # An interval given as text (extra vars), the most Slurm keeps in 16 bits; node states in any case.
    ({"HealthCheckProgram": "/usr/sbin/nhc", "HealthCheckInterval": "65535", "HealthCheckNodeState": "idle,Cycle"},
     {"HealthCheckProgram": "/usr/sbin/nhc", "HealthCheckInterval": "65535", "HealthCheckNodeState": "IDLE,CYCLE"}),
    ({"HealthCheckProgram": "/usr/sbin/nhc", "HealthCheckInterval": 1,
      "HealthCheckNodeState": "ALLOC,ANY,CYCLE,IDLE,MIXED,NONDRAINED_IDLE"},
     {"HealthCheckProgram": "/usr/sbin/nhc", "HealthCheckInterval": "1",
      "HealthCheckNodeState": "ALLOC,ANY,CYCLE,IDLE,MIXED,NONDRAINED_IDLE"}),
    # A glob and the characters of real paths.
    ({"TaskProlog": "/etc/slurm/task.d/site-prolog_1.2+x@y=z:*"},
     {"TaskProlog": "/etc/slurm/task.d/site-prolog_1.2+x@y=z:*"}),
    ({"TaskProlog": "/" + "x" * 4094}, {"TaskProlog": "/" + "x" * 4094}),
])
def test_site_scripts_in_slurms_spelling(value, settings):
    assert site_scripts(value) == {"settings": settings, "problems": []}


@pytest.mark.parametrize("value, problem", [
    ([], "slurm_site_scripts must be a dict of slurm.conf's settings (PrologSlurmctld, "),
    ("TaskProlog=/x", "slurm_site_scripts must be a dict"),
    (nested(5000), "slurm_site_scripts must be a dict of slurm.conf's settings (PrologSlurmctld, EpilogSlurmctld, "
                   "TaskProlog, TaskEpilog, SrunProlog, SrunEpilog, HealthCheckProgram, HealthCheckInterval, "
                   "HealthCheckNodeState) and their values, got a list"),
    # Settings that are the role's own, or no setting at all.
    ({"Prolog": "/x"}, "slurm_site_scripts.Prolog is not a setting the role writes for a site; give PrologSlurmctld, "),
    ({"PrologFlags": "Contain"}, "slurm_site_scripts.PrologFlags is not a setting"),
    ({"SlurmctldHost": "evil"}, "slurm_site_scripts.SlurmctldHost is not a setting"),
    ({"TaskProlog\nProlog": "/x"}, "slurm_site_scripts.'TaskProlog\\nProlog' is not a setting"),
    ({"Task Prolog": "/x"}, "slurm_site_scripts.'Task Prolog' is not a setting"),
    ({7: "/x"}, "slurm_site_scripts.7 is not a setting"),
    ({None: "/x"}, "slurm_site_scripts.null is not a setting"),
    ({"k" * 100000: "/x"}, "slurm_site_scripts.'kkkkkkkkkk"),
    ({"TaskProlog": "/a", "taskprolog": "/b"}, "slurm_site_scripts.TaskProlog is given twice"),
    # Paths: absolute, nothing Slurm's parser reads otherwise.
    ({"TaskProlog": "task-prolog"}, "slurm_site_scripts.TaskProlog must be an absolute path (at most 4095 "
                                    "characters) with no white space, quote, #, backslash or control character "
                                    "(slurm.conf would read those otherwise), got 'task-prolog'"),
    ({"TaskProlog": "/"}, "got '/'"),
    ({"TaskProlog": ""}, "got ''"),
    ({"TaskProlog": "/usr/local/sbin/task prolog"}, "slurm_site_scripts.TaskProlog must be an absolute path"),
    ({"TaskEpilog": "/x\nNodeName=evil"}, "slurm_site_scripts.TaskEpilog must be an absolute path"),
    ({"TaskEpilog": "/x\x00y"}, "slurm_site_scripts.TaskEpilog must be an absolute path"),
    ({"SrunProlog": '/x"y'}, "slurm_site_scripts.SrunProlog must be an absolute path"),
    ({"SrunProlog": "/x'y"}, "slurm_site_scripts.SrunProlog must be an absolute path"),
    ({"SrunEpilog": "/x#y"}, "slurm_site_scripts.SrunEpilog must be an absolute path"),
    ({"PrologSlurmctld": "/x\\"}, "slurm_site_scripts.PrologSlurmctld must be an absolute path"),
    ({"EpilogSlurmctld": "/x\ty"}, "slurm_site_scripts.EpilogSlurmctld must be an absolute path"),
    ({"EpilogSlurmctld": "/x\x1b[31m"}, "slurm_site_scripts.EpilogSlurmctld must be an absolute path"),
    ({"EpilogSlurmctld": "/x\u2028y"}, "slurm_site_scripts.EpilogSlurmctld must be an absolute path"),
    ({"TaskProlog": "/" + "x" * 4095}, "got '/xxxxxxxxx"),
    ({"TaskProlog": "/" + "x" * 1000000}, "got '/xxxxxxxxx"),
    ({"TaskProlog": ["/x"]}, "got a list"),
    ({"TaskProlog": None}, "got null"),
    ({"TaskProlog": {"path": "/x"}}, "got a dict"),
    ({"TaskProlog": b"/x"}, "got a bytes"),
    ({"TaskProlog": nested(5000)}, "got a list"),
    ({"TaskProlog": "{{ lookup('pipe', 'id') }}"}, "slurm_site_scripts.TaskProlog must be an absolute path"),
    # The interval: seconds Slurm keeps in 16 bits, never a bool.
    ({"HealthCheckProgram": "/nhc", "HealthCheckInterval": True},
     "slurm_site_scripts.HealthCheckInterval must be the seconds between two runs of HealthCheckProgram, a whole "
     "number from 0 to 65535, got a bool"),
    ({"HealthCheckProgram": "/nhc", "HealthCheckInterval": -1}, "from 0 to 65535, got -1"),
    ({"HealthCheckProgram": "/nhc", "HealthCheckInterval": 65536}, "from 0 to 65535, got 65536"),
    ({"HealthCheckProgram": "/nhc", "HealthCheckInterval": huge()}, "from 0 to 65535, got an int"),
    ({"HealthCheckProgram": "/nhc", "HealthCheckInterval": 2 ** 64}, "from 0 to 65535, got an int"),
    ({"HealthCheckProgram": "/nhc", "HealthCheckInterval": 300.0}, "got a float"),
    ({"HealthCheckProgram": "/nhc", "HealthCheckInterval": "5m"}, "got '5m'"),
    ({"HealthCheckProgram": "/nhc", "HealthCheckInterval": "INFINITE"}, "got 'INFINITE'"),
    ({"HealthCheckProgram": "/nhc", "HealthCheckInterval": "9" * 5000}, "got '999999"),
    ({"HealthCheckProgram": "/nhc", "HealthCheckInterval": "300\n"}, "got '300\\n'"),
    # The node states: Slurm's words only (it ignores others, so the program would run in any state).
    ({"HealthCheckProgram": "/nhc", "HealthCheckInterval": 60, "HealthCheckNodeState": "BUSY"},
     "slurm_site_scripts.HealthCheckNodeState must be one or more of ALLOC, ANY, CYCLE, IDLE, MIXED, "
     "NONDRAINED_IDLE joined by commas, got 'BUSY'"),
    ({"HealthCheckProgram": "/nhc", "HealthCheckInterval": 60, "HealthCheckNodeState": "IDLE,,CYCLE"}, "got 'IDLE,,"),
    ({"HealthCheckProgram": "/nhc", "HealthCheckInterval": 60, "HealthCheckNodeState": "IDLE, CYCLE"}, "got 'IDLE, "),
    ({"HealthCheckProgram": "/nhc", "HealthCheckInterval": 60, "HealthCheckNodeState": ""}, "got ''"),
    ({"HealthCheckProgram": "/nhc", "HealthCheckInterval": 60, "HealthCheckNodeState": ["IDLE"]}, "got a list"),
    ({"HealthCheckProgram": "/nhc", "HealthCheckInterval": 60, "HealthCheckNodeState": "IDLE," * 100000},
     "got 'IDLE,IDLE,"),
    # Slurm does nothing with one of them alone.
    ({"HealthCheckProgram": "/usr/sbin/nhc"},
     "slurm_site_scripts.HealthCheckProgram needs slurm_site_scripts.HealthCheckInterval (seconds, at least 1): "
     "Slurm runs the program only with an interval"),
    ({"HealthCheckProgram": "/usr/sbin/nhc", "HealthCheckInterval": 0},
     "slurm_site_scripts.HealthCheckInterval must be at least 1 with HealthCheckProgram"),
    ({"HealthCheckInterval": 300},
     "slurm_site_scripts.HealthCheckInterval needs slurm_site_scripts.HealthCheckProgram: Slurm does nothing with it "
     "alone"),
    ({"HealthCheckNodeState": "IDLE"}, "slurm_site_scripts.HealthCheckNodeState needs"),
])
def test_site_scripts_problems_name_the_key_and_what_is_allowed(value, problem):
    checked = site_scripts(value)
    assert any(problem in found for found in checked["problems"]), checked["problems"]
    assert all(found.startswith("slurm_site_scripts") and len(found) < 600 for found in checked["problems"])


def test_every_problem_is_said_at_once():
    checked = site_scripts({"TaskProlog": "relative", "SrunEpilog": "/ok", "Bogus": 1, "HealthCheckInterval": 5})
    assert checked["settings"] == {"SrunEpilog": "/ok", "HealthCheckInterval": "5"}
    assert [problem.split(" ", 1)[0] for problem in checked["problems"]] == [
        "slurm_site_scripts.TaskProlog", "slurm_site_scripts.Bogus", "slurm_site_scripts.HealthCheckInterval"]


def test_thousands_of_problems_are_a_bounded_message():
    """The preflight joins the problems into its failure: a dict of thousands of unknown keys (a variable that is some
    other dict) gives the first ten and a count, not a message of megabytes."""
    checked = site_scripts({"Key%d" % n: "x" for n in range(5000)})
    assert len(checked["problems"]) == 11 and checked["problems"][-1] == "slurm_site_scripts: and 4990 more problems"
    assert checked["problems"][0].startswith("slurm_site_scripts.Key0 is not a setting")
    assert len("; ".join(checked["problems"])) < 5000


HAND_WRITTEN = ("ClusterName=gpu\nProlog=/etc/slurm/prolog.d/*\nEpilog=/etc/slurm/epilog.d/*\nPrologFlags=Alloc\n"
                "taskprolog=/usr/local/sbin/task-prolog\nHealthCheckProgram=/usr/sbin/nhc HealthCheckInterval=300\n"
                "HealthCheckNodeState=idle,cycle\n")
SITE = {"TaskProlog": "/usr/local/sbin/task-prolog", "HealthCheckProgram": "/usr/sbin/nhc",
        "HealthCheckInterval": "300", "HealthCheckNodeState": "IDLE,CYCLE"}


def test_a_hand_written_slurm_conf_keeps_the_sites_settings_that_slurm_site_scripts_gives():
    assert foreign_scripts(HAND_WRITTEN, {**ROLE_SCRIPTS, **SITE}) == []
    # One the site's variable lacks, or gives otherwise, is named, in the file's order and Slurm's spelling.
    less = {key: value for key, value in SITE.items() if key != "TaskProlog"}
    assert foreign_scripts(HAND_WRITTEN, {**ROLE_SCRIPTS, **less}) == ["TaskProlog=/usr/local/sbin/task-prolog"]
    assert foreign_scripts(HAND_WRITTEN, ROLE_SCRIPTS) == [
        "TaskProlog=/usr/local/sbin/task-prolog", "HealthCheckProgram=/usr/sbin/nhc", "HealthCheckInterval=300",
        "HealthCheckNodeState=idle,cycle"]
    assert foreign_scripts(HAND_WRITTEN, {**ROLE_SCRIPTS, **SITE, "HealthCheckInterval": "60"}) == [
        "HealthCheckInterval=300"]


@pytest.mark.parametrize("line, found", [
    ("PrologSlurmctld=/opt/ctld-prolog", "PrologSlurmctld=/opt/ctld-prolog"),
    ("epilogslurmctld = /opt/ctld-epilog", "EpilogSlurmctld=/opt/ctld-epilog"),
    ("TASKEPILOG=/opt/te", "TaskEpilog=/opt/te"),
    ('SrunProlog="/opt/srun prolog"', "SrunProlog=/opt/srun prolog"),
    ("ClusterName=gpu SrunEpilog=/opt/se", "SrunEpilog=/opt/se"),
    ("HealthCheckNodeState=ANY", "HealthCheckNodeState=ANY"),
    ("HealthCheckInterval=0", "HealthCheckInterval=0"),
])
def test_each_site_setting_of_a_hand_written_slurm_conf_is_looked_for(line, found):
    assert foreign_scripts("ClusterName=gpu\n%s\n" % line, ROLE_SCRIPTS) == [found]


def test_the_roles_own_file_is_rewritten_not_refused_for_the_sites_settings():
    """A slurm.conf that carries the role's mark line was written from slurm_site_scripts: a changed or removed site
    setting rewrites it. Its Prolog, Epilog, PrologFlags and Include are still looked at."""
    marked = HAND_WRITTEN + _slurm_conf.SITE_MARK + "\n"
    assert foreign_scripts(marked, ROLE_SCRIPTS) == []
    assert foreign_scripts(marked, {**ROLE_SCRIPTS, **SITE, "TaskProlog": "/new"}) == []
    assert foreign_scripts("  %s  \n%s" % (_slurm_conf.SITE_MARK, HAND_WRITTEN), ROLE_SCRIPTS) == []
    marked += "Prolog=/site/prolog\nInclude /etc/slurm/site.conf\n"
    assert foreign_scripts(marked, ROLE_SCRIPTS) == ["Prolog=/site/prolog", "Include /etc/slurm/site.conf"]


@pytest.mark.parametrize("text", [
    # The mark inside another line, cut, or in another case is no mark.
    HAND_WRITTEN + "ClusterName=gpu " + _slurm_conf.SITE_MARK + "\n",
    HAND_WRITTEN + _slurm_conf.SITE_MARK[:-1] + "\n",
    HAND_WRITTEN + _slurm_conf.SITE_MARK.lower() + "\n",
    HAND_WRITTEN + "#" + _slurm_conf.SITE_MARK + "\n",
])
def test_only_the_mark_on_a_line_of_its_own_is_the_roles(text):
    assert "TaskProlog=/usr/local/sbin/task-prolog" in foreign_scripts(text, ROLE_SCRIPTS)


def test_an_include_is_named_with_the_site_settings_too():
    text = "Include /etc/slurm/health.conf\nTaskProlog=/opt/tp\n"
    assert foreign_scripts(text, {**ROLE_SCRIPTS, "TaskProlog": "/opt/tp"}) == ["Include /etc/slurm/health.conf"]
    assert foreign_scripts(text, ROLE_SCRIPTS) == ["Include /etc/slurm/health.conf", "TaskProlog=/opt/tp"]


def test_what_site_scripts_gives_passes_the_check_of_a_file_that_holds_it():
    """The settings site_scripts gives back compare equal with the file that Slurm would read the same way."""
    settings = site_scripts({"taskprolog": "/usr/local/sbin/task-prolog", "HealthCheckProgram": "/usr/sbin/nhc",
                             "HealthCheckInterval": 300, "HealthCheckNodeState": "Idle,Cycle"})["settings"]
    assert settings == SITE
    assert foreign_scripts(HAND_WRITTEN, {**ROLE_SCRIPTS, **settings}) == []
