"""cuda_toolkit's package names, default toolkit, driver detection, driver check and build selection for every
distribution it supports, rendered by Ansible's own templating from the role's defaults and vars files (chosen as the
role's first_found does). The templates call the collection's cuda_min_driver filter, so they render in a child
Python where the collection loader finds accelops.gpu by its FQCN. Debian names are checked against the test
mirror's catalogue, which models NVIDIA's repositories; the Ubuntu and RHEL paths cannot run in the test containers."""

from __future__ import annotations

import base64

import pytest
from rolevars import Batch, preflight_task

from simnode import ROOT, load_sim_script

ROLE = ROOT / "roles" / "cuda_toolkit"

MIRROR = load_sim_script("mirror/cudamirror/build.py", "cudamirror_build")


def facts(distribution, major, family, packages=None, **extra):
    return {"distribution": distribution, "distribution_major_version": major, "os_family": family,
            "packages": packages or {}, **extra}


DEBIAN12 = facts("Debian", "12", "Debian")
UBUNTU22 = facts("Ubuntu", "22", "Debian")
UBUNTU24 = facts("Ubuntu", "24", "Debian")
RHEL9 = facts("RedHat", "9", "RedHat")
ROCKY8 = facts("Rocky", "8", "RedHat")


def vars_file(host):
    for name in ("%s-%s" % (host["distribution"], host["distribution_major_version"]), host["distribution"],
                 host["os_family"]):
        if (ROLE / "vars" / ("%s.yml" % name)).exists():
            return ROLE / "vars" / ("%s.yml" % name)
    raise AssertionError("no vars file for %s" % host)


class _Batch(Batch):
    """Cases of named variables of the role on a host; the driver found is the one the preflight keeps, unless given."""

    def case(self, host, names, **overrides):
        files = [ROLE / "defaults" / "main.yml", ROLE / "vars" / "main.yml", vars_file(host)]
        found = {"__cuda_toolkit_driver": "{{ __cuda_toolkit_driver_found }}"}
        if "__cuda_toolkit_driver" in overrides:
            found = {}
        templates = [(name, "{{ %s }}" % name) for name in names]
        return self.add(files, {**overrides, "ansible_facts": host}, templates, found)

    def __getitem__(self, key):
        result = super().__getitem__(key)
        assert [value for value in result.values() if isinstance(value, dict) and "error" in value] == [], result
        return result


BATCH = _Batch()
case = BATCH.case


NAMES = ("__cuda_toolkit_package_manager", "__cuda_toolkit_packages", "__cuda_toolkit_cudnn_package",
         "__cuda_toolkit_cudnn_library", "__cuda_toolkit_nccl_packages", "__cuda_toolkit_nccl_suffix",
         "__cuda_toolkit_environment_file", "__cuda_toolkit_dirs", "__cuda_toolkit_default_dir",
         "__cuda_toolkit_cudnn_held")


@pytest.mark.parametrize("key, expected", [
    (case(DEBIAN12, NAMES, cuda_toolkit_versions=["12.4", "12.8"]),
     ("apt", "libnccl2", "libnccl-dev", "/etc/default/cuda", "libcudnn9-dev-cuda-12")),
    (case(UBUNTU22, NAMES, cuda_toolkit_versions=["12.4", "12.8"]),
     ("apt", "libnccl2", "libnccl-dev", "/etc/default/cuda", "libcudnn9-dev-cuda-12")),
    (case(UBUNTU24, NAMES, cuda_toolkit_versions=["12.4", "12.8"]),
     ("apt", "libnccl2", "libnccl-dev", "/etc/default/cuda", "libcudnn9-dev-cuda-12")),
    (case(RHEL9, NAMES, cuda_toolkit_versions=["12.4", "12.8"]),
     ("dnf", "libnccl", "libnccl-devel", "/etc/sysconfig/cuda", "libcudnn9-devel-cuda-12")),
    (case(ROCKY8, NAMES, cuda_toolkit_versions=["12.4", "12.8"]),
     ("dnf", "libnccl", "libnccl-devel", "/etc/sysconfig/cuda", "libcudnn9-devel-cuda-12")),
], ids=["debian12", "ubuntu22", "ubuntu24", "rhel9", "rocky8"])
def test_names_per_distribution(key, expected):
    manager, nccl, nccl_dev, environment, cudnn_dev = expected
    result = BATCH[key]
    assert result["__cuda_toolkit_package_manager"] == manager
    assert result["__cuda_toolkit_packages"] == ["cuda-toolkit-12-4", "cuda-toolkit-12-8"]
    assert result["__cuda_toolkit_dirs"] == ["/usr/local/cuda-12.4", "/usr/local/cuda-12.8"]
    assert result["__cuda_toolkit_default_dir"] == "/usr/local/cuda-12.8"
    assert result["__cuda_toolkit_cudnn_package"] == "cudnn9-cuda-12"
    assert result["__cuda_toolkit_cudnn_library"] == "libcudnn9-cuda-12"
    assert result["__cuda_toolkit_nccl_packages"] == [nccl, nccl_dev]
    assert result["__cuda_toolkit_nccl_suffix"] == "+cuda12.8"
    assert result["__cuda_toolkit_environment_file"] == environment
    assert cudnn_dev in result["__cuda_toolkit_cudnn_held"]


