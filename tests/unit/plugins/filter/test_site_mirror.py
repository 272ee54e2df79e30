"""_site_mirror_needs: what an inventory's GPU nodes install from NVIDIA's repository and PyPI, from their variables and
the roles' defaults; the package names and site.yml's switches as the roles and the playbook have them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError, AnsibleUndefinedVariable
from jinja2 import Undefined

from ansible_collections.accelops.gpu.plugins.module_utils._numbers import shown
from ansible_collections.accelops.gpu.plugins.plugin_utils._site_mirror_filters import (
    site_mirror_needs,
    site_mirror_problems,
)

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
    assert needs["problems"] == []


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
    ({"nvidia_driver_branch": "550\n"}, "n: nvidia_driver_branch is '550\\n'"),
    ({"nvidia_driver_branch": True}, "n: nvidia_driver_branch is True"),
    ({"nvidia_driver_version": "550.54.15\nPackage: *"}, "n: nvidia_driver_version is"),
    # A release of another branch than the node's: the driver role refuses it, the mirror would carry the wrong pin.
    ({"nvidia_driver_branch": "570", "nvidia_driver_version": "550.54.15"},
     "n: nvidia_driver_version is '550.54.15'; allowed: empty, or a release of the branch such as 570.124.06"),
    ({"nvidia_driver_kernel_modules": "opne"}, "n: nvidia_driver_kernel_modules is 'opne'; allowed: auto, open, "
                                               "proprietary"),
    ({"nvidia_driver_kernel_modules": ["open"]}, "n: nvidia_driver_kernel_modules is ['open']"),
    ({"nvidia_driver_persistenced": "maybe"}, "n: nvidia_driver_persistenced is 'maybe'; allowed: true or false"),
    ({"nvidia_driver_fabricmanager": "no"}, "n: nvidia_driver_fabricmanager is 'no'; allowed: auto, true, false"),
    ({"nvidia_driver_fabricmanager": 0}, "n: nvidia_driver_fabricmanager is 0"),
    ({"cuda_toolkit_versions": "12.8"}, "n: cuda_toolkit_versions is '12.8'; allowed: a list"),
    ({"cuda_toolkit_versions": []}, "n: cuda_toolkit_versions is []"),
    ({"cuda_toolkit_versions": ["12.8", "12"]}, "n: cuda_toolkit_versions has '12'"),
    ({"cuda_toolkit_versions": ["12.8", None]}, "n: cuda_toolkit_versions has None"),
    ({"cuda_toolkit_default": "latest"}, "n: cuda_toolkit_default is 'latest'"),
    ({"cuda_toolkit_versions": ["12.8"], "cuda_toolkit_default": "12.4"},
     "n: cuda_toolkit_default is '12.4'; allowed: one of cuda_toolkit_versions (12.8), or empty"),
    ({"cuda_toolkit_cudnn": "sometimes"}, "n: cuda_toolkit_cudnn is 'sometimes'; allowed: true or false"),
    ({"accelops_gpu_install_driver": "maybe"}, "n: accelops_gpu_install_driver is 'maybe'; allowed: true or false"),
    ({"accelops_gpu_install_toolkit": ["x"]}, "n: accelops_gpu_install_toolkit is ['x']"),
    ({"accelops_gpu_install_container_toolkit": True, "container_toolkit_version": "1.18.0-1 evil"},
     "n: container_toolkit_version is"),
    ({"nvml_python_version": "13.615.71; rm -rf /"}, "n: nvml_python_version is"),
    ({"nvml_python_version": "1.0--x"}, "n: nvml_python_version is '1.0--x'; allowed: a release number"),
    ({"gpu_monitoring_bcrypt_version": "--index-url=http://evil"}, "n: gpu_monitoring_bcrypt_version is"),
])
def test_bad_variables_are_problems_naming_the_host_and_the_variable(variables, message):
    needs = site_mirror_needs({"n": variables}, DEFAULTS, NAMES)
    assert [problem for problem in needs["problems"] if problem.startswith(message)], needs["problems"]


def test_every_bad_variable_of_every_node_is_named_and_names_no_package():
    needs = site_mirror_needs({
        "a": {"nvidia_driver_branch": "570", "nvidia_driver_version": "550.54.15", "cuda_toolkit_versions": ["12.8"],
              "cuda_toolkit_default": "12.4"},
        "b": {"nvidia_driver_kernel_modules": "opne", "nvml_python_version": "x"},
        "c": {},
    }, DEFAULTS, NAMES)
    assert [problem.split(" is ")[0] for problem in needs["problems"]] == [
        "a: nvidia_driver_version", "a: cuda_toolkit_default", "b: nvidia_driver_kernel_modules",
        "b: nvml_python_version"]
    assert not [name for name in needs["apt"] if "550" in name or "12.4" in name]
    assert "nvidia-driver-pinning-570" in needs["preferences_from"]  # c's, from the defaults


def test_the_roles_spellings_of_true_and_false_are_read():
    needs = site_mirror_needs({"n": {"accelops_gpu_install_driver": "no", "accelops_gpu_install_toolkit": "off",
                                     "accelops_gpu_install_monitoring": 0, "nvidia_driver_kernel_modules": "OPEN"}},
                              DEFAULTS, NAMES)
    assert needs["problems"] == [] and needs["apt"] == []
    needs = site_mirror_needs({"n": {"nvidia_driver_kernel_modules": "OPEN", "nvidia_driver_fabricmanager": False,
                                     "nvidia_driver_persistenced": "yes"}}, DEFAULTS, NAMES)
    assert needs["problems"] == []
    assert "nvidia-open" in needs["apt"] and "nvidia-driver" not in needs["apt"]
    assert not [name for name in needs["apt"] if name.startswith("nvidia-fabricmanager")]


class _Unrenderable(dict):
    """An inventory's variables as hostvars hands them over, with a template that cannot be rendered."""

    def __getitem__(self, key):
        if key == "container_toolkit_version":
            raise AnsibleUndefinedVariable("'undefined_thing' is undefined")
        return super().__getitem__(key)


