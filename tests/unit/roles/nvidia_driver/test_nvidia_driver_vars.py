"""nvidia_driver's package names, pinning, holds and module streams for every distribution it supports, rendered by
Ansible's own templating from the role's defaults and vars files (chosen as the role's first_found does). Debian and
Ubuntu names are checked against the test mirror's catalogue, which models NVIDIA's repositories; the Ubuntu and RHEL
paths cannot run in the test containers."""

from __future__ import annotations

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
from rolevars import Batch, preflight_task

from simnode import ROOT, load_sim_script

ROLE = ROOT / "roles" / "nvidia_driver"
NAMES = ("__nvidia_driver_package_manager", "__nvidia_driver_pinning", "__nvidia_driver_packages",
         "__nvidia_driver_library_package", "__nvidia_driver_persistenced_package",
         "__nvidia_driver_fabricmanager_package", "__nvidia_driver_hold_packages")


MIRROR = load_sim_script("mirror/cudamirror/build.py", "cudamirror_build")


def vars_file(facts):
    """The role's first_found: distribution-major, distribution, os family."""
    for name in ("%s-%s" % (facts["distribution"], facts["distribution_major_version"]), facts["distribution"],
                 facts["os_family"]):
        if (ROLE / "vars" / ("%s.yml" % name)).exists():
            return ROLE / "vars" / ("%s.yml" % name)
    raise AssertionError("no vars file for %s" % facts)


def render(facts, modules="open", names=NAMES, **overrides):
    loader = DataLoader()
    variables = {}
    for path in (ROLE / "defaults" / "main.yml", ROLE / "vars" / "main.yml", vars_file(facts)):
        variables.update(loader.load_from_file(str(path), trusted_as_template=True))
    variables.update(overrides)
    variables.update(ansible_facts=facts, __nvidia_driver_modules=modules)
    templar = Templar(loader=loader, variables=variables)
    result = {name[len("__nvidia_driver_"):]: templar.template(trust_as_template("{{ %s }}" % name)) for name in names}
    if "__nvidia_driver_module_stream" in variables:
        result["module_stream"] = templar.template(trust_as_template("{{ __nvidia_driver_module_stream }}")).strip()
    return result


def facts(distribution, major, family):
    return {"distribution": distribution, "distribution_major_version": major, "os_family": family}


DEBIAN12 = facts("Debian", "12", "Debian")
UBUNTU22 = facts("Ubuntu", "22", "Debian")
UBUNTU24 = facts("Ubuntu", "24", "Debian")
RHEL9 = facts("RedHat", "9", "RedHat")
ROCKY8 = facts("Rocky", "8", "RedHat")


@pytest.mark.parametrize("host, branch, version, expected", [
    (DEBIAN12, "570", "", {"pinning": "nvidia-driver-pinning-570", "library_package": "libnvidia-ml1",
                           "fabricmanager_package": "nvidia-fabricmanager-570",
                           "persistenced_package": "nvidia-persistenced"}),
    (DEBIAN12, "590", "590.48.01", {"pinning": "nvidia-driver-pinning-590.48.01",
                                    "fabricmanager_package": "nvidia-fabricmanager"}),
    (UBUNTU22, "570", "", {"pinning": "nvidia-driver-pinning-570", "library_package": "libnvidia-compute-570",
                           "fabricmanager_package": "nvidia-fabricmanager-570",
                           "persistenced_package": "nvidia-compute-utils-570"}),
    (UBUNTU24, "590", "", {"pinning": "nvidia-driver-pinning-590", "library_package": "libnvidia-compute",
                           "fabricmanager_package": "nvidia-fabricmanager",
                           "persistenced_package": "nvidia-compute-utils"}),
    (RHEL9, "570", "", {"pinning": "", "library_package": "nvidia-driver-cuda-libs",
                        "fabricmanager_package": "nvidia-fabric-manager", "package_manager": "dnf"}),
])
def test_names_per_distribution_and_branch(host, branch, version, expected):
    result = render(host, nvidia_driver_branch=branch, nvidia_driver_version=version)
    assert {key: str(result[key]).strip() for key in expected} == expected


