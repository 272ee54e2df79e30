from __future__ import annotations

import re

import pytest

from ansible_collections.accelops.gpu.plugins.plugin_utils import _cuda_compat
from ansible_collections.accelops.gpu.plugins.plugin_utils._cuda_compat import (
    COMPAT,
    CompatError,
    cuda_max_for_driver,
    cuda_min_driver,
    horovod_limit,
    tensorflow_build,
    torch_cuda_channel,
)


# Published pairs from NVIDIA's release notes, Table 3 "CUDA Toolkit and Corresponding Driver Versions" (Linux x86_64).
@pytest.mark.parametrize("cuda, driver", [
    ("11.0", "450.51.05"),  # 11.0.2, the GA release
    ("11.0.1", "450.51.06"),  # its Update 1 (released as 11.0.3)
    ("11.1", "455.23"),  # printed without the last part
    ("11.1.1", "455.32"),
    ("11.2", "460.27.03"),
    ("11.2.2", "460.32.03"),
    ("11.3.1", "465.19.01"),
    ("11.4", "470.42.01"),
    ("11.4.1", "470.57.02"),
    ("11.4.3", "470.82.01"),
    ("11.4.4", "470.82.01"),
    ("11.5.2", "495.29.05"),
    ("11.6", "510.39.01"),
    ("11.6.1", "510.47.03"),
    ("11.7", "515.43.04"),
    ("11.7.1", "515.48.07"),
    ("11.8", "520.61.05"),
    ("12.0", "525.60.13"),
    ("12.0.1", "525.85.12"),
    ("12.1", "530.30.02"),
    ("12.1.1", "530.30.02"),
    ("12.2", "535.54.03"),
    ("12.2.1", "535.86.09"),
    ("12.2.2", "535.104.05"),
    ("12.3", "545.23.06"),
    ("12.3.1", "545.23.08"),
    ("12.4", "550.54.14"),
    ("12.4.0", "550.54.14"),
    ("12.4.1", "550.54.15"),
    ("12.5", "555.42.02"),
    ("12.5.1", "555.42.06"),
    ("12.6", "560.28.03"),
    ("12.6.2", "560.35.03"),
    ("12.6.3", "560.35.05"),
    ("12.8", "570.26"),
    ("12.8.1", "570.124.06"),
    ("12.9", "575.51.03"),
    ("12.9.1", "575.57.08"),
    ("13.0", "580.65.06"),
    ("13.0.1", "580.82.07"),
    ("13.0.2", "580.95.05"),
    ("13.1", "590.44.01"),
    ("13.1.1", "590.48.01"),
    ("13.2", "595.45.04"),
    ("13.2.2", "595.71.05"),
    ("13.3", "610.43.02"),  # Table 3 of the 13.3 notes: GA and Update 1 both >= 610.43.02
    ("13.3.0", "610.43.02"),
    ("13.3.1", "610.43.02"),
    (12.4, "550.54.14"),  # an unquoted YAML float
])
def test_cuda_min_driver_toolkit(cuda, driver):
    assert cuda_min_driver(cuda) == driver
    assert cuda_min_driver(cuda, compat="toolkit") == driver


# Table 2 "CUDA Toolkit and Minimum Required Driver Version for CUDA Minor Version Compatibility".
@pytest.mark.parametrize("cuda, driver", [
    ("11.8", "450.80.02"),
    ("12.0", "525.60.13"),
    ("12.4.1", "525.60.13"),
    ("12.9", "525.60.13"),
    ("13.0", "580"),
    ("13.2", "580"),
    ("13.3.1", "580"),
])
def test_cuda_min_driver_minor_compat(cuda, driver):
    assert cuda_min_driver(cuda, compat="minor") == driver


@pytest.mark.parametrize("driver, cuda", [
    ("450.80.02", "11.0"),
    ("455.23.05", "11.1"),  # 455.23 as printed: 455.23.05 meets it
    ("460.32.03", "11.2"),
    ("470.82.01", "11.4"),  # the R470 long-term branch: Kepler-era fleets
    ("470.256.02", "11.4"),
    ("510.47.03", "11.6"),
    ("515.105.01", "11.7"),
    ("520.61.05", "11.8"),
    ("525.60.13", "12.0"),
    ("525.147.05", "12.0"),
    ("535.104.05", "12.2"),
    ("550.54.14", "12.4"),
    ("550.54.15", "12.4"),
    ("555.42.01", "12.4"),  # one below 12.5 GA
    ("560.35.03", "12.6"),
    ("570.25", "12.6"),  # 570.25 < 570.26
    ("570.26", "12.8"),
    ("570.124.06", "12.8"),  # 124 > 26 as numbers, although "124" < "26" as strings
    ("570.195.03", "12.8"),
    ("575.57.08", "12.9"),
    ("580.65.06", "13.0"),
    ("580.82.07", "13.0"),
    ("590.48.01", "13.1"),
    ("595.45.04", "13.2"),
    ("610.43.01", "13.2"),  # one below 13.3 GA
    ("610.43.02", "13.3"),
    ("610.99.99", "13.3"),  # a later driver of the newest branch in the table
    (580, "12.9"),  # an int: 580 < 580.65.06
])
def test_cuda_max_for_driver(driver, cuda):
    assert cuda_max_for_driver(driver) == cuda


@pytest.mark.parametrize("cuda, channel", [
    ("11.8", "cu118"),
    ("12.1", "cu121"),
    ("12.4", "cu124"),
    ("12.4.1", "cu124"),
    ("12.5", "cu124"),  # no cu125 channel: the newest not newer than 12.5
    ("12.6", "cu126"),
    ("12.8", "cu128"),
    ("12.9", "cu129"),
    ("13.0", "cu130"),
    ("13.1", "cu130"),
    ("13.2", "cu132"),
    ("13.3", "cu132"),  # no cu133 channel: the newest not newer than 13.3
])
def test_torch_cuda_channel_without_torch(cuda, channel):
    assert torch_cuda_channel(cuda) == channel