DEFAULT = ("__cuda_toolkit_default_version", "__cuda_toolkit_default_major")


@pytest.mark.parametrize("key, expected", [
    (case(DEBIAN12, DEFAULT, cuda_toolkit_versions=["12.8"]), "12.8"),
    (case(DEBIAN12, DEFAULT, cuda_toolkit_versions=["12.4", "12.8"]), "12.8"),
    (case(DEBIAN12, DEFAULT, cuda_toolkit_versions=["12.8", "12.4"]), "12.8"),
    (case(DEBIAN12, DEFAULT, cuda_toolkit_versions=["12.9", "12.10"]), "12.10"),  # numbers: 12.10 is newer than 12.9
    (case(DEBIAN12, DEFAULT, cuda_toolkit_versions=[12.4, 12.8]), "12.8"),  # unquoted YAML floats
    (case(DEBIAN12, DEFAULT, cuda_toolkit_versions=["11.8", "12.4"], cuda_toolkit_default="11.8"), "11.8"),
    (case(DEBIAN12, DEFAULT, cuda_toolkit_versions=["12.4", "13.0"]), "13.0"),
])
def test_default_toolkit(key, expected):
    assert BATCH[key] == {"__cuda_toolkit_default_version": expected,
                          "__cuda_toolkit_default_major": expected.split(".")[0]}


def installed(name, version, release=None):
    entry = {"name": name, "version": version}
    if release:
        entry["release"] = release
    return {name: [entry]}


FOUND = ("__cuda_toolkit_driver_found",)


@pytest.mark.parametrize("key, expected", [
    # The play pins the driver: that wins over the installed package.
    (case(facts("Debian", "12", "Debian", installed("libnvidia-ml1", "550.54.15-1")), FOUND,
          nvidia_driver_version="570.124.06"),
     {"version": "570.124.06", "source": "pinned by nvidia_driver_version"}),
    (case(facts("Debian", "12", "Debian", installed("libnvidia-ml1", "570.124.06-1")), FOUND),
     {"version": "570.124.06", "source": "installed libnvidia-ml1"}),
    (case(facts("Debian", "12", "Debian", installed("libnvidia-ml1", "535.216.01-1~deb12u1")), FOUND,
          nvidia_driver_version=""),
     {"version": "535.216.01", "source": "installed libnvidia-ml1"}),  # Debian's own driver
    (case(facts("Ubuntu", "22", "Debian", installed("libnvidia-compute-570", "570.124.06-0ubuntu1")), FOUND),
     {"version": "570.124.06", "source": "installed libnvidia-compute-570"}),
    (case(facts("Ubuntu", "24", "Debian", installed("libnvidia-compute-550-server", "550.127.08-0ubuntu0.24.04.1")),
          FOUND),
     {"version": "550.127.08", "source": "installed libnvidia-compute-550-server"}),
    (case(facts("Ubuntu", "24", "Debian", installed("libnvidia-compute", "1:590.48.01-0ubuntu1")), FOUND),
     {"version": "590.48.01", "source": "installed libnvidia-compute"}),
    (case(facts("RedHat", "9", "RedHat", installed("nvidia-driver-cuda-libs", "570.124.06", "1.el9")), FOUND),
     {"version": "570.124.06", "source": "installed nvidia-driver-cuda-libs"}),
    # A driver installed without packages (the .run installer): what gpu_facts reported.
    (case(facts("Debian", "12", "Debian", nvidia={"driver_version": "570.86.15"}), FOUND),
     {"version": "570.86.15", "source": "loaded, as gpu_facts reports it"}),
    # An image build: no driver at all.
    (case(facts("Debian", "12", "Debian", installed("libnvidia-cfg1", "570.124.06-1")), FOUND),
     {"version": "", "source": "none"}),
])
def test_driver_found(key, expected):
    assert BATCH[key]["__cuda_toolkit_driver_found"] == expected


