"""_file_matches, _running_units, _alternatives_set and _pip_unmet: node_probe's reads against what a file,
copy, template, service, update-alternatives or pip task would leave."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.accelops.gpu.plugins.plugin_utils._probe_filters import (
    FilterModule,
    alternatives_set,
    file_matches,
    pip_unmet,
    running_units,
)

CONF = {"exists": True, "type": "file", "mode": "0644", "owner": "root", "group": "root", "size": 40,
        "checksum": "faf5ce579f967aa59c9473270c4f9d7432b1d403"}


@pytest.mark.parametrize("state, args, matches", [
    (CONF, {}, True),
    (CONF, {"owner": "root", "group": "root", "mode": "0644", "checksum": CONF["checksum"]}, True),
    (CONF, {"checksum": "0" * 40}, False),
    (CONF, {"mode": "0600"}, False),
    (CONF, {"owner": "nvidia"}, False),
    (CONF, {"kind": "directory"}, False),
    ({"exists": True, "type": "directory", "mode": "0755", "owner": "root", "group": "root"},
     {"kind": "directory", "mode": "0755"}, True),
    ({"exists": False}, {}, False),
    # Could not be read (lstat failed): never taken as in place.
    ({"exists": None, "error": "Permission denied"}, {}, False),
])
def test_file_matches(state, args, matches):
    assert file_matches(state, **args) is matches


@pytest.mark.parametrize("state, args, message", [
    (None, {}, "the input must be one path's state"),
    ("/etc/app.conf", {}, "the input must be one path's state"),
    (CONF, {"kind": "fifo"}, "kind must be one of file, directory, link"),
    (CONF, {"mode": 420}, "mode must be four octal digits"),
    (CONF, {"mode": "644"}, "mode must be four octal digits"),
])
def test_bad_input(state, args, message):
    with pytest.raises(AnsibleFilterError, match=message):
        file_matches(state, **args)


def test_registered():
    assert FilterModule().filters() == {"_file_matches": file_matches, "_running_units": running_units,
                                        "_alternatives_set": alternatives_set, "_pip_unmet": pip_unmet}


def test_running_units():
    services = {
        "b.service": {"load_state": "loaded", "active_state": "active", "sub_state": "running",
                      "unit_file_state": "enabled"},
        "a.service": {"load_state": "loaded", "active_state": "active", "sub_state": "running",
                      "unit_file_state": "enabled"},
        # Running but not started at boot, enabled but stopped, only enabled at runtime, missing, unread.
        "c.service": {"load_state": "loaded", "active_state": "active", "unit_file_state": "disabled"},
        "d.service": {"load_state": "loaded", "active_state": "failed", "unit_file_state": "enabled"},
        "e.service": {"load_state": "loaded", "active_state": "active", "unit_file_state": "enabled-runtime"},
        "f.service": {"load_state": "not-found", "active_state": "inactive", "unit_file_state": None},
        "g.service": None,
    }
    assert running_units(services) == ["a.service", "b.service"]
    # No systemd on the node: nothing runs.
    assert running_units(None) == [] and running_units({}) == []
    with pytest.raises(AnsibleFilterError, match="the input must be the services"):
        running_units(["a.service"])


SITE = "/opt/accelops-gpu/pytorch/lib/python3.11/site-packages/"
DIST_INFOS = [SITE + name for name in (
    "nvidia_ml_py-13.580.82.dist-info", "torch-2.13.0+cpu.dist-info", "typing_extensions-4.12.2.dist-info",
    "pip-23.0.1.dist-info", "zope.interface-7.0.dist-info/", "no_version.dist-info", "numpy-2.1.0.egg-info")]


@pytest.mark.parametrize("requirements, unmet", [
    ([], []),
    (["nvidia-ml-py==13.580.82"], []),
    # Names compare as PEP 503 does: case, and runs of -, _ and ., do not matter.
    (["NVIDIA_ML.py == 13.580.82", "Typing-Extensions", "zope-interface==7.0"], []),
    # Without a local label, == matches the installed local build; with one, only that build.
    (["torch==2.13.0"], []),
    (["torch==2.13.0+cpu"], []),
    (["torch==2.13.0+cu124"], ["torch==2.13.0+cu124"]),
    (["torch==2.13.1", "nvidia-ml-py==13.580.82"], ["torch==2.13.1"]),
    (["torch==2.13"], ["torch==2.13"]),
    # Not installed: an egg-info is not read, a dist-info without a version is not a distribution.
    (["numpy", "no-version", "tensorflow-cpu==2.21.0"], ["numpy", "no-version", "tensorflow-cpu==2.21.0"]),
    # Left to pip: other specifiers, wildcards, extras, markers, URLs and paths.
    (["torch>=2.13.0", "torch==2.13.*", "torch[opt]==2.13.0", "torch==2.13.0; python_version > '3'",
      "torch @ https://example.com/torch.whl", "/opt/wheels/horovod-main.tar.gz", ""],
     ["torch>=2.13.0", "torch==2.13.*", "torch[opt]==2.13.0", "torch==2.13.0; python_version > '3'",
      "torch @ https://example.com/torch.whl", "/opt/wheels/horovod-main.tar.gz", ""]),
])
def test_pip_unmet(requirements, unmet):
    assert pip_unmet(requirements, DIST_INFOS) == unmet


def test_pip_unmet_empty_environment():
    assert pip_unmet(["nvidia-ml-py==13.580.82"], []) == ["nvidia-ml-py==13.580.82"]


@pytest.mark.parametrize("requirements, dist_infos, message", [
    ("torch==2.13.0", [], "the input must be a list of requirement strings"),
    ([None], [], "the input must be a list of requirement strings"),
    (["torch"], None, "dist_infos must be a list of paths"),
    (["torch"], {"a": 1}, "dist_infos must be a list of paths"),
])
def test_pip_unmet_bad_input(requirements, dist_infos, message):
    with pytest.raises(AnsibleFilterError, match=message):
        pip_unmet(requirements, dist_infos)


def test_alternatives_set_rejects_what_it_cannot_read():
    """The choice of the link's state is judged in cuda_toolkit's role tests; here, what is not that state."""
    files = {"/var/lib/dpkg/alternatives/cuda": {"exists": True, "type": "file", "content": "not base64 !"},
             "/etc/alternatives/cuda": {"exists": True, "type": "link", "target": "/usr/local/cuda-12.4"}}
    assert alternatives_set(files, ["cuda", "cuda-12"], "/usr/local/cuda-12.4") == []
    with pytest.raises(AnsibleFilterError, match="the input must be the files"):
        alternatives_set(None, ["cuda"], "/usr/local/cuda-12.4")
    with pytest.raises(AnsibleFilterError, match="links must be a list of names"):
        alternatives_set({}, "cuda", "/usr/local/cuda-12.4")