@pytest.mark.parametrize("host, branch, modules, packages", [
    (DEBIAN12, "550", "open", ["nvidia-open"]),
    (DEBIAN12, "550", "proprietary", ["nvidia-driver", "nvidia-kernel-dkms", "nvidia-driver-cuda"]),
    (UBUNTU22, "550", "open", ["nvidia-open-550"]),
    (UBUNTU22, "570", "proprietary", ["cuda-drivers-570"]),
    (UBUNTU24, "590", "open", ["nvidia-open"]),
    (UBUNTU24, "590", "proprietary", ["cuda-drivers"]),
    (RHEL9, "570", "open", ["nvidia-open"]),
    (ROCKY8, "570", "proprietary", ["cuda-drivers"]),
])
def test_driver_packages(host, branch, modules, packages):
    assert list(render(host, nvidia_driver_branch=branch)["packages"][modules]) == packages


@pytest.mark.parametrize("host, branch, modules, stream", [
    (RHEL9, "570", "open", "nvidia-driver:570-open"),
    (RHEL9, "550", "proprietary", "nvidia-driver:550-dkms"),
    (ROCKY8, "580", "open", "nvidia-driver:580-open"),
    (RHEL9, "590", "open", ""),  # no module streams from 590 on: a versionlock keeps the branch
])
def test_rhel_module_streams(host, branch, modules, stream):
    assert render(host, modules=modules, nvidia_driver_branch=branch)["module_stream"] == stream


MIRROR_DISTROS = [("debian12", DEBIAN12), ("ubuntu2204", UBUNTU22), ("ubuntu2404", UBUNTU24)]


@pytest.mark.parametrize("distro, host", MIRROR_DISTROS)
@pytest.mark.parametrize("branch", sorted(MIRROR.DRIVER_BRANCHES))
@pytest.mark.parametrize("modules", ["open", "proprietary"])
def test_every_name_exists_in_nvidia_layout(distro, host, branch, modules):
    """What the role installs, checks and holds are packages of that distribution's repository for that branch."""
    releases = MIRROR.DRIVER_BRANCHES[branch]
    flavour = MIRROR.DISTROS[distro]
    build = MIRROR.debian_driver_packages if flavour == "debian" else MIRROR.ubuntu_driver_packages
    available = {}
    for release in releases:
        for package in build(branch, release, releases[0], "/dev/null") + MIRROR.pinning_packages():
            available.setdefault(package.name, set()).add(package.version)
    result = render(host, nvidia_driver_branch=branch, nvidia_driver_version=releases[-1])
    wanted = [*result["packages"][modules], result["library_package"], result["fabricmanager_package"],
              result["persistenced_package"], result["pinning"]]
    missing = [name for name in map(str, wanted) if name.strip() not in available]
    assert not missing, "not in NVIDIA's %s layout for %s: %s" % (distro, branch, missing)
    holds = {str(name) for name in result["hold_packages"]}
    # The library package is held; every held name the branch has is one of the repository's packages.
    assert str(result["library_package"]) in holds
    assert holds & set(available) >= {str(result["library_package"]), *map(str, result["packages"][modules])}
    # The library package carries the driver release as its version, which the role reads back.
    assert {version.split("-")[0] for version in available[str(result["library_package"])]} == set(releases)


def test_unsupported_distribution_is_named():
    variables = DataLoader().load_from_file(str(ROLE / "vars" / "main.yml"), trusted_as_template=True)
    supported = variables["__nvidia_driver_supported"]
    assert {"Debian-12", "Debian-13", "Ubuntu-22", "Ubuntu-24", "RedHat-9", "Rocky-8"} <= set(supported)
    assert "Fedora-41" not in supported