def too_new(driver, versions):
    return case(DEBIAN12, ["__cuda_toolkit_too_new"], cuda_toolkit_versions=versions,
                __cuda_toolkit_driver={"version": driver, "source": "test"})


@pytest.mark.parametrize("key, expected", [
    (too_new("570.124.06", ["12.4", "12.8"]), []),
    (too_new("570.124.06", ["12.8", "13.0"]), [{"cuda": "13.0", "driver": "580.65.06"}]),
    (too_new("570.26", ["12.8"]), []),  # exactly the minimum
    (too_new("570.9", ["12.8"]), [{"cuda": "12.8", "driver": "570.26"}]),  # numbers, not strings: 570.9 < 570.26
    (too_new("550.54.15", ["12.4", "12.8"]), [{"cuda": "12.8", "driver": "570.26"}]),
    (too_new("580.65.06", ["13.0"]), []),
])
def test_driver_check(key, expected):
    assert BATCH[key]["__cuda_toolkit_too_new"] == expected


MADISON = """\
cuda-toolkit-12-4 |   12.4.1-1 | http://127.0.0.1:18080/cuda/repos/debian12/x86_64  Packages
cuda-toolkit-12-8 |   12.8.1-1 | http://127.0.0.1:18080/cuda/repos/debian12/x86_64  Packages
libcudnn9-cuda-12 | 9.1.1.17-1 | http://127.0.0.1:18080/cuda/repos/debian12/x86_64  Packages
libcudnn9-cuda-12 | 9.10.2.21-1 | http://127.0.0.1:18080/cuda/repos/debian12/x86_64  Packages
libcudnn9-cuda-12 | 9.8.0.87-1 | http://127.0.0.1:18080/cuda/repos/debian12/x86_64  Packages
  libnccl2 | 2.27.3-1+cuda12.9 | http://127.0.0.1:18080/cuda/repos/debian12/x86_64  Packages
  libnccl2 | 2.26.2-1+cuda12.8 | http://127.0.0.1:18080/cuda/repos/debian12/x86_64  Packages
  libnccl2 | 2.25.1-1+cuda12.8 | http://127.0.0.1:18080/cuda/repos/debian12/x86_64  Packages
  libnccl2 | 2.21.5-1+cuda12.4 | http://127.0.0.1:18080/cuda/repos/debian12/x86_64  Packages
"""
DNF_LIST = """\
Available Packages
cuda-toolkit-12-8.x86_64          12.8.1-1            cuda-rhel9-x86_64
libcudnn9-cuda-12.x86_64          9.8.0.87-1          cuda-rhel9-x86_64
libcudnn9-cuda-12.x86_64          9.10.2.21-1         cuda-rhel9-x86_64
libnccl.x86_64                    2.21.5-1+cuda12.4   cuda-rhel9-x86_64
libnccl.x86_64                    2.25.1-1+cuda12.8   cuda-rhel9-x86_64
libnccl.x86_64                    2.26.2-1+cuda12.8   cuda-rhel9-x86_64
libnccl.x86_64                    2.27.3-1+cuda12.9   cuda-rhel9-x86_64
"""
CHOICE = ("__cuda_toolkit_nccl_version", "__cuda_toolkit_cudnn_version", "__cuda_toolkit_install",
          "__cuda_toolkit_holdable")


def choice(host, lookup, versions, default=""):
    return case(host, CHOICE, cuda_toolkit_versions=versions, cuda_toolkit_default=default,
                __cuda_toolkit_lookup={"stdout_lines": lookup.splitlines()})