@pytest.mark.parametrize("cuda, torch, channel", [
    ("12.1", "2.1.2", "cu121"),
    ("12.4", "2.3.1", "cu121"),  # 2.3 has no cu124
    ("12.4", "2.4.0", "cu124"),
    ("12.8", "2.5.1", "cu124"),  # a cu124 wheel runs on a driver for 12.8
    ("12.6", "2.6.0", "cu126"),
    ("12.8", "2.7.1", "cu128"),
    ("12.9", "2.7.1+cu126", "cu128"),  # the local part of the version is ignored
    ("12.9", "2.8.0", "cu129"),
    ("13.0", "2.8.0", "cu129"),
    ("13.0", "2.9.1", "cu130"),
    ("12.9", "2.10.0", "cu128"),
    ("13.2", "2.11.0", "cu130"),
    ("12.8", "2.12.0", "cu126"),  # 2.12 dropped cu128
    ("13.2", "2.12.0", "cu132"),
    ("13.1", "2.13", "cu130"),
    ("13.2", "2.13.0", "cu132"),
    ("11.8", "2.7.0", "cu118"),
])
def test_torch_cuda_channel_with_torch(cuda, torch, channel):
    assert torch_cuda_channel(cuda, torch=torch) == channel


@pytest.mark.parametrize("cuda, torch, channel", [
    ("12.4", "2.13.0", "cu126"),  # no channel up to 12.4: the nearest newer CUDA 12 one
    ("12.2", "2.8.0", "cu126"),  # cu126, cu128, cu129 all run; the nearest to the driver's CUDA
    ("12.8", "2.12.0", "cu126"),
    ("13.0", "2.13.0", "cu130"),  # a channel up to the driver's CUDA wins over the newer cu132
    ("13.0", "2.5.1", "cu124"),  # older majors still fit
    ("12.4", "2.5.1", "cu124"),
    ("12.0", None, "cu118"),
    ("12.0", "2.13.0", "cu126"),
])
def test_torch_cuda_channel_minor_compat(cuda, torch, channel):
    assert torch_cuda_channel(cuda, torch=torch, compat="minor") == channel


def test_torch_cuda_channel_minor_compat_keeps_the_major():
    message = (r"^torch 2\.13\.0 has no wheel for CUDA 11\.8: its channels are cu126, cu130, cu132; "
               r"nearest: cu126 \(CUDA 12\.6\)$")
    with pytest.raises(CompatError, match=message):
        torch_cuda_channel("11.8", torch="2.13.0", compat="minor")
    with pytest.raises(CompatError, match=r"^compat must be one of toolkit, minor, got 'major'$"):
        torch_cuda_channel("12.4", compat="major")


@pytest.mark.parametrize("cuda, torch, channel", [
    ("12.4", "2.5.1", "cu124"),
    ("12.8", "2.7.1", "cu128"),
    ("13.0", "2.9.0", "cu130"),
    ("12.4", None, "cu124"),
])
def test_torch_cuda_channel_exact(cuda, torch, channel):
    assert torch_cuda_channel(cuda, torch=torch, exact=True) == channel


@pytest.mark.parametrize("version, build", [
    ("2.14.0", {"cuda": "11.8", "cudnn": "8.7"}),
    ("2.15.0", {"cuda": "12.2", "cudnn": "8.9"}),
    ("2.15.1", {"cuda": "12.2", "cudnn": "8.9"}),
    ("2.16.1", {"cuda": "12.3", "cudnn": "8.9"}),
    ("2.17.0", {"cuda": "12.3", "cudnn": "8.9"}),
    ("2.18.0", {"cuda": "12.5", "cudnn": "9.3"}),
    ("2.19.0", {"cuda": "12.5", "cudnn": "9.3"}),
    ("2.20.0", {"cuda": "12.5", "cudnn": "9.3"}),
    ("2.21.0", {"cuda": "12.5", "cudnn": "9.3"}),
    ("2.16", {"cuda": "12.3", "cudnn": "8.9"}),
])
def test_tensorflow_build(version, build):
    assert tensorflow_build(version) == build


def test_tensorflow_build_returns_a_copy():
    tensorflow_build("2.18.0")["cuda"] = "changed"
    assert tensorflow_build("2.18.0") == {"cuda": "12.5", "cudnn": "9.3"}


@pytest.mark.parametrize("horovod, framework, below", [
    # Horovod 0.28.1, its newest release, and every older one: torch before 2.1, tensorflow before 2.16.
    ("0.28.1", "torch", "2.1"),
    ("0.28.1", "tensorflow", "2.16"),
    ("0.28.0", "torch", "2.1"),
    ("0.27.0", "tensorflow", "2.16"),
    ("0.28", "torch", "2.1"),
])
def test_horovod_limit(horovod, framework, below):
    limit = horovod_limit(horovod, framework)
    assert limit["below"] == below
    assert limit["why"].startswith("%s %s and newer " % (framework, below))


def test_horovod_releases_newer_than_the_table_have_no_known_limit():
    assert horovod_limit("0.29.0", "torch") == {}
    assert horovod_limit("1.0", "tensorflow") == {}


