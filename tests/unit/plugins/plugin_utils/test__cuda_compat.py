from __future__ import annotations

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
])
def test_cuda_min_driver_minor_compat(cuda, driver):
    assert cuda_min_driver(cuda, compat="minor") == driver


@pytest.mark.parametrize("driver, cuda", [
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
    ("1000.1", "13.2"),  # a driver newer than anything known supports the newest CUDA in the table
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
    (lambda: cuda_min_driver("12.7"), r"^CUDA 12\.7 is not in the table \(CUDA 11\.8 to 13\.2\); nearest: 12\.6$"),
    (lambda: cuda_min_driver("11.7"), r"^CUDA 11\.7 is not in the table .*; nearest: 11\.8$"),
    (lambda: cuda_min_driver("14.0"), r"^CUDA 14\.0 is not in the table .*; nearest: 13\.2$"),
    (lambda: cuda_min_driver("12.4.3"), r"^CUDA 12\.4\.3 is not a release: CUDA 12\.4 has 12\.4\.0, 12\.4\.1; "
                                        r"nearest: 12\.4\.1$"),
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
    (lambda: cuda_max_for_driver("515.105.01"),
     r"^driver 515\.105\.01 is older than any CUDA in the table: the oldest, CUDA 11\.8, needs >= 520\.61\.05; "
     r"nearest: CUDA 11\.8 \(driver >= 520\.61\.05\)$"),
    (lambda: cuda_max_for_driver("99.1"), r"^driver 99\.1 is older than any CUDA"),
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
    assert min(COMPAT["toolkit_driver"], key=_cuda_compat._key) == "11.8"
    assert "13.0" in COMPAT["toolkit_driver"]
    assert [_cuda_compat._dotted(k) for k in _cuda_compat._known("torch_channels")] == [
        "2.%d" % n for n in range(1, 14)]
    assert [_cuda_compat._dotted(k) for k in _cuda_compat._known("tensorflow_build")] == [
        "2.%d" % n for n in range(14, 22)]