@pytest.mark.parametrize("key, expected", [
    (choice(DEBIAN12, MADISON, ["12.8"]),
     ["cuda-toolkit-12-8", "cudnn9-cuda-12=9.10.2.21-1", "libnccl2=2.26.2-1+cuda12.8",
      "libnccl-dev=2.26.2-1+cuda12.8"]),
    (choice(DEBIAN12, MADISON, ["12.4", "12.8"], "12.4"),
     ["cuda-toolkit-12-4", "cuda-toolkit-12-8", "cudnn9-cuda-12=9.10.2.21-1", "libnccl2=2.21.5-1+cuda12.4",
      "libnccl-dev=2.21.5-1+cuda12.4"]),
    (choice(RHEL9, DNF_LIST, ["12.8"]),
     ["cuda-toolkit-12-8", "cudnn9-cuda-12-9.10.2.21-1", "libnccl-2.26.2-1+cuda12.8",
      "libnccl-devel-2.26.2-1+cuda12.8"]),
    # No +cuda13.0 NCCL and no cuDNN for CUDA 13 here: the role stops with a message before installing.
    (choice(DEBIAN12, MADISON, ["13.0"]), ["cuda-toolkit-13-0"]),
])
def test_newest_builds_for_the_default(key, expected):
    assert BATCH[key]["__cuda_toolkit_install"] == expected


def probed(lines):
    """The preflight's node_probe candidates for the packages of a madison listing (versions on offer, newest first
    as apt-cache policy lists them), with a package apt does not know."""
    candidates = {"cuda-toolkit-13-0": {"known": False, "installed": None, "candidate": None, "versions": []}}
    for line in lines.splitlines():
        name, version = (part.strip() for part in line.split("|")[:2])
        entry = candidates.setdefault(name, {"known": True, "installed": None, "candidate": version, "versions": []})
        entry["versions"].append(version)
    return {"candidates": candidates}


# Without a lookup after reading the lists again (tasks/apt.yml skipped it), the preflight's read gives the same
# choice as apt-cache madison.
@pytest.mark.parametrize("key, expected", [
    (case(DEBIAN12, (*CHOICE, "__cuda_toolkit_unknown"), cuda_toolkit_versions=versions, cuda_toolkit_default=default,
          __cuda_toolkit_state=probed(MADISON)), expected)
    for versions, default, expected in [
        (["12.8"], "", ["cuda-toolkit-12-8", "cudnn9-cuda-12=9.10.2.21-1", "libnccl2=2.26.2-1+cuda12.8",
                        "libnccl-dev=2.26.2-1+cuda12.8"]),
        (["12.4", "12.8"], "12.4", ["cuda-toolkit-12-4", "cuda-toolkit-12-8", "cudnn9-cuda-12=9.10.2.21-1",
                                    "libnccl2=2.21.5-1+cuda12.4", "libnccl-dev=2.21.5-1+cuda12.4"]),
        (["13.0"], "", ["cuda-toolkit-13-0"])]])
def test_newest_builds_from_the_preflight_read(key, expected):
    assert BATCH[key]["__cuda_toolkit_install"] == expected
    # A toolkit apt does not know makes tasks/apt.yml read the package lists again.
    assert BATCH[key]["__cuda_toolkit_unknown"] == (["cuda-toolkit-13-0"] if expected == ["cuda-toolkit-13-0"] else [])


ALTERNATIVES = "manual\n/usr/local/cuda\n\n/usr/local/cuda-12.4\n124\n/usr/local/cuda-12.8\n128\n\n"


def alternatives(cuda, cuda12, target="/usr/local/cuda-12.4", target12="/usr/local/cuda-12.4"):
    """The configuration probe's read of update-alternatives' state and links (None: no such file)."""
    files = {}
    for link, admin, points in (("cuda", cuda, target), ("cuda-12", cuda12, target12)):
        files["/var/lib/dpkg/alternatives/" + link] = (
            {"exists": False} if admin is None
            else {"exists": True, "type": "file", "content": base64.b64encode(admin.encode()).decode()})
        files["/etc/alternatives/" + link] = {"exists": True, "type": "link", "target": points}
    return {"files": files}


