"""newest_version and package_offers: what the cuda_toolkit role picks from what a repository offers;
apt_outdated: what nvidia_driver leaves to apt on a converged node."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.accelops.gpu.plugins.plugin_utils._package_versions_filters import (
    FilterModule,
    apt_outdated,
    newest_version,
    package_offers,
)

MADISON = [
    "  libnccl2 | 2.26.2-1+cuda12.8 | http://127.0.0.1:18080/repos/debian12/x86_64  Packages",
    "  libnccl2 | 2.25.1-1+cuda12.8 | http://127.0.0.1:18080/repos/debian12/x86_64  Packages",
    "  libnccl2 | 2.21.5-1+cuda12.4 | http://127.0.0.1:18080/repos/debian12/x86_64  Packages",
    "libcudnn9-cuda-12 | 9.8.0.87-1 | http://127.0.0.1:18080/repos/debian12/x86_64  Packages",
    "N: Unable to locate package libnccl-dev",
]
DNF = [
    "Available Packages",
    "libnccl.x86_64        2.26.2-1+cuda12.8       cuda-rhel9-x86_64",
    "libnccl.x86_64        2.21.5-1+cuda12.4       cuda-rhel9-x86_64",
    "libcudnn9-cuda-12.x86_64   1:9.8.0.87-1   cuda-rhel9-x86_64",
]


@pytest.mark.parametrize("versions, kwargs, expected", [
    (["12.4", "12.8", "12.10", "11.8"], {}, "12.10"),
    (["12.4", "12.x", "12.8.1"], {"pattern": r"\A[0-9]+\.[0-9]+\Z"}, "12.4"),
    (["2.21.5-1+cuda12.4", "2.26.2-1+cuda12.8", "2.25.1-1+cuda12.8"], {"suffix": "+cuda12.8"}, "2.26.2-1+cuda12.8"),
    (["2.21.5-1+cuda12.4"], {"suffix": "+cuda12.8"}, ""),
    ([], {}, ""),
    (["9.1.0.70-1", "9.8.0.87-1", "9.10.2.21-1"], {}, "9.10.2.21-1"),
    # dpkg's order: a pre-release before its release, the epoch first
    (["9.8.0.87-1", "9.8.0.87~rc1-1"], {}, "9.8.0.87-1"),
    (["9.8.0.87~rc1-1", "9.8.0.87-1"], {}, "9.8.0.87-1"),
    (["1:9.1.0.70-1", "9.10.2.21-1"], {}, "1:9.1.0.70-1"),
    (["2.26.2-1+cuda12.8", "2.26.2-1+cuda12.8.1"], {"suffix": ""}, "2.26.2-1+cuda12.8.1"),
    # RPM's: a caret after the end, a release after none
    (["9.8.0.87-1", "9.8.0.87^1-1"], {"scheme": "rpm"}, "9.8.0.87^1-1"),
    (["9.8.0.87~rc1-1", "9.8.0.87-1"], {"scheme": "rpm"}, "9.8.0.87-1"),
    (["2.26.2", "2.26.2-1.el9"], {"scheme": "rpm"}, "2.26.2-1.el9"),
])
def test_newest_version(versions, kwargs, expected):
    assert newest_version(versions, **kwargs) == expected


@pytest.mark.parametrize("lines, regex, expected", [
    (MADISON, r"^\s*(\S+)\s*\|\s*(\S+)\s*\|",
     {"libnccl2": ["2.26.2-1+cuda12.8", "2.25.1-1+cuda12.8", "2.21.5-1+cuda12.4"],
      "libcudnn9-cuda-12": ["9.8.0.87-1"]}),
    (DNF, r"^(\S+)\.[^.\s]+\s+(?:[0-9]+:)?(\S+)\s+\S+", {"libnccl": ["2.26.2-1+cuda12.8", "2.21.5-1+cuda12.4"],
                                                         "libcudnn9-cuda-12": ["9.8.0.87-1"]}),
    ([], r"(a)(b)", {}),
])
def test_package_offers(lines, regex, expected):
    assert package_offers(lines, regex) == expected


def test_package_offers_from_node_probe():
    """Without a regex, node_probe's candidates: the versions on offer of each package that has any."""
    candidates = {
        "libnccl2": {"known": True, "installed": None, "candidate": "2.27.3-1+cuda12.9",
                     "versions": ["2.27.3-1+cuda12.9", "2.26.2-1+cuda12.8"], "status": None},
        "cuda-toolkit-13-0": {"known": False, "installed": None, "candidate": None, "versions": [], "status": None},
    }
    assert package_offers(candidates) == {"libnccl2": ["2.27.3-1+cuda12.9", "2.26.2-1+cuda12.8"]}
    assert package_offers({}) == {}