def test_a_variable_that_cannot_be_rendered_is_a_problem():
    variables = _Unrenderable(accelops_gpu_install_container_toolkit=True, container_toolkit_version="{{ x }}")
    needs = site_mirror_needs({"n": variables}, DEFAULTS, NAMES)
    assert needs["problems"] == ["n: container_toolkit_version cannot be read: 'undefined_thing' is undefined"]
    undefined = Undefined(hint="'other' is undefined")
    needs = site_mirror_needs({"n": {"nvml_python_version": undefined}}, DEFAULTS, NAMES)
    assert needs["problems"] == ["n: nvml_python_version cannot be read: 'other' is undefined"]


def test_a_variable_without_a_default_is_named():
    defaults = dict(DEFAULTS)
    del defaults["nvml_python_version"]
    needs = site_mirror_needs({"n": {}}, defaults, NAMES)
    assert needs["problems"] == ["n: nvml_python_version is not set and no role gives it a default"]


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


# The role's own variables and the builder's directories (_site_mirror_problems).

FPR = "0123456789ABCDEF0123456789ABCDEF01234567"
SETTINGS = dict(load("roles/site_mirror/defaults/main.yml"), site_mirror_gnupg_home="/srv/keys/gnupg",
                site_mirror_signing_key=FPR)


def test_the_settings_are_every_default_of_the_role():
    """The role passes every one of its variables (vars/main.yml) and nothing else."""
    passed = load("roles/site_mirror/vars/main.yml")["__site_mirror_settings"]
    assert set(passed) == set(load("roles/site_mirror/defaults/main.yml"))
    assert all(value == "{{ %s }}" % name for name, value in passed.items())