@pytest.mark.parametrize("call, message", [
    (lambda: horovod_limit("0.28.1", "mxnet"), r"^framework must be one of torch, tensorflow, got 'mxnet'$"),
    (lambda: horovod_limit("latest", "torch"), r"^horovod 'latest' is not a version: .* e\.g\. 0\.28\.1$"),
    # unknown CUDA: the nearest is the newest known release not newer than it, else the oldest
    (lambda: cuda_min_driver("12.7"), r"^CUDA 12\.7 is not in the table \(CUDA 11\.0 to 13\.3\); nearest: 12\.6$"),
    (lambda: cuda_min_driver("10.2"), r"^CUDA 10\.2 is not in the table .*; nearest: 11\.0$"),
    (lambda: cuda_min_driver("12.4.3"), r"^CUDA 12\.4\.3 is not a release the table knows: CUDA 12\.4 has 12\.4\.0, "
                                        r"12\.4\.1; nearest: 12\.4\.1 \(driver >= 550\.54\.15\); for a newer update, "
                                        r"where NVIDIA has published .*min_drivers=\{'12\.4\.3': '<driver>'\}$"),
    (lambda: cuda_min_driver("12.4", compat="major"), r"^compat must be one of toolkit, minor, got 'major'$"),
    # unparseable versions
    (lambda: cuda_min_driver("twelve"), r"^CUDA 'twelve' is not a version"),
    (lambda: cuda_min_driver("12"), r"^CUDA '12' is not a CUDA version: expected major\.minor"),
    (lambda: cuda_min_driver(None), r"^CUDA None is not a version"),
    (lambda: cuda_max_for_driver("550.54.15-1"), r"^driver '550\.54\.15-1' is not a version: .* e\.g\. 550\.54\.15$"),
    (lambda: cuda_max_for_driver(""), r"^driver '' is not a version"),
    (lambda: cuda_max_for_driver(True), r"^driver True is not a version"),
    (lambda: tensorflow_build("2.20.0rc0"), r"^tensorflow '2\.20\.0rc0' is not a version"),
    (lambda: torch_cuda_channel("12.4", torch="latest"), r"^torch 'latest' is not a version"),
    # driver older than any CUDA in the table
    (lambda: cuda_max_for_driver("440.118.02"),
     r"^driver 440\.118\.02 is older than any CUDA in the table: the oldest, CUDA 11\.0, needs >= 450\.51\.05; "
     r"nearest: CUDA 11\.0 \(driver >= 450\.51\.05\)$"),
    (lambda: cuda_max_for_driver("99.1"), r"^driver 99\.1 is older than any CUDA"),
    (lambda: cuda_max_for_driver("99.1", older=[]), r"^older must be a string .*, got \[\]$"),
    # older answers only for a driver older than the table: not for one that is not a version, nor one newer
    (lambda: cuda_max_for_driver("latest", older=""), r"^driver 'latest' is not a version"),
    (lambda: cuda_max_for_driver("615.20.01", older=""), r"^driver 615\.20\.01 is newer than the table"),
    # torch with no wheel for this CUDA
    (lambda: torch_cuda_channel("12.8", torch="2.5.1", exact=True),
     r"^torch 2\.5\.1 has no wheel for CUDA 12\.8: its channels are cu118, cu121, cu124; "
     r"nearest: cu124 \(CUDA 12\.4\)$"),
    (lambda: torch_cuda_channel("12.4", torch="2.8.0"),
     r"^torch 2\.8\.0 has no wheel for CUDA 12\.4: its channels are cu126, cu128, cu129; "
     r"nearest: cu126 \(CUDA 12\.6\)$"),
    (lambda: torch_cuda_channel("11.8", torch="2.12.0"),
     r"^torch 2\.12\.0 has no wheel for CUDA 11\.8: its channels are cu126, cu130, cu132; nearest: cu126"),
    (lambda: torch_cuda_channel("12.5", exact=True),
     r"^no torch release in the table has a wheel for CUDA 12\.5: the channels are cu118, cu121, cu124, cu126, cu128, "
     r"cu129, cu130, cu132; nearest: cu124 \(CUDA 12\.4\)$"),
    (lambda: torch_cuda_channel("11.7"), r"^no torch release .* CUDA 11\.7: .*; nearest: cu118 \(CUDA 11\.8\)$"),
    # releases not in the table
    (lambda: torch_cuda_channel("12.4", torch="2.0.1"), r"^torch 2\.0\.1 is not in the table \(torch 2\.1 to 2\.13\); "
                                                        r"nearest: 2\.1$"),
    (lambda: torch_cuda_channel("13.0", torch="2.14.0"), r"^torch 2\.14\.0 is not in the table .*; nearest: 2\.13$"),
    (lambda: tensorflow_build("2.13.1"), r"^tensorflow 2\.13\.1 is not in the table \(tensorflow 2\.14 to 2\.21\); "
                                         r"nearest: 2\.14$"),
    (lambda: tensorflow_build("2.22.0"), r"^tensorflow 2\.22\.0 is not in the table .*; nearest: 2\.21$"),
])
def test_errors_name_what_was_given_and_the_nearest_choice(call, message):
    with pytest.raises(CompatError, match=message):
        call()


def test_the_error_is_a_value_error():
    assert issubclass(CompatError, ValueError)


def test_versions_compare_as_numbers():
    assert _cuda_compat._newer((570, 124, 6), (570, 26))
    assert _cuda_compat._newer((2, 10), (2, 9))
    assert not _cuda_compat._newer((580,), (580, 0, 0))
    assert _cuda_compat._known("torch_channels")[-2:] == [(2, 12), (2, 13)]


def test_toolkit_drivers_never_go_down():
    releases = _cuda_compat._known("toolkit_driver")
    drivers = [_cuda_compat._key(d) for r in releases for d in COMPAT["toolkit_driver"][_cuda_compat._dotted(r)]]
    padded = [_cuda_compat._pad(d) for d in drivers]
    assert padded == sorted(padded)


def test_every_cuda_the_frameworks_name_is_in_the_driver_table():
    toolkits = set(COMPAT["toolkit_driver"])
    channels = {c for cs in COMPAT["torch_channels"].values() for c in cs if c != "cpu"}
    assert {_cuda_compat._dotted(_cuda_compat._channel_cuda(c)) for c in channels} <= toolkits
    assert {b["cuda"] for b in COMPAT["tensorflow_build"].values()} <= toolkits
    assert all("cpu" in cs for cs in COMPAT["torch_channels"].values())
    assert set(COMPAT["minor_compat_driver"]) == {r.split(".")[0] for r in toolkits}