@pytest.mark.parametrize("modules, kernel, packages", [
    ("open", "6.8.0-45-generic", ["linux-modules-nvidia-570-server-open-generic",
                                  "nvidia-headless-no-dkms-570-server-open", "nvidia-utils-570-server"]),
    ("proprietary", "5.15.0-1060-nvidia", ["linux-modules-nvidia-570-server-nvidia",
                                           "nvidia-headless-no-dkms-570-server", "nvidia-utils-570-server"]),
])
def test_ubuntu_signed_modules_under_secure_boot(modules, kernel, packages):
    """nvidia_driver_secure_boot: signed takes Canonical's signed modules for the running kernel's flavour."""
    host = dict(UBUNTU24, kernel=kernel)
    result = render(host, modules=modules, nvidia_driver_branch="570", nvidia_driver_secure_boot="signed",
                    __nvidia_driver_secure_boot_on=True)
    assert [str(name) for name in result["packages"][modules]] == packages
    assert str(result["library_package"]).strip() == "libnvidia-compute-570-server"
    assert str(result["persistenced_package"]).strip() == "nvidia-compute-utils-570-server"
    assert set(packages) <= {str(name) for name in result["hold_packages"]}


@pytest.mark.parametrize("host, secure_boot", [(DEBIAN12, "mok"), (UBUNTU24, "signed"), (UBUNTU22, "mok")])
@pytest.mark.parametrize("modules", ["open", "proprietary"])
def test_the_probe_asks_apt_for_every_package_the_role_may_want(host, secure_boot, modules):
    """The preflight's node_probe reads apt's candidates before Secure Boot is known: whatever it turns out to be,
    every package the role then wants is among them, so a converged node reads as converged."""
    host = dict(host, kernel="6.8.0-45-generic")
    asked = render(host, modules=modules, names=("__nvidia_driver_probe_candidates",), nvidia_driver_branch="570",
                   nvidia_driver_secure_boot=secure_boot)["probe_candidates"]
    for secure_boot_on in (False, True):
        wanted = render(host, modules=modules, nvidia_driver_branch="570", nvidia_driver_secure_boot=secure_boot,
                        __nvidia_driver_secure_boot_on=secure_boot_on)
        needed = [*wanted["packages"][modules], wanted["library_package"], wanted["persistenced_package"],
                  wanted["fabricmanager_package"]]
        assert {str(name).strip() for name in needed} <= {str(name).strip() for name in asked}


@pytest.mark.parametrize("host", [DEBIAN12, RHEL9])
def test_signed_modules_are_offered_on_ubuntu_only(host):
    variables = DataLoader().load_from_file(str(vars_file(host)), trusted_as_template=True)
    assert variables["__nvidia_driver_signed_offered"] is False
    assert DataLoader().load_from_file(str(vars_file(UBUNTU24)))["__nvidia_driver_signed_offered"] is True


GPU_CHECK = preflight_task("nvidia_driver", "Check the driver branch and the kernel modules against the GPUs")
GPU_BATCH = Batch()


def pci(*architectures):
    """gpu_facts' answer before any driver (the role's own read, set_facts: false): the GPUs (and an NVSwitch) on the
    PCI bus, by architecture."""
    devices = [{"kind": "gpu", "architecture": arch, "device_id": "0x0000"} for arch in architectures]
    return {"nvidia": {"pci_devices": [*devices, {"kind": "nvswitch", "architecture": None}]}}


def gpu_case(architectures, branch, modules):
    return GPU_BATCH.add([], {"nvidia_driver_branch": branch, "__nvidia_driver_modules": modules,
                              "__nvidia_driver_gpus": pci(*architectures)},
                         [("ok", "{{ %s }}" % GPU_CHECK["ansible.builtin.assert"]["that"]),
                          ("message", GPU_CHECK["ansible.builtin.assert"]["fail_msg"])], GPU_CHECK["vars"])