def test_good_settings_have_no_problem():
    assert site_mirror_problems(SETTINGS) == []
    assert site_mirror_problems(dict(
        SETTINGS, site_mirror_signing_key="0123 4567 89AB CDEF 0123  4567 89ab cdef 0123 4567",
        site_mirror_distros=["debian12", "debian13"],
        site_mirror_cuda_keys={"debian13": {"name": "8793F200.pub", "fingerprint": FPR}},
        site_mirror_cuda_base_url="http://127.0.0.1:18080/cuda/repos/",
        site_mirror_extra_packages=["datacenter-gpu-manager-4-cuda12", "libnccl2=2.26.*+cuda12.8",
                                    "cuda-drivers=550.54.15-1"],
        site_mirror_pip_index_url="", site_mirror_pip_find_links=["http://127.0.0.1:18080/wheels/", "/srv/wheelhouse"],
        site_mirror_extra_wheels=["numpy==2.3.1", "pyyaml>=6,<7", "torch[cuda]==2.*"],
        site_mirror_python="/usr/bin/python3", site_mirror_timeout="30", site_mirror_recommends="false")) == []


@pytest.mark.parametrize("variable, value", [
    ("site_mirror_dir", "relative/path"), ("site_mirror_dir", "/"), ("site_mirror_dir", "//"),
    ("site_mirror_dir", "/.."), ("site_mirror_dir", "/srv/mirror/"), ("site_mirror_dir", "/srv/../etc"),
    ("site_mirror_dir", "/srv/./mirror"), ("site_mirror_dir", "//srv/mirror"), ("site_mirror_dir", "/srv\n/x"),
    ("site_mirror_dir", "/srv/\x00x"), ("site_mirror_dir", 5), ("site_mirror_dir", ["/srv/mirror"]),
    ("site_mirror_gnupg_home", ""), ("site_mirror_gnupg_home", "gnupg"), ("site_mirror_gnupg_home", "/k\n"),
    ("site_mirror_signing_key", ""), ("site_mirror_signing_key", "2052085B"), ("site_mirror_signing_key", FPR + "0"),
    ("site_mirror_signing_key", FPR[:-1] + "\n7"), ("site_mirror_signing_key", None),
    ("site_mirror_hosts", ""), ("site_mirror_hosts", "gpu_nodes:!gpu02"), ("site_mirror_hosts", ["gpu_nodes"]),
    ("site_mirror_distros", "debian12"), ("site_mirror_distros", []), ("site_mirror_distros", ["../x"]),
    ("site_mirror_distros", [None]),
    ("site_mirror_cuda_base_url", "ftp://127.0.0.1/cuda"), ("site_mirror_cuda_base_url", "file:///srv/cuda"),
    ("site_mirror_cuda_base_url", "http://127.0.0.1/cu da"), ("site_mirror_cuda_base_url", "http://h/repos?x=1"),
    ("site_mirror_cuda_base_url", "http://h/repos#x"), ("site_mirror_cuda_base_url", "http://h/r\nHost: evil"),
    ("site_mirror_cuda_base_url", "--https://h"), ("site_mirror_cuda_base_url", ""),
    ("site_mirror_cuda_keys", ["debian12"]), ("site_mirror_cuda_keys", {"debian12": "3bf863cc.pub"}),
    ("site_mirror_cuda_keys", {"debian12": None}), ("site_mirror_cuda_keys", {"debian12": {"name": "a.pub"}}),
    ("site_mirror_cuda_keys", {"debian12": {"name": "a.pub", "fingerprint": FPR, "extra": 1}}),
    ("site_mirror_cuda_keys", {"debian12": {"name": "a.pub", "fingerprint": 12345}}),
    ("site_mirror_cuda_keys", {"debian12": {"name": "..", "fingerprint": FPR}}),
    ("site_mirror_cuda_keys", {"debian12": {"name": "../x86_64/a.pub", "fingerprint": FPR}}),
    ("site_mirror_cuda_keys", {"debian13": {"name": "a.pub", "fingerprint": FPR}}),
    ("site_mirror_extra_packages", "foo"), ("site_mirror_extra_packages", ["--foo"]),
    ("site_mirror_extra_packages", ["x; rm -rf /"]), ("site_mirror_extra_packages", ["cuda-toolkit-12-8\nfoo"]),
    ("site_mirror_extra_packages", [""]), ("site_mirror_extra_packages", [5]),
    ("site_mirror_extra_packages", ["a=1=2"]), ("site_mirror_extra_packages", [" foo"]),
    ("site_mirror_recommends", "maybe"),
    ("site_mirror_pip_index_url", "--trusted-host=evil"), ("site_mirror_pip_index_url", "http://x y"),
    ("site_mirror_pip_index_url", None),
    ("site_mirror_pip_find_links", "http://127.0.0.1/wheels/"), ("site_mirror_pip_find_links", ["wheels"]),
    ("site_mirror_pip_find_links", ["file:///srv/wheels"]), ("site_mirror_pip_find_links", [{"a": 1}]),
    ("site_mirror_pip_find_links", ["/srv/my wheels"]),
    ("site_mirror_extra_wheels", "numpy"), ("site_mirror_extra_wheels", ["--index-url=http://evil"]),
    ("site_mirror_extra_wheels", ["-rfoo"]), ("site_mirror_extra_wheels", ["foo @ http://evil/x.whl"]),
    ("site_mirror_extra_wheels", ['numpy;python_version<"3"']), ("site_mirror_extra_wheels", ["numpy ==1"]),
    ("site_mirror_extra_wheels", ["./local.whl"]),
    ("site_mirror_python", "python3"), ("site_mirror_python", "-c"), ("site_mirror_python", "/usr/bin/python3\n-c"),
    ("site_mirror_python", None),
    ("site_mirror_timeout", 0), ("site_mirror_timeout", -5), ("site_mirror_timeout", "abc"),
    ("site_mirror_timeout", 10 ** 30), ("site_mirror_timeout", True), ("site_mirror_timeout", 1.5),
])
def test_a_bad_setting_is_one_problem_naming_it(variable, value):
    problems = site_mirror_problems(dict(SETTINGS, **{variable: value}))
    assert len(problems) == 1 and problems[0].startswith(variable + " must be "), problems
    assert problems[0].endswith(", got %s" % shown(value)) if variable != "site_mirror_cuda_keys" else True