@pytest.mark.parametrize("call, message", [
    (lambda: newest_version("12.4"), "_newest_version: the input must be a list of strings, got str"),
    (lambda: newest_version([12.4]), "_newest_version: the input must be a list of strings, got list"),
    (lambda: newest_version(["1"], pattern="("), "_newest_version: pattern '\\(' is not a regular expression"),
    (lambda: newest_version(["1"], suffix=None), "_newest_version: suffix and pattern must be strings"),
    (lambda: newest_version(["1"], scheme="apk"), "_newest_version: scheme must be one of deb, rpm, got 'apk'"),
    (lambda: newest_version(["1.0", "a.0"]), "_newest_version: 'a.0' is not a Debian version"),
    (lambda: package_offers(None, "(a)(b)"), "_package_offers: the input must be a list of strings, got NoneType"),
    (lambda: package_offers(["x"], "("), "_package_offers: '\\(' is not a regular expression"),
    (lambda: package_offers(["x"], "(a)"), "_package_offers: the regular expression needs two groups"),
    (lambda: package_offers(["x"]), "_package_offers: without a regex the input must be the candidates"),
])
def test_bad_input_is_a_filter_error(call, message):
    with pytest.raises(AnsibleFilterError, match=message):
        call()


def test_registered():
    assert set(FilterModule().filters()) == {"_newest_version", "_package_offers", "_apt_outdated"}


CANDIDATES = {
    "nvidia-open": {"known": True, "installed": "550.54.15-1", "candidate": "550.54.15-1", "versions": []},
    "libnvidia-ml1": {"known": True, "installed": "550.54.15-1", "candidate": "550.127.08-1", "versions": []},
    "nvidia-driver-pinning-550": {"known": True, "installed": None, "candidate": "550-1", "versions": []},
    "nvidia-fabricmanager-550": {"known": True, "installed": None, "candidate": None, "versions": []},
    "gone": {"known": False, "installed": None, "candidate": None, "versions": []},
}


@pytest.mark.parametrize("names, outdated", [
    (["nvidia-open"], []),
    # Moved by apt (a newer release in the branch), installed fresh, without a candidate, unknown, not read at all.
    (["nvidia-open", "libnvidia-ml1"], ["libnvidia-ml1"]),
    (["nvidia-driver-pinning-550", "nvidia-open"], ["nvidia-driver-pinning-550"]),
    (["nvidia-fabricmanager-550", "gone", "not-asked"], ["nvidia-fabricmanager-550", "gone", "not-asked"]),
    ([], []),
])
def test_apt_outdated(names, outdated):
    assert apt_outdated(names, CANDIDATES) == outdated


def test_apt_outdated_without_apt_and_bad_input():
    assert apt_outdated(["nvidia-open"], None) == ["nvidia-open"]
    with pytest.raises(AnsibleFilterError, match="_apt_outdated: candidates"):
        apt_outdated(["nvidia-open"], ["nvidia-open"])
    with pytest.raises(AnsibleFilterError, match="_apt_outdated: the input"):
        apt_outdated("nvidia-open", CANDIDATES)