def test_the_table_covers_what_docs_promise():
    assert min(COMPAT["toolkit_driver"], key=_cuda_compat._key) == "11.0"
    assert "13.0" in COMPAT["toolkit_driver"]
    assert max(COMPAT["toolkit_driver"], key=_cuda_compat._key) == "13.3"
    assert [_cuda_compat._dotted(k) for k in _cuda_compat._known("torch_channels")] == [
        "2.%d" % n for n in range(1, 14)]
    assert [_cuda_compat._dotted(k) for k in _cuda_compat._known("tensorflow_build")] == [
        "2.%d" % n for n in range(14, 22)]


# GPU architectures: each expectation is a published pair, its source named in COMPAT beside the row.
@pytest.mark.parametrize("gpu, name, first, last, modules", [
    ("3.7", "kepler", None, "470", "unsupported"),  # K80: R470 is Kepler's last branch
    ("6.0", "pascal", None, "580", "unsupported"),  # P100: "580 series will be the last ... Pascal"
    ("7.0", "volta", None, "580", "unsupported"),  # V100
    ("7.5", "turing", None, None, "supported"),  # T4: the oldest GPU of the open modules
    ("8.0", "ampere", "450", None, "supported"),  # A100: CUDA 11.0, R450
    ("8.9", "ada", "520", None, "supported"),  # L40S: CUDA 11.8, R520
    ("9.0", "hopper", "520", None, "supported"),  # H100
    ("10.0", "blackwell", "570", None, "required"),  # B200: CUDA 12.8, open modules only
    ("12.0", "blackwell", "570", None, "required"),  # RTX PRO 6000
    ("hopper", "hopper", "520", None, "supported"),
    ({"architecture": "volta", "compute_capability": "7.0"}, "volta", None, "580", "unsupported"),
    ({"architecture": "blackwell", "compute_capability": None}, "blackwell", "570", None, "required"),  # PCI scan
])
def test_gpu_architecture(gpu, name, first, last, modules):
    row = _cuda_compat.gpu_architecture(gpu)
    assert (row["name"], row["driver_branches"], row["open_kernel_modules"]) == (
        name, {"first": first, "last": last}, modules)


@pytest.mark.parametrize("gpu, first, last", [
    ("3.0", None, "10.2"),  # sm_30 removed in CUDA 11.0
    ("3.7", None, "11.8"),  # sm_37 removed in CUDA 12.0
    ("7.0", None, "12.9"),  # sm_70 removed in CUDA 13.0
    ("7.5", None, None),
    ("8.6", "11.1", None),
    ("8.9", "11.8", None),
    ("10.0", "12.8", None),
    ("10.3", "12.9", None),
    ("12.1", "12.9", None),
    ("volta", None, "12.9"),
    ("ampere", "11.0", None),  # an architecture alone: the widest range, sm_80 from 11.0
    ("blackwell", "12.8", None),
])
def test_gpu_architecture_cuda_range(gpu, first, last):
    assert _cuda_compat.gpu_architecture(gpu)["cuda"] == {"first": first, "last": last}


V100 = {"architecture": "volta", "compute_capability": "7.0", "index": 0}
H100 = {"architecture": "hopper", "compute_capability": "9.0", "index": 1}
RTX_PRO = {"architecture": "blackwell", "compute_capability": "12.0"}
K80 = {"architecture": "kepler", "compute_capability": "3.7"}


@pytest.mark.parametrize("gpus, choices, problems", [
    # The cases: branch 590 on V100 refused, 580 accepted.
    ([V100] * 8, {"driver_branch": "590"}, ["driver branch 590 does not support Volta: its last branch is 580; "
                                            "nearest: 580"]),
    ([V100] * 8, {"driver_branch": "580"}, []),
    ([V100], {"driver_branch": "580.95.05"}, []),
    ([K80], {"driver_branch": "535"}, ["driver branch 535 does not support Kepler: its last branch is 470; "
                                       "nearest: 470"]),
    ([RTX_PRO], {"driver_branch": "550"}, ["driver branch 550 does not support Blackwell: it needs branch 570 or "
                                           "newer; nearest: 570"]),
    ([V100], {"kernel_modules": "open"}, ["the open kernel modules do not support Volta (Turing and newer only); "
                                          "nearest: proprietary"]),
    ([RTX_PRO], {"kernel_modules": "proprietary"}, ["Blackwell runs with the open kernel modules only; nearest: open"]),
    ([H100], {"kernel_modules": "proprietary"}, []),
    # CUDA 13 no longer builds for Volta; Blackwell needs 12.8.
    ([V100], {"cuda": "13.0"}, ["CUDA 13.0 does not build for Volta (compute capability 7.0): the last CUDA that "
                                "builds for it is 12.9; nearest: 12.9"]),
    ([RTX_PRO], {"cuda": "12.4"}, ["CUDA 12.4 does not build for Blackwell (compute capability 12.0): it needs CUDA "
                                   "12.8 or newer; nearest: 12.8"]),
    ([K80], {"cuda": "12.4"}, ["CUDA 12.4 does not build for Kepler (compute capability 3.7): the last CUDA that "
                               "builds for it is 11.8; nearest: 11.8"]),
    ([K80], {"cuda": "11.4"}, []),  # the R470 fleet's CUDA
    # A V100 on driver 580 would get cu130 from torch 2.13, which carries no Volta code.
    ([V100], {"torch": "2.13.0", "torch_channel": "cu130"},
     ["torch 2.13.0's cu130 wheels carry no code for Volta (compute capability 7.0) (they carry sm_75, sm_80, sm_86, "
      "sm_90, sm_100, sm_120, compute_120); nearest: cu126"]),
    # A driver-570 Blackwell node would get cu126, which carries no Blackwell code.
    ([RTX_PRO], {"torch": "2.13.0", "torch_channel": "cu126"},
     ["torch 2.13.0's cu126 wheels carry no code for Blackwell (compute capability 12.0) (they carry sm_50, sm_60, "
      "sm_70, sm_75, sm_80, sm_86, sm_90); nearest: cu130"]),
    ([RTX_PRO], {"torch": "2.13.0", "torch_channel": "cpu"}, []),
    ([K80], {"tensorflow": "2.21.0"}, ["tensorflow 2.21.0's GPU build carries no code for Kepler (compute capability "
                                       "3.7) (it carries sm_60, sm_70, sm_80, sm_89, compute_90); nearest: the CPU "
                                       "build"]),
    ([RTX_PRO, H100], {"tensorflow": "2.21.0"}, []),  # compute_90 PTX runs on Blackwell through the driver's JIT
    # Mixed nodes: the intersection; each architecture named once.
    ([V100, H100, V100], {"driver_branch": "590", "cuda": "12.8"}, [
        "driver branch 590 does not support Volta: its last branch is 580; nearest: 580"]),
    ([V100, RTX_PRO], {"driver_branch": "570"}, []),
    # No choice serves both: said so, never a "nearest" that the other GPU refuses.
    ([V100, RTX_PRO], {"driver_branch": "590", "kernel_modules": "open"}, [
        "driver branch 590 does not support Volta: its last branch is 580; nearest: 580",
        "no kernel module flavour serves all of Volta, Blackwell: the proprietary modules only for Volta, the open "
        "ones only for Blackwell"]),
    ([K80, RTX_PRO], {"driver_branch": "470", "cuda": "12.8"}, [
        "no driver branch supports all of Kepler, Blackwell: Kepler up to 470, Blackwell from 570",
        "no CUDA release in the table builds for all of Kepler (compute capability 3.7), Blackwell (compute "
        "capability 12.0)"]),
    # The nearest branch suits every GPU: 580 for Volta and Hopper, not one that only one of them takes.
    ([V100, H100], {"driver_branch": "595"}, ["driver branch 595 does not support Volta: its last branch is 580; "
                                              "nearest: 580"]),
    ([V100, RTX_PRO], {"driver_branch": "550"}, ["driver branch 550 does not support Blackwell: it needs branch 570 "
                                                 "or newer; nearest: 570"]),
    # A compute capability the table lacks, of an architecture it knows, answers for the architecture.
    ([{"architecture": "blackwell", "compute_capability": "10.1"}], {"driver_branch": "550"}, [
        "driver branch 550 does not support Blackwell: it needs branch 570 or newer; nearest: 570"]),
    (7.0, {"driver_branch": "590"}, ["driver branch 590 does not support Volta: its last branch is 580; "
                                     "nearest: 580"]),  # one GPU, not in a list
    # GPUs the table does not know are left out; so is a node without GPUs.
    ([{"architecture": "rubin", "compute_capability": "13.0"}], {"driver_branch": "470"}, []),
    ([{"architecture": None, "compute_capability": None}], {"driver_branch": "470"}, []),
    ([], {"driver_branch": "590", "cuda": "13.0"}, []),
])
def test_gpu_support_problems(gpus, choices, problems):
    assert _cuda_compat.gpu_support_problems(gpus, **choices) == problems