@pytest.mark.parametrize("key, expected", [
    (case(DEBIAN12, ["__cuda_toolkit_links_in_place"], cuda_toolkit_versions=["12.4", "12.8"],
          cuda_toolkit_default="12.4", __cuda_toolkit_conf_state=state), expected)
    for state, expected in [
        (alternatives(ALTERNATIVES, ALTERNATIVES.replace("/usr/local/cuda\n", "/usr/local/cuda-12\n", 1)),
         ["cuda", "cuda-12"]),
        # auto mode: a toolkit installed later would move the link.
        (alternatives(ALTERNATIVES.replace("manual", "auto"), ALTERNATIVES), ["cuda-12"]),
        # Pointing elsewhere, or the default not registered as a choice, or no state at all: asked again.
        (alternatives(ALTERNATIVES, ALTERNATIVES, target="/usr/local/cuda-12.8"), ["cuda-12"]),
        (alternatives(ALTERNATIVES.replace("/usr/local/cuda-12.4\n124\n", ""), None), []),
        # The link's own path is not a choice: only what follows the header counts.
        (alternatives("manual\n/usr/local/cuda-12.4\n\n/usr/local/cuda-12.8\n128\n\n", ALTERNATIVES), ["cuda-12"]),
    ]])
def test_links_in_place(key, expected):
    assert BATCH[key]["__cuda_toolkit_links_in_place"] == expected


@pytest.mark.parametrize("key", [case(DEBIAN12, CHOICE, cuda_toolkit_cudnn=False, cuda_toolkit_nccl=False,
                                      __cuda_toolkit_lookup={"stdout_lines": MADISON.splitlines()})])
def test_cudnn_and_nccl_can_be_left_out(key):
    assert BATCH[key]["__cuda_toolkit_install"] == ["cuda-toolkit-12-8"]
    assert BATCH[key]["__cuda_toolkit_holdable"] == []


@pytest.mark.parametrize("key", [case(DEBIAN12, ["__cuda_toolkit_units"],
                                      cuda_toolkit_services=["jupyterhub", "trainer@1.service", "jupyterhub.service"])])
def test_service_units(key):
    assert BATCH[key]["__cuda_toolkit_units"] == ["jupyterhub.service", "trainer@1.service"]


@pytest.mark.parametrize("key, expected", [
    (case(DEBIAN12, ["__cuda_toolkit_files"], cuda_toolkit_services=[]), []),
    (case(RHEL9, ["__cuda_toolkit_files"], cuda_toolkit_services=["jupyterhub", "trainer@1.service"]),
     ["jupyterhub.service", "trainer@1.service"]),
], ids=["debian12-no-services", "rhel9-two-services"])
def test_files_declared_once(key, expected):
    """Every file, directory and drop-in the role writes is one node_files entry: the environment files of the
    distribution, then each service's drop-in directory before its drop-in."""
    environment = "/etc/sysconfig/cuda" if expected else "/etc/default/cuda"
    wanted = [{"dest": "/etc/profile.d/cuda.sh", "template": "cuda.sh.j2"},
              {"dest": environment, "template": "cuda.env.j2"},
              {"dest": "/etc/ld.so.conf.d/accelops-cuda.conf", "template": "ld.so.conf.j2"}]
    wanted += [{"dest": "/etc/systemd/system/%s.d" % unit, "directory": True} for unit in expected]
    wanted += [{"dest": "/etc/systemd/system/%s.d/accelops-cuda-environment.conf" % unit,
                "template": "environment-dropin.conf.j2"} for unit in expected]
    assert BATCH[key]["__cuda_toolkit_files"] == wanted


MIRROR_RELEASES = [".".join(cuda["release"].split(".")[:2]) for cuda in MIRROR.CUDA_RELEASES]


@pytest.mark.parametrize("key", [
    case(DEBIAN12, ("__cuda_toolkit_packages", "__cuda_toolkit_holdable", "__cuda_toolkit_nccl_suffix",
                    "__cuda_toolkit_cudnn_library"),
         cuda_toolkit_versions=MIRROR_RELEASES, cuda_toolkit_default=default)
    for default in MIRROR_RELEASES], ids=MIRROR_RELEASES)
def test_every_name_exists_in_nvidia_layout(key):
    """What the role installs, holds and checks are packages of NVIDIA's Debian repository as the mirror models it,
    and there is an NCCL build for each toolkit as the default."""
    available = {}
    for package in MIRROR.cuda_packages() + MIRROR.library_packages():
        available.setdefault(package.name, set()).add(package.version)
    result = BATCH[key]
    names = [*result["__cuda_toolkit_packages"], *result["__cuda_toolkit_holdable"],
             result["__cuda_toolkit_cudnn_library"]]
    assert [name for name in names if name not in available] == []
    assert any(version.endswith(result["__cuda_toolkit_nccl_suffix"]) for version in available["libnccl2"])