@pytest.mark.parametrize("key, ok, parts", [
    # The V100 node: branch 590 refused, 580 accepted.
    (gpu_case(["volta"] * 8, 590, "proprietary"), False,
     ["The GPUs on the PCI bus cannot run this driver: driver branch 590 does not support Volta: its last branch is "
      "580; nearest: 580 (nvidia_driver_branch 590, kernel modules proprietary); nothing was changed."]),
    (gpu_case(["volta"] * 8, 580, "proprietary"), True, []),
    (gpu_case(["volta"], 580, "open"), False, ["the open kernel modules do not support Volta (Turing and newer "
                                               "only); nearest: proprietary"]),
    (gpu_case(["blackwell"] * 8, 550, "open"), False, ["driver branch 550 does not support Blackwell: it needs "
                                                       "branch 570 or newer; nearest: 570"]),
    (gpu_case(["blackwell"], 580, "proprietary"), False, ["Blackwell runs with the open kernel modules only"]),
    (gpu_case(["kepler"], 535, "proprietary"), False, ["its last branch is 470; nearest: 470"]),
    (gpu_case(["hopper"] * 8, 590, "open"), True, []),
    (gpu_case([], 590, "open"), True, []),  # no NVIDIA GPU on the bus: nothing to refuse here
], ids=["v100-590", "v100-580", "v100-open", "blackwell-550", "blackwell-proprietary", "kepler-535", "h100-590",
        "no-gpu"])
def test_branch_and_modules_against_the_gpus(key, ok, parts):
    result = GPU_BATCH[key]
    assert result["ok"] is ok
    for part in parts:
        assert part in result["message"], result["message"]


BUSY_CHECK = preflight_task("nvidia_driver", "Refuse to change the driver under running GPU work", "install.yml")
BUSY_BATCH = Batch()


def busy_case(facts, allow=False):
    variables = {"__nvidia_driver_gpus": {"nvidia": facts}, "nvidia_driver_allow_busy": allow}
    return BUSY_BATCH.add([ROLE / "defaults" / "main.yml"], variables,
                          [("ok", "{{ %s }}" % BUSY_CHECK["ansible.builtin.assert"]["that"]),
                           ("message", BUSY_CHECK["ansible.builtin.assert"]["fail_msg"])], BUSY_CHECK["vars"])


def gpus(*processes, count=None):
    """gpu_facts of a loaded driver: one GPU per entry, its processes (a list, or None where NVML could not list
    them, with the error NVML gave)."""
    listed = [{"index": i, "processes": p, "errors": [] if p is not None else
               ["nvmlDeviceGetComputeRunningProcesses: Unknown Error (NVML error 999)"]}
              for i, p in enumerate(processes)]
    return {"driver_loaded": True, "gpu_count": len(listed) if count is None else count, "gpus": listed,
            "driver_mismatch": None}


@pytest.mark.parametrize("key, ok, parts", [
    (busy_case(gpus([], [])), True, []),
    (busy_case(gpus([], [{"pid": 4242, "name": "train.py"}])), False, ["GPU 1 pid 4242 (train.py)"]),
    # An NVML error while listing a GPU's processes, or GPUs NVML counted but did not list, is work that cannot be
    # seen: never read as idle GPUs.
    (busy_case(gpus([], None)), False, ["GPU 1: its processes cannot be read (nvmlDeviceGetComputeRunningProcesses: "
                                        "Unknown Error (NVML error 999))", "cannot be seen"]),
    (busy_case({**gpus(), "gpu_count": None}), False, ["NVML counts None GPU(s) but 0 could be listed"]),
    (busy_case(gpus([], None), allow=True), True, []),
    # No driver loaded (a first install) or one NVML cannot start under (the other check says so): nothing to see.
    (busy_case({"driver_loaded": False, "gpu_count": 0, "gpus": [], "reason": "the driver is not loaded"}), True, []),
], ids=["idle", "busy", "processes-unreadable", "gpus-not-listed", "unreadable-allowed", "driver-not-loaded"])
def test_the_busy_guard_never_reads_an_nvml_error_as_idle(key, ok, parts):
    result = BUSY_BATCH[key]
    assert result["ok"] is ok, result
    for part in parts:
        assert part in result["message"], result["message"]