@pytest.mark.parametrize("call, message", [
    (lambda: _cuda_compat.gpu_support_problems(["9.0"], kernel_modules="nouveau"),
     r"^kernel_modules must be one of open, proprietary, got 'nouveau'$"),
    (lambda: _cuda_compat.gpu_support_problems(["nine"], driver_branch="580"), None),
    (lambda: _cuda_compat.gpu_support_problems([{"compute_capability": "9"}], driver_branch="580"),
     r"^compute capability '9' is not one: expected major\.minor, e\.g\. 9\.0$"),
    (lambda: _cuda_compat.gpu_support_problems([{"architecture": "volta", "compute_capability": "9.0"}]),
     r"^compute capability 9\.0 is not one of volta's \(7\.0, 7\.2\)$"),
    (lambda: _cuda_compat.gpu_support_problems(["9.0"], driver_branch="latest"), r"^driver 'latest' is not a version"),
    (lambda: _cuda_compat.gpu_support_problems(["9.0"], torch="2.13.0", torch_channel="cu999"),
     r"^torch 2\.13\.0 has no 'cu999' channel: its channels are cu126, cu130, cu132, cpu$"),
    (lambda: _cuda_compat.gpu_support_problems(["9.0"], tensorflow="2.13.0"),
     r"^tensorflow 2\.13\.0 is not in the table \(tensorflow 2\.14 to 2\.21\); nearest: 2\.14$"),
    (lambda: _cuda_compat.gpu_architecture("rubin"), r"^'rubin' is not a GPU architecture or compute capability in "),
    # What is not a GPU is refused, never read as "no problem".
    (lambda: _cuda_compat.gpu_support_problems(["V100"], driver_branch="590"),
     r"^'V100' is not a GPU architecture name \(such as volta\) or a compute capability \(such as 7\.0\)$"),
    (lambda: _cuda_compat.gpu_support_problems(["sm_90"], driver_branch="590"), r"^'sm_90' is not a GPU architecture"),
    (lambda: _cuda_compat.gpu_support_problems([["7.0"]], driver_branch="590"), r"^\['7\.0'\] is not a GPU"),
    (lambda: _cuda_compat.gpu_support_problems({"gpus": []}, driver_branch="590"),
     r"^\{'gpus': \[\]\} is not a GPU: expected architecture and/or compute_capability"),
    (lambda: _cuda_compat.gpu_support_problems([True], driver_branch="590"), r"^True is not a GPU"),
    (lambda: _cuda_compat.gpu_support_problems(["\u0669.\u0660"], driver_branch="590"), r"is not a GPU architecture"),
    (lambda: _cuda_compat.gpu_support_problems(["9.0"], torch="2.13.0"), r"^torch and torch_channel go together"),
    (lambda: _cuda_compat.torch_cuda_channel("13.0", gpus=["volta"]), r"^gpus needs torch"),
])
def test_gpu_support_errors(call, message):
    if message is None:  # an unknown name is a GPU the table does not know: left out, not an error
        assert call() == []
        return
    with pytest.raises(CompatError, match=message):
        call()