def test_a_list_given_as_a_string_names_the_list_alone():
    """A string where argument_specs wants a list passes its check (it splits the string) but stays a string."""
    assert [problem.split(" must ")[0] for problem in site_mirror_problems(
        dict(SETTINGS, site_mirror_distros="debian12,debian13",
             site_mirror_cuda_keys={"debian12": {"name": "a.pub", "fingerprint": FPR}}))] == ["site_mirror_distros"]


ROOT_DIR = "/srv/mirror"
WRITTEN = ["/srv", ROOT_DIR, ROOT_DIR + "/cuda", ROOT_DIR + "/cuda/repos", ROOT_DIR + "/wheels",
           ROOT_DIR + "/cuda/repos/debian12", ROOT_DIR + "/cuda/repos/debian12/x86_64",
           ROOT_DIR + "/cuda/repos/debian12/distribution-packages.txt"]
COPY = ROOT_DIR + "/cuda/repos/debian12/x86_64"


def probed(**found):
    """node_probe's files for the paths the role writes: 'directory', 'link' or 'file' for the given paths, absent
    for the others; 'enotdir' is a path below a file, which the probe could not look at."""
    files = {}
    for path in WRITTEN:
        kind = found.get(path, "absent")
        if kind == "enotdir":
            files[path] = {"exists": None, "error": "[Errno 20] Not a directory: %r" % path}
        elif kind == "absent":
            files[path] = {"exists": False}
        else:
            files[path] = {"exists": True, "type": kind, "mode": "0755", "owner": "root", "group": "root"}
    return files