LOADED_BATCH = Batch()


def loaded_case(before, after=None):
    variables = {"__nvidia_driver_gpus": {"nvidia": before}}
    variables["__nvidia_driver_after"] = {"ansible_facts": {"nvidia": after}} if after else {"skipped": True}
    return LOADED_BATCH.add([ROLE / "vars" / "main.yml"], variables, [("loaded", "{{ __nvidia_driver_loaded }}")])


NO_LIBRARY = {"driver_version": None, "driver_mismatch": None}


@pytest.mark.parametrize("key, loaded", [
    # A first install: before it no library answered; after it the module the node runs is what counts.
    (loaded_case(NO_LIBRARY, {"driver_version": "550.54.15", "driver_mismatch": None}), "550.54.15"),
    (loaded_case(NO_LIBRARY, {"driver_version": None, "driver_mismatch": None}), ""),  # not loaded until a reboot
    # An upgrade under the old module: NVML refuses to start, the module's own release counts.
    (loaded_case({"driver_version": "550.54.15", "driver_mismatch": None},
                 {"driver_version": None, "driver_mismatch": {"loaded": "550.54.15", "library": "550.127.08"}}),
     "550.54.15"),
    # Nothing changed: the preflight's facts.
    (loaded_case({"driver_version": "570.124.06", "driver_mismatch": None}), "570.124.06"),
], ids=["first-install-loaded", "first-install-not-loaded", "upgrade-mismatch", "unchanged"])
def test_the_loaded_driver_is_read_after_the_change(key, loaded):
    assert LOADED_BATCH[key]["loaded"] == loaded


KERNEL_BATCH = Batch()
KERNELS_FACT = preflight_task("nvidia_driver", "Note the kernels that need the driver's module", "install.yml")


def boot(*names, modules=None):
    """node_probe's globs, flattened: the /boot images, and modules.order of every kernel with modules (each image's
    by default)."""
    kernels = modules if modules is not None else [name[len("vmlinuz-"):] for name in names]
    return ["/boot/%s" % name for name in names] + ["/lib/modules/%s/modules.order" % kernel for kernel in kernels]


def kernels_case(in_container, files, running="6.1.0-28-amd64", modules=None):
    variables = {"__nvidia_driver_in_container": in_container,
                 "__nvidia_driver_boot_paths": boot(*files, modules=modules), "ansible_facts": {"kernel": running}}
    return KERNEL_BATCH.add([], variables,
                            [("kernels", KERNELS_FACT["ansible.builtin.set_fact"]["__nvidia_driver_kernels"])])


@pytest.mark.parametrize("key, kernels", [
    # A host: the running kernel and every installed one, once each; the RHEL rescue image has no headers.
    (kernels_case(False, ["vmlinuz-6.1.0-29-amd64", "vmlinuz-6.1.0-28-amd64"]), ["6.1.0-28-amd64", "6.1.0-29-amd64"]),
    (kernels_case(False, ["vmlinuz-5.14.0-427.el9.x86_64", "vmlinuz-0-rescue-0f1e2d3c"], "5.14.0-427.el9.x86_64"),
     ["5.14.0-427.el9.x86_64"]),
    (kernels_case(False, []), ["6.1.0-28-amd64"]),
    # A container: the running kernel is the host's, only the container's own count.
    (kernels_case(True, ["vmlinuz-6.1.0-902-amd64", "vmlinuz-6.1.0-901-amd64"]),
     ["6.1.0-901-amd64", "6.1.0-902-amd64"]),
    (kernels_case(True, []), []),
    # Files in /boot that are no installed kernel: no modules, odd names, an image without a release.
    (kernels_case(True, ["vmlinuz-6.1.0-901-amd64", "vmlinuz-6.1.0-900-amd64", "vmlinuz-", "vmlinuz-*",
                         "vmlinuz-6.1 x", "vmlinuz-6.1.0-9.efi.signed;x"],
                  modules=["6.1.0-901-amd64", "", "*", "6.1 x", "6.1.0-9.efi.signed;x"]), ["6.1.0-901-amd64"]),
], ids=["host", "rhel-rescue", "host-no-boot-files", "container", "container-without-kernels", "odd-files"])
def test_the_kernels_that_need_the_module(key, kernels):
    assert KERNEL_BATCH[key]["kernels"] == kernels