@pytest.mark.parametrize("cuda, torch, gpus, channel", [
    ("13.0", "2.13.0", [V100], "cu126"),  # driver 580 on a V100: cu126, not cu130
    ("13.0", "2.13.0", [H100], "cu130"),
    ("13.0", "2.13.0", [H100, V100], "cu126"),  # the intersection
    ("13.2", "2.13.0", [RTX_PRO], "cu132"),
    ("12.8", "2.8.0", [V100], "cu128"),  # 2.8's cu128 kept sm_70
    ("12.8", "2.11.0", [V100], "cu126"),  # 2.11 dropped it again
    ("12.6", "2.7.1", [{"architecture": "pascal", "compute_capability": "6.1"}], "cu126"),
])
def test_torch_cuda_channel_for_the_gpus(cuda, torch, gpus, channel):
    assert torch_cuda_channel(cuda, torch=torch, compat="minor", gpus=gpus) == channel


@pytest.mark.parametrize("cuda, torch, gpus, nearest", [
    ("12.4", "2.5.1", [{"architecture": "blackwell"}], "torch 2.7 (cu128)"),  # newer torch, not an older one
    ("12.8", "2.7.1", [V100, RTX_PRO], "torch 2.8 (cu128)"),  # 2.8's CUDA 12.8 wheels carry both
    ("13.0", "2.13.0", [K80], "torch 2.7 (cu118)"),
])
def test_no_channel_names_the_nearest_torch_that_has_one(cuda, torch, gpus, nearest):
    with pytest.raises(CompatError, match=r"; nearest: %s$" % re.escape(nearest)):
        torch_cuda_channel(cuda, torch=torch, compat="minor", gpus=gpus)


def test_torch_cuda_channel_refuses_gpus_no_wheel_carries():
    with pytest.raises(CompatError, match=r"^torch 2\.13\.0 has no wheel for CUDA 12\.8 that runs on Blackwell "
                                          r"\(compute capability 12\.0\): its channels for them are cu130, cu132; "
                                          r"nearest: cu130 \(CUDA 13\.0\)$"):
        torch_cuda_channel("12.8", torch="2.13.0", compat="minor", gpus=[RTX_PRO])
    with pytest.raises(CompatError, match=r"^torch 2\.13\.0 has no CUDA wheel that runs on Kepler \(compute "
                                          r"capability 3\.7\): none of its channels cu126, cu130, cu132 carries"):
        torch_cuda_channel("13.0", torch="2.13.0", compat="minor", gpus=[K80])
    assert _cuda_compat.gpu_support_problems([V100], torch="2.7.1", torch_channel="cu128") == [
        "torch 2.7.1's cu128 wheels carry no code for Volta (compute capability 7.0) (they carry sm_75, sm_80, sm_86, "
        "sm_90, sm_100, sm_120, compute_120); nearest: cu126"]


def test_every_architecture_row_is_complete():
    capabilities = [c for row in COMPAT["architectures"].values() for c in row["compute_capabilities"]]
    assert sorted(capabilities, key=_cuda_compat._key) == sorted(COMPAT["sm_cuda"], key=_cuda_compat._key)
    assert len(set(capabilities)) == len(capabilities)
    for channel, rows in COMPAT["torch_targets"].items():
        assert [row[0] for row in rows] == sorted((row[0] for row in rows), key=_cuda_compat._key), channel
    for channels in COMPAT["torch_channels"].values():  # every CUDA channel of every torch release has targets
        for channel in channels:
            assert channel == "cpu" or channel in COMPAT["torch_targets"], channel
    assert set(COMPAT["tensorflow_targets"]) == set(COMPAT["tensorflow_build"])


def test_a_list_of_cuda_releases_is_checked_one_by_one():
    assert _cuda_compat.gpu_support_problems([V100], cuda=["12.8", "13.0", "13.2"]) == [
        "CUDA 13.0 does not build for Volta (compute capability 7.0): the last CUDA that builds for it is 12.9; "
        "nearest: 12.9",
        "CUDA 13.2 does not build for Volta (compute capability 7.0): the last CUDA that builds for it is 12.9; "
        "nearest: 12.9"]


@pytest.mark.parametrize("choices, problems", [
    # A B300 (10.3) needs CUDA 12.9, a B200 (10.0) 12.8: known only by its architecture, 12.8 is not refused.
    ({"cuda": "12.8"}, []),
    ({"cuda": "12.6"}, ["CUDA 12.6 does not build for Blackwell: it needs CUDA 12.8 or newer; nearest: 12.8"]),
    ({"torch": "2.13.0", "torch_channel": "cu130"}, []),
    ({"torch": "2.13.0", "torch_channel": "cu126"}, [
        "torch 2.13.0's cu126 wheels carry no code for Blackwell (they carry sm_50, sm_60, sm_70, sm_75, sm_80, sm_86, "
        "sm_90); nearest: cu130"]),
])
def test_an_architecture_alone_is_refused_only_what_none_of_its_chips_can_use(choices, problems):
    assert _cuda_compat.gpu_support_problems([{"architecture": "blackwell"}], **choices) == problems


@pytest.mark.parametrize("cudas, driver, expected", [
    (["12.4", "12.8"], "570.124.06", []),
    (["12.8", "13.0"], "570.124.06", [{"cuda": "13.0", "driver": "580.65.06"}]),
    (["12.8"], "570.26", []),  # exactly the minimum
    (["12.8"], "570.9", [{"cuda": "12.8", "driver": "570.26"}]),  # numbers, not strings: 570.9 < 570.26
    ("12.4.1", "550.54.14", [{"cuda": "12.4.1", "driver": "550.54.15"}]),  # one release, an update
    (["11.4"], "470.82.01", []),
])
def test_cuda_too_new(cudas, driver, expected):
    assert _cuda_compat.cuda_too_new(cudas, driver) == expected


@pytest.mark.parametrize("cuda, release", [
    ("12.4", "2.17"),  # 2.16 and 2.17 were built with CUDA 12.3
    ("12.5", "2.21"),
    ("13.0", "2.21"),
    ("11.8", "2.14"),
    ("11.4", ""),
    ("13.3", "2.21"),
])
def test_tensorflow_for_cuda(cuda, release):
    assert _cuda_compat.tensorflow_for_cuda(cuda) == release