GPU_CHECK = preflight_task("cuda_toolkit", "Refuse a toolkit that does not build for the GPUs")
GPU_BATCH = Batch()


def gpus_case(nvidia, versions):
    return GPU_BATCH.add([ROLE / "defaults" / "main.yml", ROLE / "vars" / "main.yml"],
                         {"ansible_facts": {"nvidia": nvidia}, "cuda_toolkit_versions": versions},
                         [("ok", "{{ %s }}" % GPU_CHECK["ansible.builtin.assert"]["that"]),
                          ("message", GPU_CHECK["ansible.builtin.assert"]["fail_msg"])], GPU_CHECK["vars"])


V100S = {"gpus": [{"architecture": "volta", "compute_capability": "7.0"}] * 8, "pci_devices": []}
BLACKWELL_PCI = {"gpus": [], "pci_devices": [{"kind": "gpu", "architecture": "blackwell"},
                                             {"kind": "nvswitch", "architecture": None}]}


@pytest.mark.parametrize("key, ok, parts", [
    # CUDA 13 no longer builds for Volta: NVML's GPUs, with their compute capability.
    (gpus_case(V100S, ["12.8", "13.0"]), False,
     ["CUDA 13.0 does not build for Volta (compute capability 7.0): the last CUDA that builds for it is 12.9; "
      "nearest: 12.9 (cuda_toolkit_versions). Nothing was installed."]),
    (gpus_case(V100S, ["12.4", "12.8"]), True, []),
    # Before any driver: the GPUs on the PCI bus, by architecture.
    (gpus_case(BLACKWELL_PCI, ["12.4"]), False, ["CUDA 12.4 does not build for Blackwell: it needs CUDA "
                                                 "12.8 or newer; nearest: 12.8"]),
    (gpus_case(BLACKWELL_PCI, ["12.8"]), True, []),  # B200 and RTX PRO build with 12.8; B300 needs 12.9
    (gpus_case({"gpus": [], "pci_devices": []}, ["13.0"]), True, []),  # an image build: no GPU
], ids=["v100-cuda13", "v100-cuda12", "blackwell-pci-cuda12.4", "blackwell-pci-cuda12.8", "no-gpu"])
def test_toolkit_against_the_gpus(key, ok, parts):
    result = GPU_BATCH[key]
    assert result["ok"] is ok, result
    for part in parts:
        assert part in result["message"], result["message"]


# A CUDA release the compatibility table does not know is refused before anything else reads the table, naming the
# newest release it knows; cuda_toolkit_min_drivers names what NVIDIA has published since.
MIN_TASK = preflight_task("cuda_toolkit", "Look up the minimum driver of CUDA {{ __cuda_toolkit_wanted | join(', ') }}")
MIN_REFUSAL = preflight_task("cuda_toolkit", "Refuse a CUDA release the compatibility table does not know")
MIN_BATCH = Batch()
NEWER = {"13.4": "615.20.01"}


def min_case(versions, **overrides):
    return MIN_BATCH.add([ROLE / "defaults" / "main.yml", ROLE / "vars" / "main.yml"],
                         {"ansible_facts": DEBIAN12, "cuda_toolkit_versions": versions, **overrides},
                         [("min", MIN_TASK["ansible.builtin.set_fact"]["__cuda_toolkit_min_drivers"]),
                          ("message", MIN_REFUSAL["ansible.builtin.fail"]["msg"])], MIN_REFUSAL["vars"])


@pytest.mark.parametrize("key, drivers", [
    (min_case(["12.8", "13.3"]), ["570.26", "610.43.02"]),
    (min_case(["13.3", "13.4"], cuda_toolkit_min_drivers=NEWER), ["610.43.02", "615.20.01"]),
], ids=["in-the-table", "named"])
def test_minimum_drivers(key, drivers):
    assert MIN_BATCH[key]["min"] == drivers