def kernel_packages(host, name, packages=None, **overrides):
    variables = {"ansible_facts": dict(host, kernel="6.8.0-45-generic", packages=packages or {}),
                 "__nvidia_driver_kernels": ["6.8.0-45-generic", "6.8.0-47-generic"], **overrides}
    files = [ROLE / "defaults" / "main.yml", ROLE / "vars" / "main.yml", vars_file(host)]
    return KERNEL_BATCH.add(files, variables, [("packages", "{{ %s }}" % name)])


HEADERS = "__nvidia_driver_headers_missing"
SIGNED = "__nvidia_driver_signed_kernel_packages"
RHEL_DEVEL = {"kernel-devel": [{"version": "6.8.0", "release": "45-generic", "arch": "x86_64"}]}


@pytest.mark.parametrize("key, packages", [
    (kernel_packages(DEBIAN12, HEADERS), ["linux-headers-6.8.0-45-generic", "linux-headers-6.8.0-47-generic"]),
    (kernel_packages(DEBIAN12, HEADERS, {"linux-headers-6.8.0-47-generic": [{"version": "1"}]}),
     ["linux-headers-6.8.0-45-generic"]),
    (kernel_packages(UBUNTU24, HEADERS), ["linux-headers-6.8.0-45-generic", "linux-headers-6.8.0-47-generic"]),
    (kernel_packages(RHEL9, HEADERS), ["kernel-devel-6.8.0-45-generic", "kernel-devel-6.8.0-47-generic"]),
    # Canonical's signed modules: one package per kernel, for every kernel.
    (kernel_packages(UBUNTU24, SIGNED, nvidia_driver_branch="570", __nvidia_driver_modules="open"),
     ["linux-modules-nvidia-570-server-open-6.8.0-45-generic",
      "linux-modules-nvidia-570-server-open-6.8.0-47-generic"]),
    (kernel_packages(UBUNTU24, SIGNED, nvidia_driver_branch=570, __nvidia_driver_modules="proprietary"),
     ["linux-modules-nvidia-570-server-6.8.0-45-generic", "linux-modules-nvidia-570-server-6.8.0-47-generic"]),
], ids=["debian", "debian-one-installed", "ubuntu", "rhel", "ubuntu-signed-open", "ubuntu-signed-proprietary"])
def test_the_packages_each_kernel_needs(key, packages):
    assert KERNEL_BATCH[key]["packages"] == packages


DKMS_CHECK = preflight_task("nvidia_driver", "Refuse to leave a kernel without the driver's module", "kernels.yml")
DKMS_BATCH = Batch()


def dkms_case(status, builds=(), status_since=None, status_rc=0):
    variables = {"__nvidia_driver_kernels": ["6.1.0-901-amd64", "6.1.0-902-amd64"],
                 "nvidia_driver_installed_version": "550.127.08",
                 "__nvidia_driver_dkms": {"stdout": status, "stderr": "" if status_rc == 0 else "dkms: not found",
                                          "rc": status_rc, "msg": "" if status_rc == 0 else "non-zero return code"},
                 "__nvidia_driver_dkms_build": {"results": list(builds)} if builds else {"skipped": True},
                 "__nvidia_driver_dkms_since": ({"stdout": status_since} if status_since is not None
                                                else {"skipped": True})}
    check = DKMS_CHECK["ansible.builtin.assert"]
    return DKMS_BATCH.add([], variables, [("ok", "{{ %s }}" % check["that"]), ("message", check["fail_msg"])],
                          DKMS_CHECK["vars"])