def test_cuda_too_new_refuses_what_is_not_a_version():
    with pytest.raises(CompatError, match=r"^driver '' is not a version"):
        _cuda_compat.cuda_too_new(["12.4"], "")
    with pytest.raises(CompatError, match=r"^CUDA 12\.7 is not in the table"):
        _cuda_compat.cuda_too_new(["12.7"], "570.124.06")


@pytest.mark.parametrize("gpus, cuda, problems", [
    # Only the GPU the release does not build for is named; a release inside every GPU's range is no problem.
    (["3.0", "3.7"], "11.0", ["CUDA 11.0 does not build for Kepler (compute capability 3.0): the last CUDA that "
                              "builds for it is 10.2; nearest: none in the table"]),
    (["3.7", "5.0"], "11.8", []),
    # One GPU by name and one of the same architecture with its compute capability: one message, not two.
    (["7.0", "volta"], "13.0", ["CUDA 13.0 does not build for Volta (compute capability 7.0): the last CUDA that "
                                "builds for it is 12.9; nearest: 12.9"]),
])
def test_cuda_problems_name_only_what_fails(gpus, cuda, problems):
    assert _cuda_compat.gpu_support_problems(gpus, cuda=cuda) == problems


def test_a_gpu_whose_architecture_is_not_a_name_is_refused():
    with pytest.raises(CompatError, match=r"is not a GPU: its architecture is not a name$"):
        _cuda_compat.gpu_support_problems([{"architecture": {"name": "volta"}}], cuda="12.8")


# A CUDA or driver newer than the table: a clear error naming the newest the table knows and min_drivers, never a
# guess; min_drivers names what NVIDIA has published since.
NEWER = r"is newer than the table: its newest is CUDA 13\.3 \(driver >= 610\.43\.02\)"
OVERRIDE = {"13.4": "615.20.01"}


@pytest.mark.parametrize("call, message", [
    (lambda: cuda_min_driver("13.4"),
     r"^CUDA 13\.4 %s, and it cannot say which driver CUDA 13\.4 needs; where NVIDIA has published its minimum driver "
     r".*: min_drivers=\{'13\.4': '<driver>'\}$" % NEWER),
    (lambda: cuda_min_driver("14.0", compat="minor"), r"^CUDA 14\.0 %s" % NEWER),
    (lambda: cuda_min_driver("13.3.2"), r"^CUDA 13\.3\.2 is not a release the table knows: CUDA 13\.3 has 13\.3\.0, "
                                        r"13\.3\.1; nearest: 13\.3\.1 \(driver >= 610\.43\.02\); for a newer update"),
    (lambda: torch_cuda_channel("13.4", torch="2.13.0"), r"^CUDA 13\.4 %s" % NEWER),
    (lambda: torch_cuda_channel("13.4", torch="2.13.0", compat="minor"), r"^CUDA 13\.4 %s" % NEWER),
    (lambda: _cuda_compat.tensorflow_for_cuda("13.5"), r"^CUDA 13\.5 %s" % NEWER),
    (lambda: _cuda_compat.cuda_too_new(["12.8", "13.4"], "615.20"), r"^CUDA 13\.4 %s" % NEWER),
    (lambda: _cuda_compat.gpu_support_problems(["9.0"], cuda="13.4"), r"^CUDA 13\.4 %s" % NEWER),
    (lambda: cuda_max_for_driver("615.20"),
     r"^driver 615\.20 is newer than the table: its newest is CUDA 13\.3 \(driver >= 610\.43\.02, branch 610\), and "
     r"it cannot say which newer CUDA a branch 615 driver runs; ask the driver \(gpu_facts' cuda_driver_version\), or "
     r".*min_drivers=\{'<cuda>': '<driver>'\}$"),
    (lambda: cuda_max_for_driver("1000.1"), r"^driver 1000\.1 is newer than the table"),
    (lambda: cuda_max_for_driver("620.1", min_drivers=OVERRIDE),
     r"^driver 620\.1 is newer than the table: its newest is CUDA 13\.4 \(driver >= 615\.20\.01, branch 615\)"),
])
def test_versions_newer_than_the_table_are_refused(call, message):
    with pytest.raises(CompatError, match=message):
        call()


def test_older_is_the_answer_for_a_driver_older_than_the_table():
    assert cuda_max_for_driver("440.118.02", older="") == ""
    assert cuda_max_for_driver("99.1", older="none") == "none"
    assert cuda_max_for_driver("450.51.05", older="") == "11.0"
    assert cuda_max_for_driver("570.124.06", older="") == "12.8"


def test_min_drivers_names_the_releases_newer_than_the_table():
    assert cuda_min_driver("13.4", min_drivers=OVERRIDE) == "615.20.01"
    assert cuda_min_driver("13.4.0", min_drivers=OVERRIDE) == "615.20.01"
    assert cuda_min_driver("13.4", compat="minor", min_drivers=OVERRIDE) == "580"  # Table 2: every 13.x
    assert cuda_min_driver("14.0", compat="minor", min_drivers={"14.0": "700.1"}) == "700.1"  # no 14.x row: its own
    assert cuda_min_driver("13.3.2", min_drivers={"13.3.2": "610.90.01"}) == "610.90.01"  # a newer update
    assert cuda_min_driver("12.4", min_drivers=OVERRIDE) == "550.54.14"  # the table's rows stay
    assert cuda_max_for_driver("615.20.01", min_drivers=OVERRIDE) == "13.4"
    assert cuda_max_for_driver("615.20", min_drivers=OVERRIDE) == "13.3"  # below 13.4's minimum
    assert torch_cuda_channel("13.4", torch="2.13.0", min_drivers=OVERRIDE) == "cu132"
    assert _cuda_compat.tensorflow_for_cuda("13.4", min_drivers=OVERRIDE) == "2.21"
    assert _cuda_compat.cuda_too_new(["12.8", "13.4"], "610.43.02", min_drivers=OVERRIDE) == [
        {"cuda": "13.4", "driver": "615.20.01"}]
    assert _cuda_compat.gpu_support_problems(["9.0"], cuda="13.4", min_drivers=OVERRIDE) == []
    assert _cuda_compat.gpu_support_problems(["7.0"], cuda="13.4", min_drivers=OVERRIDE) == [
        "CUDA 13.4 does not build for Volta (compute capability 7.0): the last CUDA that builds for it is 12.9; "
        "nearest: 12.9"]
    # empty, as a role's default gives it
    assert cuda_min_driver("13.3", min_drivers={}) == "610.43.02"
    assert cuda_min_driver("13.3", min_drivers="") == "610.43.02"
    # a release the table has, with the driver the table has (an inventory written before the table knew it)
    assert cuda_min_driver("13.3", min_drivers={"13.3": "610.43.02", "13.4": "615.1"}) == "610.43.02"