def entry(name):
    return COPY + "/" + name


def tree_problems(found, listing=()):
    return site_mirror_problems(dict(SETTINGS, site_mirror_dir=ROOT_DIR), files=probed(**found), listing=list(listing))


BUILT = {path: "file" if path.endswith(".txt") else "directory" for path in WRITTEN}
A_COPY = [entry("nvidia-open_550.54.15-1_amd64.deb"), entry("libnccl2_2.26.2-1+cuda12.8_amd64.deb"),
          entry("Packages"), entry("Packages.gz"), entry("Release"), entry("InRelease"), entry("Release.gpg"),
          entry("2052085b.pub")]


def test_a_new_mirror_and_a_copy_of_the_role_s_have_no_problem():
    assert tree_problems({"/srv": "directory"}) == []
    assert tree_problems(BUILT, A_COPY) == []
    # The site's disk behind site_mirror_dir, or behind the directory above it.
    assert tree_problems(dict(BUILT, **{"/srv": "link", ROOT_DIR: "link"}), A_COPY) == []


@pytest.mark.parametrize("found, listing, message", [
    ({}, [], "the directory above site_mirror_dir (/srv) must exist"),
    ({"/srv": "file"}, [], "the directory above site_mirror_dir (/srv) must exist"),
    ({"/srv": "directory", ROOT_DIR: "file"}, [], "site_mirror_dir (/srv/mirror) is not a directory"),
    (dict(BUILT, **{ROOT_DIR + "/cuda": "link"}), [], "/srv/mirror/cuda is a symbolic link"),
    (dict(BUILT, **{ROOT_DIR + "/cuda/repos/debian12": "link"}), [],
     "/srv/mirror/cuda/repos/debian12 is a symbolic link"),
    (dict(BUILT, **{COPY: "link"}), [], COPY + " is a symbolic link"),
    (dict(BUILT, **{ROOT_DIR + "/wheels": "link"}), [], "/srv/mirror/wheels is a symbolic link"),
    (dict(BUILT, **{COPY: "other"}), [], COPY + " is not a directory"),
    # A file where a directory goes, and stat's failure for what lies below it: the file is named.
    ({"/srv": "directory", ROOT_DIR: "directory", ROOT_DIR + "/cuda": "directory", ROOT_DIR + "/cuda/repos": "file",
      ROOT_DIR + "/cuda/repos/debian12": "enotdir", COPY: "enotdir"}, [], "/srv/mirror/cuda/repos is not a directory"),
    (dict(BUILT, **{WRITTEN[-1]: "link"}), [], WRITTEN[-1] + " is not a plain file"),
    (BUILT, [*A_COPY, entry("precious.txt")], COPY + " holds precious.txt, which no copy of this role has"),
    (BUILT, [*A_COPY, entry("cuda-debian12.pin"), entry("sub"), entry(".hidden")],
     COPY + " holds .hidden, cuda-debian12.pin, sub, which"),
    (BUILT, [entry("f%d" % n) for n in range(7)], "holds f0, f1, f2, f3, f4 and 2 more, which"),
])
def test_what_the_copy_must_not_replace_or_write_through_is_named(found, listing, message):
    problems = tree_problems(found, listing)
    assert len(problems) == 1 and message in problems[0], problems


def test_only_the_role_s_variables_are_judged_before_the_tree():
    assert site_mirror_problems(dict(SETTINGS, site_mirror_dir="x"), files={}, listing=[])[0].startswith(
        "site_mirror_dir must be")


@pytest.mark.parametrize("settings, kwargs", [
    ("x", {}),
    (SETTINGS, {"files": [], "listing": []}),
    (SETTINGS, {"files": {}, "listing": None}),
])
def test_bad_input_of_the_problems_filter_is_one_filter_error(settings, kwargs):
    with pytest.raises(AnsibleFilterError, match=r"^_site_mirror_problems: "):
        site_mirror_problems(settings, **kwargs)