BUILT = ("nvidia-current-open/550.127.08, 6.1.0-901-amd64, x86_64: installed\n"
         "nvidia-current-open/550.127.08, 6.1.0-902-amd64, x86_64: installed\n")
FAILED_BUILD = {"item": "6.1.0-901-amd64", "rc": 10,
                "stderr": "Error! Bad return status for module build on kernel: 6.1.0-901-amd64 (x86_64)\n"}


@pytest.mark.parametrize("key, ok, parts", [
    (dkms_case(BUILT), True, []),
    # Built by the role's own run: the second reading counts.
    (dkms_case(BUILT.splitlines()[1], [{"item": "6.1.0-901-amd64", "rc": 0, "stderr": ""}], BUILT), True, []),
    (dkms_case(BUILT.splitlines()[1], [FAILED_BUILD], BUILT.splitlines()[1]), False,
     ["DKMS has no build of the driver's module 550.127.08 for kernel 6.1.0-901-amd64: the node would boot it without "
      "a GPU driver. Error! Bad return status for module build on kernel: 6.1.0-901-amd64 (x86_64) The driver packages "
      "are installed (release 550.127.08)"]),
    (dkms_case("", status_rc=127), False, ["for kernel 6.1.0-901-amd64, 6.1.0-902-amd64", "dkms: not found",
                                           "non-zero return code"]),
], ids=["all-built", "built-by-the-role", "build-failed", "no-dkms"])
def test_the_dkms_check(key, ok, parts):
    result = DKMS_BATCH[key]
    assert result["ok"] is ok, result
    for part in parts:
        assert part in result["message"], result["message"]


CHANGED, UNCHANGED = {"changed": True}, {"changed": False}


@pytest.mark.parametrize("host, would_change, results, expected", [
    (DEBIAN12, True, {"__nvidia_driver_install": CHANGED}, True),
    (DEBIAN12, True, {"__nvidia_driver_pin": CHANGED, "__nvidia_driver_install": UNCHANGED}, True),
    (DEBIAN12, True, {"__nvidia_driver_install": UNCHANGED}, False),
    # Nothing would change, so apt's part was not included: what an earlier application registered does not count.
    (DEBIAN12, False, {"__nvidia_driver_install": CHANGED, "__nvidia_driver_pin": CHANGED}, False),
    (DEBIAN12, False, {}, False),
    # dnf installs "latest" within the branch whether or not the preflight saw a change coming.
    (RHEL9, False, {"__nvidia_driver_install": CHANGED}, True),
])
def test_whether_this_application_changed_the_driver(host, would_change, results, expected):
    result = render(host, names=("__nvidia_driver_driver_changed",), __nvidia_driver_would_change=would_change,
                    **results)
    assert result["driver_changed"] in ((True, "True") if expected else (False, "False"))


HOLDABLE = ["nvidia-driver-pinning-550", "libnvidia-ml1", "nvidia-open"]


@pytest.mark.parametrize("hold, would_change, holds, expected", [
    # Converged: every installed driver package held, nothing to do (apt's part is not included).
    (True, False, HOLDABLE, []),
    (True, False, ["libnvidia-ml1"], ["nvidia-driver-pinning-550", "nvidia-open"]),
    # After a change every package is held again (the change released them).
    (True, True, HOLDABLE, HOLDABLE),
    # nvidia_driver_hold false: the held ones are released.
    (False, False, ["libnvidia-ml1"], ["libnvidia-ml1"]),
    (False, False, [], []),
])
def test_the_holds_still_to_set(hold, would_change, holds, expected):
    installed = {name: [{"version": "550.54.15-1"}] for name in HOLDABLE}
    result = render({**DEBIAN12, "packages": installed}, names=("__nvidia_driver_hold_todo",),
                    nvidia_driver_branch="550", nvidia_driver_hold=hold, __nvidia_driver_would_change=would_change,
                    __nvidia_driver_wanted=["nvidia-open"], __nvidia_driver_state={"holds": holds})
    assert sorted(result["hold_todo"]) == sorted(expected)