@pytest.mark.parametrize("key, message", [
    (min_case(["12.8", "13.4"]),
     "cuda_toolkit_versions: CUDA 13.4 is newer than the table: its newest is CUDA 13.3 (driver >= 610.43.02), and it "
     "cannot say which driver CUDA 13.4 needs; where NVIDIA has published its minimum driver (CUDA Toolkit release "
     "notes, table \"CUDA Toolkit and Corresponding Driver Versions\"), name it: cuda_toolkit_min_drivers: "
     "{'13.4': '<driver>'}. Nothing was installed."),
    (min_case(["12.7"]), "cuda_toolkit_versions: CUDA 12.7 is not in the table (CUDA 11.0 to 13.3); nearest: 12.6. "
                         "Nothing was installed."),
    (min_case(["13.4"], cuda_toolkit_min_drivers={"13.4": "600.1"}),
     "cuda_toolkit_min_drivers: CUDA 13.4.0's driver 600.1 is older than CUDA 13.3.1's (610.43.02); a newer CUDA "
     "release never needs an older driver. Nothing was installed."),
    # The message names the role's variable, not "driver 'latest'" alone (which reads as the node's driver).
    (min_case(["13.4"], cuda_toolkit_min_drivers={"13.4": "latest"}),
     "cuda_toolkit_min_drivers: CUDA 13.4's driver 'latest' is not a version: expected numbers separated by dots, "
     "e.g. 550.54.15. Nothing was installed."),
    (min_case(["13.3"], cuda_toolkit_min_drivers={"thirteen": "615.1"}),
     "cuda_toolkit_min_drivers: CUDA 'thirteen' is not a version: expected numbers separated by dots, e.g. 12.4. "
     "Nothing was installed."),
], ids=["newer", "never-released", "wrong-override", "override-driver-not-a-version", "override-cuda-not-a-version"])
def test_a_cuda_the_table_does_not_know_is_refused(key, message):
    result = MIN_BATCH[key]
    assert "error" in result["min"]
    assert result["message"] == message


DRIVER_TASK = preflight_task("cuda_toolkit", "Refuse a toolkit the driver cannot run")["ansible.builtin.assert"]


def driver_case(driver, versions, **overrides):
    return MIN_BATCH.add([ROLE / "defaults" / "main.yml", ROLE / "vars" / "main.yml"],
                         {"ansible_facts": DEBIAN12, "cuda_toolkit_versions": versions,
                          "__cuda_toolkit_driver": {"version": driver, "source": "loaded, as gpu_facts reports it"},
                          **overrides},
                         [("ok", "{{ %s }}" % DRIVER_TASK["that"]), ("message", DRIVER_TASK["fail_msg"])])


@pytest.mark.parametrize("key, ok, part", [
    # Ansible renders a task's arguments before it runs: the message must render on a driver newer than the table,
    # which runs every toolkit the table knows.
    (driver_case("615.20.01", ["12.8", "13.3"]), True, "the driver is 615.20.01"),
    (driver_case("610.43.02", ["13.3", "13.4"], cuda_toolkit_min_drivers=NEWER), False,
     "CUDA 13.4 needs NVIDIA driver 615.20.01 or newer; the driver is 610.43.02 (loaded, as gpu_facts reports it), "
     "which runs CUDA up to 13.3. Nothing was installed"),
    (driver_case("615.20.01", ["13.4"], cuda_toolkit_min_drivers=NEWER), True, "the driver is 615.20.01"),
    # A driver older than every CUDA release in the table: the refusal renders, saying so.
    (driver_case("418.67", ["12.4"]), False,
     "CUDA 12.4 needs NVIDIA driver 550.54.14 or newer; the driver is 418.67 (loaded, as gpu_facts reports it), "
     "which is older than every CUDA release in the table. Nothing was installed: install a newer driver"),
], ids=["newer-driver", "named-too-new", "named-fits", "older-than-the-table"])
def test_driver_check_beyond_the_table(key, ok, part):
    result = MIN_BATCH[key]
    assert result["ok"] is ok, result
    assert part in result["message"]


GPU_NAMED = GPU_BATCH.add([ROLE / "defaults" / "main.yml", ROLE / "vars" / "main.yml"],
                          {"ansible_facts": {"nvidia": V100S}, "cuda_toolkit_versions": ["13.4"],
                           "cuda_toolkit_min_drivers": NEWER},
                          [("ok", "{{ %s }}" % GPU_CHECK["ansible.builtin.assert"]["that"]),
                           ("message", GPU_CHECK["ansible.builtin.assert"]["fail_msg"])], GPU_CHECK["vars"])


def test_gpu_check_takes_the_named_releases():
    result = GPU_BATCH[GPU_NAMED]
    assert result["ok"] is False
    assert result["message"].startswith("CUDA 13.4 does not build for Volta (compute capability 7.0): the last CUDA "
                                        "that builds for it is 12.9")
