"""_site_mirror_needs: what an inventory's GPU nodes install from NVIDIA's repository and PyPI, from their variables and
the roles' defaults; the package names and site.yml's switches as the roles and the playbook have them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.accelops.gpu.plugins.plugin_utils._site_mirror_filters import site_mirror_needs

ROOT = Path(__file__).resolve().parents[4]


def load(path):
    return yaml.safe_load((ROOT / path).read_text(encoding="utf-8"))


def role_defaults():
    """The defaults as the role reads them (roles/site_mirror/tasks/preflight.yml)."""
    merged = {}
    for role in load("roles/site_mirror/vars/main.yml")["__site_mirror_roles"]:
        merged.update(load("roles/%s/defaults/main.yml" % role))
    merged.update(load("roles/site_mirror/vars/main.yml")["__site_mirror_switches"])
    return merged


def role_names():
    driver = load("roles/nvidia_driver/vars/Debian.yml")
    return {
        "library": driver["__nvidia_driver_library_package"],
        "persistenced": driver["__nvidia_driver_persistenced_package"],
        "packages": driver["__nvidia_driver_packages"],
        "cudnn": ["cudnn9-cuda-{major}", "libcudnn9-cuda-{major}", "libcudnn9-dev-cuda-{major}",
                  "libcudnn9-headers-cuda-{major}"],
        "nccl": load("roles/cuda_toolkit/vars/Debian.yml")["__cuda_toolkit_nccl_packages"],
        "container_toolkit": load("roles/container_toolkit/vars/main.yml")["__container_toolkit_packages"],
    }


DEFAULTS = role_defaults()
NAMES = role_names()


def test_the_switches_are_site_yml_s():
    site = (ROOT / "playbooks" / "site.yml").read_text(encoding="utf-8")
    for switch, default in load("roles/site_mirror/vars/main.yml")["__site_mirror_switches"].items():
        found = set(re.findall(r"%s \| default\((true|false)\)" % switch, site))
        assert found == {str(default).lower()}, switch


def test_the_names_are_the_roles_():
    """The role passes the same names (its preflight reads them from the roles' vars files); cuDNN's are the four the
    cuda_toolkit role holds."""
    preflight = (ROOT / "roles/site_mirror/tasks/preflight.yml").read_text(encoding="utf-8")
    for name in NAMES["cudnn"]:
        assert '"%s"' % name in preflight
    held = load("roles/cuda_toolkit/vars/Debian.yml")["__cuda_toolkit_cudnn_held"]
    derived = {"cudnn9-cuda-{major}" if "cudnn_package" in entry else "libcudnn9-cuda-{major}"
               if "cudnn_library" in entry else entry.replace("{{ __cuda_toolkit_default_major }}", "{major}")
               for entry in held}
    assert derived == set(NAMES["cudnn"])


def test_defaults_of_the_roles():
    needs = site_mirror_needs({"node1": {}}, DEFAULTS, NAMES)
    branch = DEFAULTS["nvidia_driver_branch"]
    cuda = DEFAULTS["cuda_toolkit_versions"][-1]
    assert needs["preferences_from"] == ["nvidia-driver-pinning-%s" % branch]
    assert "nvidia-fabricmanager-%s" % branch in needs["apt"]
    assert {"nvidia-open", "nvidia-driver", "nvidia-kernel-dkms", "nvidia-driver-cuda", "libnvidia-ml1",
            "nvidia-persistenced"} <= set(needs["apt"])
    assert "cuda-toolkit-%s" % cuda.replace(".", "-") in needs["apt"]
    assert "libnccl2=*+cuda%s" % cuda in needs["apt"]
    assert "cudnn9-cuda-12" in needs["apt"]
    assert not [name for name in needs["apt"] if "container" in name]  # off in site.yml by default
    assert needs["wheels"] == sorted(["nvidia-ml-py==%s" % DEFAULTS["nvml_python_version"],
                                      "prometheus_client==%s" % DEFAULTS["gpu_monitoring_prometheus_client_version"],
                                      "bcrypt==%s" % DEFAULTS["gpu_monitoring_bcrypt_version"],
                                      "PyYAML==%s" % DEFAULTS["gpu_monitoring_pyyaml_version"]], key=str.lower)
    assert needs["hosts"] == ["node1"]


def test_nodes_on_two_releases_and_branches_are_all_carried():
    hosts = {
        "a": {"nvidia_driver_branch": "550", "nvidia_driver_version": "550.54.15", "cuda_toolkit_versions": ["12.4"],
              "nvidia_driver_kernel_modules": "proprietary"},
        "b": {"nvidia_driver_branch": "550", "nvidia_driver_version": "550.127.08", "cuda_toolkit_versions": ["12.4"]},
        "c": {"nvidia_driver_branch": "590", "cuda_toolkit_versions": ["12.8", "12.4"], "cuda_toolkit_default": "12.4",
              "nvidia_driver_fabricmanager": False, "accelops_gpu_install_container_toolkit": True,
              "container_toolkit_version": "1.17.8-1"},
    }
    needs = site_mirror_needs(hosts, DEFAULTS, NAMES)
    assert needs["preferences_from"] == ["nvidia-driver-pinning-550.127.08", "nvidia-driver-pinning-550.54.15",
                                         "nvidia-driver-pinning-590"]
    assert "nvidia-fabricmanager-550" in needs["apt"]
    assert "nvidia-fabricmanager" not in needs["apt"]  # c said false
    assert {"cuda-toolkit-12-4", "cuda-toolkit-12-8", "libnccl2=*+cuda12.4", "libnccl-dev=*+cuda12.4"} <= set(
        needs["apt"])
    assert "libnccl2=*+cuda12.8" not in needs["apt"]  # c's default is 12.4
    assert {"nvidia-container-toolkit=1.17.8-1", "libnvidia-container1=1.17.8-1"} <= set(needs["apt"])
    assert len(needs["apt"]) == len(set(needs["apt"]))


def test_switched_off_parts_are_left_out():
    needs = site_mirror_needs({"n": {"accelops_gpu_install_driver": False, "accelops_gpu_install_toolkit": "false",
                                     "accelops_gpu_install_monitoring": False}}, DEFAULTS, NAMES)
    assert needs["apt"] == [] and needs["preferences_from"] == []
    assert needs["wheels"] == ["nvidia-ml-py==%s" % DEFAULTS["nvml_python_version"]]


@pytest.mark.parametrize("variables, message", [
    ({"nvidia_driver_branch": "55"}, "n: nvidia_driver_branch is '55'; allowed: a driver branch"),
    ({"nvidia_driver_version": "550.54.15\nPackage: *"}, "n: nvidia_driver_version is"),
    ({"cuda_toolkit_versions": "12.8"}, "n: cuda_toolkit_versions is '12.8'; allowed: a list"),
    ({"cuda_toolkit_versions": []}, "n: cuda_toolkit_versions is []"),
    ({"cuda_toolkit_versions": ["12.8", "12"]}, "n: cuda_toolkit_versions has '12'"),
    ({"cuda_toolkit_default": "latest"}, "n: cuda_toolkit_default is 'latest'"),
    ({"accelops_gpu_install_container_toolkit": True, "container_toolkit_version": "1.18.0-1 evil"},
     "n: container_toolkit_version is"),
    ({"nvml_python_version": "13.615.71; rm -rf /"}, "n: nvml_python_version is"),
])
def test_bad_variables_name_the_host_and_the_variable(variables, message):
    with pytest.raises(AnsibleFilterError, match=re.escape("_site_mirror_needs: " + message)):
        site_mirror_needs({"n": variables}, DEFAULTS, NAMES)


def test_a_variable_without_a_default_is_named():
    defaults = dict(DEFAULTS)
    del defaults["nvml_python_version"]
    with pytest.raises(AnsibleFilterError, match="n: nvml_python_version is not set and no role gives it a default"):
        site_mirror_needs({"n": {}}, defaults, NAMES)


@pytest.mark.parametrize("hosts, defaults, names", [
    ({}, DEFAULTS, NAMES),
    (["n"], DEFAULTS, NAMES),
    ({"n": "x"}, DEFAULTS, NAMES),
    ({"n": {}}, None, NAMES),
    ({"n": {}}, DEFAULTS, dict(NAMES, packages={"open": "nvidia-open"})),
    ({"n": {}}, DEFAULTS, dict(NAMES, nccl=None)),
])
def test_bad_input_is_one_filter_error(hosts, defaults, names):
    with pytest.raises(AnsibleFilterError, match=r"^_site_mirror_needs: "):
        site_mirror_needs(hosts, defaults, names)