@pytest.mark.parametrize("min_drivers, message", [
    (["13.4", "615.1"], r"^min_drivers must be a mapping of CUDA release to its minimum driver, such as "
                        r"\{'13\.4': '615\.20'\}, got \['13\.4', '615\.1'\]$"),
    ("615.1", r"^min_drivers must be a mapping"),
    ({"13.4": 615.2}, r"^min_drivers gives CUDA 13\.4's driver as the number 615\.2: quote it"),
    # A YAML key 13.10 is the float 13.1: CUDA 13.10 would silently be CUDA 13.1.
    ({14.10: "700.1"}, r"^min_drivers names CUDA 14\.1 as the number 14\.1: quote it \(a YAML number loses "
                       r"trailing zeros: 13\.10 reads as 13\.1\)$"),
    ({13.4: "615.20.01"}, r"^min_drivers names CUDA 13\.4 as the number 13\.4: quote it"),
    ({"13.4": "latest"}, r"^min_drivers: CUDA 13\.4's driver 'latest' is not a version: expected numbers "
                         r"separated by dots, e\.g\. 550\.54\.15$"),
    ({"thirteen": "615.1"}, r"^min_drivers: CUDA 'thirteen' is not a version"),
    ({"13.4\n": "615.1\x00"}, r"^min_drivers: CUDA 13\.4's driver '615\.1\\x00' is not a version"),
    ({("13", "4"): "615.1"}, r"^min_drivers: CUDA \('13', '4'\) is not a version"),
    ({"13.3": "610.1"}, r"^min_drivers names CUDA 13\.3 with driver 610\.1, but the table has it: driver >= "
                        r"610\.43\.02$"),
    ({"12.7": "565.1"}, r"^min_drivers names CUDA 12\.7, which is not a CUDA release: min_drivers is for releases "
                        r"newer than the table \(CUDA 11\.0 to 13\.3\), or newer updates of one in it$"),
    ({"13.4": "600.1"}, r"^min_drivers: CUDA 13\.4\.0's driver 600\.1 is older than CUDA 13\.3\.1's \(610\.43\.02\); "
                        r"a newer CUDA release never needs an older driver$"),
    ({"13.%d" % n: "9%02d.1" % n for n in range(4, 70)}, r"^min_drivers names 66 CUDA releases; at most 64$"),
])
def test_min_drivers_is_checked(min_drivers, message):
    with pytest.raises(CompatError, match=message):
        cuda_min_driver("13.3", min_drivers=min_drivers)


def _table_versions():
    """Every CUDA version string the table answers for, in each form a user may write it."""
    for release, drivers in COMPAT["toolkit_driver"].items():
        yield release
        for update in range(len(drivers)):
            yield "%s.%d" % (release, update)


# The versions the table must refuse: newer than it, never published, older than it, not a version.
REFUSED = ["13.4", "13.4.0", "13.3.2", "13.10", "14.0", "99.99", "12.7", "12.10", "11.9", "10.2", "12.4.3", "13",
           "13.3.1.0", "", " ", "latest", "13.3-1", "١٣.٣", "1" * 5000, "13." + "9" * 5000, None, True, [], {}, 13]


@pytest.mark.parametrize("cuda", list(_table_versions()) + REFUSED)
def test_every_filter_refuses_what_cuda_min_driver_refuses(cuda):
    """cuda_min_driver is the one source of truth for "is this a CUDA release": torch_cuda_channel, cuda_too_new,
    tensorflow_for_cuda and gpu_support_problems refuse exactly what it refuses, with its words."""
    calls = {
        "torch_cuda_channel": lambda: torch_cuda_channel(cuda),
        "torch_cuda_channel(torch, minor)": lambda: torch_cuda_channel(cuda, torch="2.13.0", compat="minor"),
        "torch_cuda_channel(exact)": lambda: torch_cuda_channel(cuda, torch="2.5.1", exact=True),
        "cuda_too_new": lambda: _cuda_compat.cuda_too_new([cuda], "1.0"),
        "tensorflow_for_cuda": lambda: _cuda_compat.tensorflow_for_cuda(cuda),
        "gpu_support_problems": lambda: _cuda_compat.gpu_support_problems(["9.0"], cuda=cuda),
    }
    if cuda in (None, True, "", " ", []):
        del calls["gpu_support_problems"]  # there, cuda not given (or an empty list) means: no CUDA to check
    try:
        driver = cuda_min_driver(cuda)
    except CompatError as error:
        for name, call in calls.items():
            with pytest.raises(CompatError) as raised:
                call()
            assert str(raised.value) == str(error), name
            assert len(str(raised.value)) < 400, name
        return
    assert re.match(r"\A[0-9]+(\.[0-9]+)+\Z", driver)
    for name, call in calls.items():
        try:
            call()
        except CompatError as error:
            # A CUDA release the table knows may still have no wheel: that, and only that, may be refused.
            assert re.match(r"^(no torch release in the table|torch 2\.\d+\.\d has no wheel) ", str(error)), name
