"""Build a local, signed apt repository shaped like NVIDIA's CUDA network repository.

Usage: python3 tests/sim/mirror/cudamirror/build.py OUTDIR [--fake-nvml PATH] [--base-url URL]

OUTDIR receives what https://developer.download.nvidia.com/compute/cuda/ serves under repos/, for the distributions
in DISTROS, filled with tiny dummy packages that carry the real package names, versions and dependency shape
(see README.md next to this file):

    OUTDIR/repos/<distro>/x86_64/   *.deb, Packages, Packages.gz, Release, InRelease, Release.gpg,
                                    <keyid>.pub, cuda-<distro>.pin
    OUTDIR/fingerprint              full fingerprint of the signing key
    OUTDIR/cuda-archive-keyring.gpg the same key as a binary keyring (what cuda-keyring installs)
    OUTDIR/.gnupg/                  the throw-away signing key, kept so the fingerprint survives rebuilds
    OUTDIR/.stamp                   hashes of the inputs and the list of files of the last complete build

--base-url is where OUTDIR/repos is served; it goes into the sources list that cuda-keyring installs.
The default is http://127.0.0.1:$MIRROR_PORT/cuda/repos (MIRROR_PORT defaults to 18080), which is where
tests/sim/mirror/mirror.sh serves OUTDIR=build/mirror/cuda.

Needs dpkg-deb, apt-ftparchive (apt-utils) and gpg; installs the missing ones with apt-get (as root).
Does nothing when OUTDIR holds a complete build of the same inputs (this script, the stand-ins it packages, the fake
NVML library, the base URL).
"""

import argparse
import dataclasses
import email.utils
import gzip
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[3]
DEFAULT_FAKE_NVML = ROOT / "build" / "fakenvml" / "libnvidia-ml.so.1"
FAKE_NVML_BUILD = ROOT / "tests" / "sim" / "nvml" / "fakenvml" / "build.sh"

# NVIDIA's per-distribution directory names. The Debian repositories package the driver the Debian way
# (nvidia-driver, libnvidia-ml1, nvidia-kernel-dkms, ...); the Ubuntu ones the Ubuntu way (nvidia-driver-550,
# libnvidia-compute-550, nvidia-dkms-550, ...). The CUDA, cuDNN, NCCL and DCGM packages are the same in both.
DISTROS = {"debian12": "debian", "debian13": "debian", "ubuntu2204": "ubuntu", "ubuntu2404": "ubuntu"}
ARCH_DIR = "x86_64"

# The distribution's own archive, as far as the driver needs it: dkms (the stand-in tests/sim/host/fake-dkms.py) and
# kernels with their headers. Each is a flat repository of its own, repos/<distro>-archive/x86_64, with its own Label;
# tests/sim/host/prepare-node.yml adds it to a simulated node and prefers it over the real archive for these names.
# The kernels' ABI numbers (901, 902, 903) exist in no real archive; the last kernel of each set has no headers
# package, as a kernel whose headers a site's mirror lacks.
ARCHIVES = {
    "debian12": {"dkms": "3.0.10-8+deb12u1",
                 "kernels": (("6.1.0-901-amd64", "6.1.901-1"), ("6.1.0-902-amd64", "6.1.902-1"),
                             ("6.1.0-903-amd64", "6.1.903-1"))},
    "debian13": {"dkms": "3.2.1-1",
                 "kernels": (("6.12.901+deb13-amd64", "6.12.901-1"), ("6.12.902+deb13-amd64", "6.12.902-1"),
                             ("6.12.903+deb13-amd64", "6.12.903-1"))},
}
ARCHIVE_LABEL = "accelops.gpu archive stand-in"
FAKE_DKMS = ROOT / "tests" / "sim" / "host" / "fake-dkms.py"
# dcgmi and dcgm-exporter of the DCGM packages: one stand-in script that reads NVML (see its docstring).
DCGM_STAND_IN = HERE / "dcgm_stand_in.py"

# Every package of NVIDIA's repositories names this maintainer.
MAINTAINER = "cudatools <cudatools@nvidia.com>"
HOMEPAGE = "https://developer.nvidia.com/cuda-zone"
SIM_NOTE = "Dummy package of the accelops.gpu test mirror: same name, version and dependencies as NVIDIA's."

# The signing key's user ID. NVIDIA signs with one key per repository family (3bf863cc for debian12/ubuntu2204);
# this mirror has one throw-away key for all its repositories.
KEY_UID = "cudatools (accelops.gpu test mirror, throw-away key) <cudatools@accelops.invalid>"

# Driver branches and the releases of each that the mirror carries, oldest first. Up to 580 a branch has its
# own meta package cuda-drivers-<branch> (and, on Ubuntu, branch-suffixed package names). From 590 on, NVIDIA
# dropped cuda-drivers-<branch> and the Ubuntu suffixes; a branch is selected by installing the pinning package
# nvidia-driver-pinning-<branch> first. Pinning packages exist for the older branches too.
DRIVER_BRANCHES = {
    "550": ("550.54.15", "550.127.08"),
    "570": ("570.86.15", "570.124.06"),
    "590": ("590.48.01",),
}
UNSUFFIXED_FROM = 590

# CUDA toolkit releases: the toolkit version, the driver its runtime meta package asks for at least, and the
# versions of the component packages (each component has its own version, as in NVIDIA's repository).
CUDA_RELEASES = (
    {
        "release": "12.4.1",
        "min_driver": "550.54.15",
        "components": {
            "cuda-nvcc": "12.4.131",
            "cuda-cuobjdump": "12.4.127",
            "cuda-cudart": "12.4.127",
            "cuda-cudart-dev": "12.4.127",
            "cuda-nvrtc": "12.4.127",
            "libcublas": "12.4.5.8",
            "libcublas-dev": "12.4.5.8",
            "cuda-nvml-dev": "12.4.127",
            "cuda-documentation": "12.4.127",
            "config-common": "12.4.127",
        },
    },
    {
        "release": "12.8.1",
        "min_driver": "570.124.06",
        "components": {
            "cuda-nvcc": "12.8.93",
            "cuda-cuobjdump": "12.8.90",
            "cuda-cudart": "12.8.90",
            "cuda-cudart-dev": "12.8.90",
            "cuda-nvrtc": "12.8.93",
            "libcublas": "12.8.4.1",
            "libcublas-dev": "12.8.4.1",
            "cuda-nvml-dev": "12.8.90",
            "cuda-documentation": "12.8.90",
            "config-common": "12.8.90",
        },
    },
)

# cuDNN 9 for CUDA 12 and NCCL builds for each toolkit; NCCL puts the CUDA release into the Debian revision.
CUDNN_VERSIONS = ("9.1.1.17-1", "9.8.0.87-1")
NCCL_VERSIONS = ("2.21.5-1+cuda12.4", "2.26.2-1+cuda12.8")
# DCGM 3 is one package with an epoch; DCGM 4 split into a core package and one per CUDA major release.
DCGM3_VERSION = "1:3.3.9"
DCGM4_VERSION = "1:4.2.3-1"
# nvidia-container-toolkit's releases (NVIDIA's CUDA repositories carry it beside the driver), oldest first.
CONTAINER_TOOLKIT_VERSIONS = ("1.17.8-1", "1.18.0-1")
# dcgm-exporter's package: the DCGM release it was built against, then its own.
DCGM_EXPORTER_VERSION = "4.2.3-4.1.3-1"
DCGM_EXPORTER_COUNTERS = "/etc/dcgm-exporter/default-counters.csv"

# What cuda-keyring installs, with the paths of the real package.
KEYRING_VERSION = "1.1-1"
KEYRING_PATH = "/usr/share/keyrings/cuda-archive-keyring.gpg"
PIN_PATH = "/etc/apt/preferences.d/cuda-repository-pin-600"
# apt preference that NVIDIA's pin file sets: everything from the repository whose Release says
# "Label: NVIDIA CUDA" wins over the distribution's packages of the same name.
REPOSITORY_PIN = "Package: *\nPin: release l=NVIDIA CUDA\nPin-Priority: 600\n"
# Every pinning package (branch or exact version) installs this one file, so only one can be installed.
DRIVER_PIN_PATH = "/etc/apt/preferences.d/nvidia-driver-pin"

LIBDIR = "/usr/lib/x86_64-linux-gnu"
UNITDIR = "/usr/lib/systemd/system"
# Debian packages that ship shared libraries tell dpkg to run ldconfig after installing them.
LDCONFIG_TRIGGER = "activate-noawait ldconfig\n"

# Timestamps inside the .deb files (dpkg-deb reads SOURCE_DATE_EPOCH), so rebuilt packages are byte-identical.
SOURCE_DATE_EPOCH = "1735689600"


def content(value):
    """(bytes, mode) of an entry of Package.files."""
    return (value, 0o644) if isinstance(value, bytes) else value


@dataclasses.dataclass
class Package:
    """One dummy binary package: its control fields and the files it installs."""

    name: str
    version: str
    summary: str
    arch: str = "amd64"
    section: str = "multiverse/devel"
    depends: tuple = ()
    recommends: tuple = ()
    provides: tuple = ()
    conflicts: tuple = ()
    replaces: tuple = ()
    # path -> bytes (installed with mode 0644) or (bytes, mode); symlinks: path -> target
    files: dict = dataclasses.field(default_factory=dict)
    symlinks: dict = dataclasses.field(default_factory=dict)
    conffiles: tuple = ()
    # DEBIAN/<name> -> text for maintainer scripts and triggers
    control_files: dict = dataclasses.field(default_factory=dict)

    @property
    def filename(self):
        # Debian file names leave out the epoch.
        return "%s_%s_%s.deb" % (self.name, self.version.split(":", 1)[-1], self.arch)

    def control(self):
        size = sum(len(content(value)[0]) for value in self.files.values())
        fields = [
            ("Package", self.name),
            ("Version", self.version),
            ("Architecture", self.arch),
            ("Maintainer", MAINTAINER),
            ("Installed-Size", str(max(1, math.ceil(size / 1024)))),
            ("Depends", ", ".join(self.depends)),
            ("Recommends", ", ".join(self.recommends)),
            ("Provides", ", ".join(self.provides)),
            ("Conflicts", ", ".join(self.conflicts)),
            ("Replaces", ", ".join(self.replaces)),
            ("Section", self.section),
            ("Priority", "optional"),
            ("Homepage", HOMEPAGE),
            ("Description", "%s\n %s" % (self.summary, SIM_NOTE)),
        ]
        return "".join("%s: %s\n" % (key, value) for key, value in fields if value)

    def digest(self):
        """Identity of the built file: packages with equal digests are built once and shared by repositories."""
        spec = hashlib.sha256(self.control().encode())
        for path in sorted(self.files):
            data, mode = content(self.files[path])
            spec.update(("%s %o\0" % (path, mode)).encode() + hashlib.sha256(data).digest())
        spec.update(repr((sorted(self.symlinks.items()), self.conffiles, sorted(self.control_files.items()))).encode())
        return spec.hexdigest()


def exact(name, version):
    return "%s (= %s)" % (name, version)


def at_least(name, version):
    return "%s (>= %s)" % (name, version)


def unit(description):
    """A systemd unit that stands in for an NVIDIA daemon: it only has to start and stay up in a container."""
    return (
        "[Unit]\nDescription=%s (accelops.gpu test mirror stand-in)\n\n"
        "[Service]\nType=simple\nExecStart=/bin/sleep infinity\n\n"
        "[Install]\nWantedBy=multi-user.target\n" % description
    ).encode()


def nvml_files(fake_nvml, version):
    """NVIDIA's layout for NVML: the real file carries the driver version, the soname is a symlink to it."""
    real = "%s/libnvidia-ml.so.%s" % (LIBDIR, version)
    return {real: fake_nvml}, {"%s/libnvidia-ml.so.1" % LIBDIR: "libnvidia-ml.so.%s" % version}


def pinning_file(pattern, what):
    """Contents of /etc/apt/preferences.d/nvidia-driver-pin: every driver package of one branch or release wins."""
    return (
        "# %s, installed by the pinning package.\n"
        "Package: cuda-drivers* nvidia-* libnvidia-* libcuda* libnvcuvid* libnvoptix* libxnvctrl* "
        "libegl-nvidia* libgl1-nvidia* libgles-nvidia* libglx-nvidia* firmware-nvidia-* xserver-xorg-video-nvidia*\n"
        "Pin: version %s\n"
        "Pin-Priority: 1000\n" % (what, pattern)
    ).encode()


def pinning_packages():
    """nvidia-driver-pinning-<branch> (version <branch>-1) and nvidia-driver-pinning-<release> (<release>-1)."""
    packages = []
    for branch, releases in DRIVER_BRANCHES.items():
        targets = [(branch, "%s-1" % branch, "%s.*" % branch, "driver branch %s" % branch)]
        targets += [(release, "%s-1" % release, "%s-*" % release, "driver version %s" % release)
                    for release in releases]
        for suffix, version, pattern, what in targets:
            packages.append(Package(
                "nvidia-driver-pinning-%s" % suffix, version, "APT driver pinning file for %s" % what, arch="all",
                section="multiverse/admin",
                provides=("nvidia-driver-pinning",), conflicts=("nvidia-driver-pinning",),
                replaces=("nvidia-driver-pinning",),
                files={DRIVER_PIN_PATH: pinning_file(pattern, "Track NVIDIA %s" % what)},
                conffiles=(DRIVER_PIN_PATH,),
            ))
    return packages


def fabric_manager_packages(release, suffix):
    """Fabric Manager and NSCQ carry the driver's version and must match the installed driver exactly. The Fabric
    Manager packages of the branches ship the same files, so each conflicts with (and replaces) the others: a branch
    change swaps them."""
    version = "%s-1" % release
    name = "nvidia-fabricmanager%s" % suffix
    names = {"nvidia-fabricmanager%s" % ("-" + b if int(b) < UNSUFFIXED_FROM else "") for b in DRIVER_BRANCHES}
    others = tuple(sorted(names - {name}))
    return [
        Package(name, version, "Fabric Manager for NVSwitch based systems", conflicts=others, replaces=others,
                files={"%s/nvidia-fabricmanager.service" % UNITDIR: unit("NVIDIA fabric manager service")}),
        Package("libnvidia-nscq%s" % suffix, version, "NVSwitch Configuration and Query library",
                section="multiverse/libs"),
    ]


def dkms_scripts(module, release):
    """postinst/prerm of a DKMS source package, as dh_dkms writes them: register the source, build for the running
    kernel and the newest one with headers (not for every installed kernel); forget every build on removal."""
    postinst = (
        "#!/bin/sh\nset -e\n"
        'if [ "$1" = configure ]; then\n'
        "  dkms add -m %(module)s -v %(release)s >/dev/null\n"
        "  newest=$(ls /lib/modules 2>/dev/null | sort -V | tail -n 1)\n"
        '  for kernel in "$(uname -r)" $newest; do\n'
        '    if [ -e "/lib/modules/$kernel/build" ]; then\n'
        '      dkms install -m %(module)s -v %(release)s -k "$kernel" || true\n'
        "    fi\n"
        "  done\n"
        "fi\n" % {"module": module, "release": release})
    prerm = ("#!/bin/sh\nset -e\n"
             "dkms remove -m %s -v %s --all >/dev/null 2>&1 || true\n" % (module, release))
    return {"postinst": postinst, "prerm": prerm}


def archive_packages(distro):
    """The stand-in of the distribution's archive: dkms, and kernels with headers but for the last one."""
    spec = ARCHIVES[distro]
    hook = "#!/bin/sh\n# %s\n%s\n"
    packages = [Package(
        # Written in Python, which every simulated node has: no dependency, like Debian's shell-script dkms.
        "dkms", spec["dkms"], "Dynamic Kernel Module System (DKMS)", arch="all", section="kernel",
        files={
            "/usr/sbin/dkms": (b"#!/usr/bin/python3\n" + FAKE_DKMS.read_bytes(), 0o755),
            # linux-headers-<kernel> runs these with the kernel's version: build every added module for it.
            "/etc/kernel/header_postinst.d/dkms": (
                (hook % ("Build the added modules for a kernel whose headers were installed.",
                         'dkms autoinstall -k "$1" || true')).encode(), 0o755),
            "/etc/kernel/postinst.d/dkms": (
                (hook % ("Build the added modules for an installed kernel that has its headers.",
                         '[ -e "/lib/modules/$1/build" ] && dkms autoinstall -k "$1" || true')).encode(), 0o755),
            "/etc/kernel/prerm.d/dkms": (
                (hook % ("Forget the builds for a kernel that is removed.",
                         'dkms status -k "$1" | sed -n "s/^\\([^,]*\\), .*/\\1/p" | '
                         'while read -r module; do dkms remove "$module" -k "$1" || true; done')).encode(), 0o755),
        })]
    for index, (kernel, version) in enumerate(spec["kernels"]):
        hooks = ("if [ -d /etc/kernel/%%(hook)s.d ]; then\n"
                 "  run-parts --report --exit-on-error --arg=%s %%(image)s /etc/kernel/%%(hook)s.d\nfi\n" % kernel)
        packages.append(Package(
            "linux-image-%s" % kernel, version, "Linux %s for 64-bit PCs (signed)" % kernel, section="kernel",
            files={"/boot/vmlinuz-%s" % kernel: ("simulated kernel %s\n" % kernel).encode(),
                   "/lib/modules/%s/modules.order" % kernel: b""},
            control_files={
                name: "#!/bin/sh\nset -e\n" + hooks % {"image": "--arg=/boot/vmlinuz-%s" % kernel, "hook": name}
                for name in ("postinst", "prerm")}))
        if index < len(spec["kernels"]) - 1:
            packages.append(Package(
                "linux-headers-%s" % kernel, version, "Header files for Linux %s" % kernel, section="kernel",
                files={"/usr/src/linux-headers-%s/Makefile" % kernel: b"# simulated kernel headers\n"},
                symlinks={"/lib/modules/%s/build" % kernel: "/usr/src/linux-headers-%s" % kernel},
                control_files={"postinst": "#!/bin/sh\nset -e\n" + hooks % {"image": "", "hook": "header_postinst"}}))
    return packages


def debian_driver_packages(branch, release, first, fake_nvml):
    """One driver release the Debian way, as NVIDIA's debian12/debian13 repositories package it.

    cuda-drivers-<branch> asks only for a minimum version (the branch's first release) of the unversioned
    Debian packages: without a pinning package, apt satisfies it with the newest driver of any branch.
    """
    version = "%s-1" % release
    kernel_virtual = "nvidia-kernel-%s" % release
    nvml_real, nvml_links = nvml_files(fake_nvml, release)

    def driver(name, summary, **fields):
        fields.setdefault("section", "non-free/libs")
        return Package(name, version, summary, **fields)

    def same(name):
        return exact(name, version)

    packages = [
        driver("libnvidia-ml1", "NVIDIA Management Library (NVML) runtime library",
               files=nvml_real, symlinks=nvml_links, control_files={"triggers": LDCONFIG_TRIGGER}),
        driver("libcuda1", "NVIDIA CUDA Driver Library", depends=(same("libnvidia-ptxjitcompiler1"),)),
        driver("libnvidia-ptxjitcompiler1", "NVIDIA PTX JIT Compiler library"),
        driver("libnvidia-cfg1", "NVIDIA binary OpenGL/GLX configuration library"),
        driver("libnvidia-glcore", "NVIDIA OpenGL core library"),
        driver("libglx-nvidia0", "NVIDIA binary GLX library", depends=(same("libnvidia-glcore"),)),
        driver("nvidia-smi", "NVIDIA System Management Interface", depends=(same("libnvidia-ml1"),)),
        driver("nvidia-persistenced", "daemon to maintain persistent software state in the NVIDIA driver",
               depends=(same("libnvidia-cfg1"),),
               files={"%s/nvidia-persistenced.service" % UNITDIR: unit("NVIDIA Persistence Daemon")}),
        driver("nvidia-modprobe", "utility to load NVIDIA kernel modules and create device nodes"),
        driver("nvidia-kernel-support", "NVIDIA binary kernel module support files",
               depends=(same("nvidia-modprobe"),)),
        driver("firmware-nvidia-gsp", "NVIDIA GSP firmware", section="non-free-firmware/kernel"),
        driver("nvidia-kernel-dkms", "NVIDIA binary kernel module DKMS source (proprietary)",
               depends=(same("nvidia-kernel-support"), "dkms"), provides=(kernel_virtual,),
               conflicts=("nvidia-kernel-open-dkms",), control_files=dkms_scripts("nvidia-current", release)),
        driver("nvidia-kernel-open-dkms", "NVIDIA open GPU kernel module DKMS source",
               depends=(same("nvidia-kernel-support"), same("firmware-nvidia-gsp"), "dkms"),
               provides=(kernel_virtual,), conflicts=("nvidia-kernel-dkms",),
               control_files=dkms_scripts("nvidia-current-open", release)),
        driver("nvidia-driver-libs", "NVIDIA metapackage (OpenGL/GLX/EGL/GLES libraries)",
               depends=(same("libglx-nvidia0"),), recommends=(same("libnvidia-cfg1"),)),
        driver("nvidia-driver", "NVIDIA metapackage",
               depends=(same("nvidia-driver-libs"), "%s | %s" % (same("nvidia-kernel-dkms"), kernel_virtual))),
        driver("nvidia-driver-cuda", "NVIDIA driver CUDA integration components",
               depends=(same("libcuda1"), same("nvidia-smi"), same("nvidia-persistenced"))),
        driver("nvidia-settings", "tool for configuring the NVIDIA graphics driver"),
        driver("nvidia-xconfig", "deprecated X configuration tool for non-free NVIDIA drivers"),
        # The open-kernel-module flavour of the whole driver (NVIDIA's meta package, not Debian's).
        Package("nvidia-open", version, "NVIDIA open kernel modules driver meta package",
                depends=tuple(at_least(name, release) for name in ("nvidia-driver", "nvidia-driver-cuda",
                                                                   "nvidia-kernel-open-dkms"))),
    ]
    proprietary = ("nvidia-driver", "nvidia-driver-cuda", "nvidia-kernel-dkms", "nvidia-settings", "nvidia-xconfig")
    if int(branch) < UNSUFFIXED_FROM:
        packages.append(Package("cuda-drivers-%s" % branch, version, "CUDA Driver meta-package, branch-specific",
                                depends=tuple(at_least(name, first) for name in proprietary)))
        packages.append(Package("cuda-drivers", version, "CUDA Driver meta-package, branch-agnostic",
                                depends=(same("cuda-drivers-%s" % branch),)))
        packages += fabric_manager_packages(release, "-%s" % branch)
    else:
        packages.append(Package("cuda-drivers", version, "CUDA Driver meta-package, branch-agnostic",
                                depends=tuple(at_least(name, release) for name in proprietary)))
        packages += fabric_manager_packages(release, "")
    return packages


def ubuntu_driver_packages(branch, release, first, fake_nvml):
    """One driver release the Ubuntu way: up to 580 every name carries the branch (nvidia-driver-550), from 590
    the names are unsuffixed (nvidia-driver, libnvidia-compute). Driver packages are revision -0ubuntu1,
    NVIDIA's own meta packages and Fabric Manager -1."""
    del first  # the branch is in the names, so the metas need no floor below their own release
    version = "%s-0ubuntu1" % release
    meta_version = "%s-1" % release
    suffix = "-%s" % branch if int(branch) < UNSUFFIXED_FROM else ""
    open_dkms = "nvidia-dkms%s-open" % suffix if suffix else "nvidia-dkms-open"
    open_driver = "nvidia-driver%s-open" % suffix if suffix else "nvidia-driver-open"
    nvml_real, nvml_links = nvml_files(fake_nvml, release)

    def named(base):
        return "%s%s" % (base, suffix)

    def same(base):
        return exact(named(base), version)

    def driver(name, summary, **fields):
        fields.setdefault("section", "restricted/libs")
        return Package(name, version, summary, **fields)

    common = (same("libnvidia-compute"), same("libnvidia-cfg1"), same("nvidia-utils"),
              same("nvidia-compute-utils"), same("nvidia-kernel-common"))
    packages = [
        driver(named("libnvidia-compute"), "NVIDIA libcompute package (libcuda, libnvidia-ml)",
               files=nvml_real, symlinks=nvml_links, control_files={"triggers": LDCONFIG_TRIGGER}),
        driver(named("libnvidia-cfg1"), "NVIDIA binary OpenGL/GLX configuration library"),
        driver(named("nvidia-utils"), "NVIDIA driver support binaries (nvidia-smi)",
               depends=(same("libnvidia-compute"),)),
        driver(named("nvidia-compute-utils"), "NVIDIA compute utilities (nvidia-persistenced)",
               depends=(same("libnvidia-compute"),),
               files={"%s/nvidia-persistenced.service" % UNITDIR: unit("NVIDIA Persistence Daemon")}),
        driver(named("nvidia-kernel-common"), "Shared files used with the kernel module"),
        driver(named("nvidia-dkms"), "NVIDIA DKMS package (proprietary kernel modules)",
               depends=(same("nvidia-kernel-common"),), conflicts=(open_dkms,)),
        driver(open_dkms, "NVIDIA DKMS package (open kernel modules)",
               depends=(same("nvidia-kernel-common"),), conflicts=(named("nvidia-dkms"),)),
        driver(named("nvidia-driver"), "NVIDIA driver metapackage (proprietary kernel modules)",
               depends=(*common, same("nvidia-dkms")), conflicts=(open_driver,)),
        driver(open_driver, "NVIDIA driver metapackage (open kernel modules)",
               depends=(*common, exact(open_dkms, version)), conflicts=(named("nvidia-driver"),)),
    ]
    if suffix:
        packages += [
            Package("nvidia-open%s" % suffix, meta_version, "NVIDIA open kernel modules driver meta package",
                    depends=(at_least(open_driver, release),)),
            Package("nvidia-open", meta_version, "NVIDIA open kernel modules driver meta package",
                    depends=(exact("nvidia-open%s" % suffix, meta_version),)),
            Package("cuda-drivers%s" % suffix, meta_version, "CUDA Driver meta-package, branch-specific",
                    depends=(at_least(named("nvidia-driver"), release),)),
            Package("cuda-drivers", meta_version, "CUDA Driver meta-package, branch-agnostic",
                    depends=(exact("cuda-drivers%s" % suffix, meta_version),)),
        ]
    else:
        packages += [
            Package("nvidia-open", meta_version, "NVIDIA open kernel modules driver meta package",
                    depends=(at_least(open_driver, release),)),
            Package("cuda-drivers", meta_version, "CUDA Driver meta-package, branch-agnostic",
                    depends=(at_least("nvidia-driver", release),)),
        ]
    return packages + fabric_manager_packages(release, suffix)


def nvcc_script(release, nvcc_version):
    major_minor = release.rsplit(".", 1)[0]
    return (
        "#!/bin/sh\n"
        "# nvcc of the accelops.gpu test mirror: answers --version like CUDA %s's compiler, compiles nothing.\n"
        'case "$1" in\n'
        "  --version|-V)\n"
        "    echo 'nvcc: NVIDIA (R) Cuda compiler driver'\n"
        "    echo 'Cuda compilation tools, release %s, V%s'\n"
        "    ;;\n"
        "  *) echo 'nvcc: only --version is simulated' >&2; exit 1 ;;\n"
        "esac\n" % (release, major_minor, nvcc_version)
    ).encode()


def alternatives_scripts(prefix, major, priority):
    """postinst/prerm that point /usr/local/cuda and /usr/local/cuda-<major> at the toolkit in prefix, through
    update-alternatives as NVIDIA's toolkit packages do; the newest installed toolkit wins."""
    links = ("cuda", "cuda-%s" % major)
    install = "".join("  update-alternatives --install /usr/local/%s %s %s %s\n" % (link, link, prefix, priority)
                      for link in links)
    remove = "".join("  update-alternatives --remove %s %s\n" % (link, prefix) for link in links)
    return {
        "postinst": '#!/bin/sh\nset -e\nif [ "$1" = configure ]; then\n%sfi\n' % install,
        "prerm": '#!/bin/sh\nset -e\nif [ "$1" = remove ] || [ "$1" = deconfigure ]; then\n%sfi\n' % remove,
    }


def cuda_packages():
    """Toolkit packages of each CUDA release plus the moving metas cuda-toolkit-12, cuda-toolkit, cuda-12, cuda.

    X-Y is the release in package names (12-4), X.Y in paths (/usr/local/cuda-12.4). As in NVIDIA's repository,
    the toolkit does not depend on a driver; cuda-runtime-X-Y (and so cuda-X-Y and cuda) does.
    """
    packages = []
    for cuda in CUDA_RELEASES:
        release = cuda["release"]
        major, minor = release.split(".")[:2]
        dash, dot = "%s-%s" % (major, minor), "%s.%s" % (major, minor)
        prefix = "/usr/local/cuda-%s" % dot
        meta_version = "%s-1" % release
        comp = {name: "%s-1" % value for name, value in cuda["components"].items()}
        # Meta packages ask for at least the upstream version of what they pull in.
        upstream = cuda["components"]

        def component(base, summary, dash=dash, comp=comp, **fields):
            return Package("%s-%s" % (base, dash), comp[base], summary, **fields)

        config_common = "cuda-toolkit-%s-config-common" % dash
        version_json = json.dumps({"cuda": {"name": "CUDA SDK", "version": release},
                                   "cuda_nvcc": {"name": "CUDA NVCC", "version": upstream["cuda-nvcc"]}},
                                  indent=3).encode() + b"\n"
        packages += [
            # /usr/local/cuda and /usr/local/cuda-12 follow the installed toolkit with the highest version.
            Package(config_common, comp["config-common"], "Common config package for CUDA Toolkit %s." % dot,
                    arch="all", files={"%s/version.json" % prefix: version_json},
                    control_files=alternatives_scripts(prefix, major, "%s%s" % (major, minor))),
            # Every toolkit release also publishes a version of the config packages shared by all releases.
            Package("cuda-toolkit-%s-config-common" % major, comp["config-common"],
                    "Common config package for CUDA Toolkit %s." % major, arch="all"),
            Package("cuda-toolkit-config-common", comp["config-common"], "Common config package for CUDA Toolkit.",
                    arch="all"),
            component("cuda-cudart", "CUDA Runtime native Libraries",
                      depends=(config_common, "cuda-toolkit-%s-config-common" % major, "cuda-toolkit-config-common")),
            component("cuda-cudart-dev", "CUDA Runtime native dev links, headers",
                      depends=("cuda-cudart-%s" % dash,)),
            component("cuda-nvrtc", "NVRTC native runtime libraries"),
            component("libcublas", "CUBLAS native runtime libraries"),
            component("libcublas-dev", "CUBLAS native dev links, headers", depends=("libcublas-%s" % dash,)),
            component("cuda-nvcc", "CUDA nvcc", files={"%s/bin/nvcc" % prefix: (
                nvcc_script(release, cuda["components"]["cuda-nvcc"]), 0o755)}),
            component("cuda-cuobjdump", "CUDA cuobjdump"),
            component("cuda-nvml-dev", "NVML native dev links, headers"),
            component("cuda-documentation", "CUDA documentation"),
            Package("cuda-compiler-%s" % dash, meta_version, "CUDA compiler",
                    depends=(at_least("cuda-nvcc-%s" % dash, upstream["cuda-nvcc"]),
                             at_least("cuda-cuobjdump-%s" % dash, upstream["cuda-cuobjdump"]))),
            Package("cuda-libraries-%s" % dash, meta_version, "CUDA Libraries %s meta-package" % dot,
                    depends=tuple(at_least("%s-%s" % (base, dash), upstream[base])
                                  for base in ("cuda-cudart", "cuda-nvrtc", "libcublas"))),
            Package("cuda-libraries-dev-%s" % dash, meta_version, "CUDA Libraries %s development meta-package" % dot,
                    depends=tuple(at_least("%s-%s" % (base, dash), upstream[base])
                                  for base in ("cuda-cudart-dev", "libcublas-dev"))),
            Package("cuda-toolkit-%s" % dash, meta_version, "CUDA Toolkit %s meta-package" % dot,
                    depends=(*(at_least("%s-%s" % (base, dash), release)
                               for base in ("cuda-compiler", "cuda-libraries", "cuda-libraries-dev")),
                             at_least("cuda-nvml-dev-%s" % dash, upstream["cuda-nvml-dev"]),
                             at_least("cuda-documentation-%s" % dash, upstream["cuda-documentation"]))),
            Package("cuda-runtime-%s" % dash, meta_version, "CUDA Runtime %s meta-package" % dot,
                    depends=(at_least("cuda-libraries-%s" % dash, release),
                             at_least("cuda-drivers", cuda["min_driver"]))),
            Package("cuda-%s" % dash, meta_version, "CUDA %s meta-package" % dot,
                    depends=(at_least("cuda-runtime-%s" % dash, release), at_least("cuda-toolkit-%s" % dash, release))),
            # The moving metas: every toolkit release publishes a version of them that points at itself.
            Package("cuda-toolkit-%s" % major, meta_version, "CUDA Toolkit %s meta-package" % major,
                    depends=(at_least("cuda-toolkit-%s" % dash, release),)),
            Package("cuda-toolkit", meta_version, "CUDA Toolkit meta-package",
                    depends=(at_least("cuda-toolkit-%s" % dash, release),)),
            Package("cuda-%s" % major, meta_version, "CUDA %s meta-package" % major,
                    depends=(at_least("cuda-%s" % dash, release),)),
            Package("cuda", meta_version, "CUDA meta-package", depends=(at_least("cuda-%s" % dash, release),)),
        ]
    return packages


def library_packages():
    """cuDNN 9 and NCCL (each release pinned to itself by exact dependencies), DCGM 3 and 4, dcgm-exporter."""
    packages = []
    for version in CUDNN_VERSIONS:
        packages += [
            Package("libcudnn9-cuda-12", version, "cuDNN runtime libraries for CUDA 12", section="multiverse/libs"),
            Package("libcudnn9-headers-cuda-12", version, "cuDNN header files for CUDA 12"),
            Package("libcudnn9-dev-cuda-12", version, "cuDNN development libraries for CUDA 12",
                    depends=(exact("libcudnn9-cuda-12", version), exact("libcudnn9-headers-cuda-12", version))),
            Package("cudnn9-cuda-12", version, "NVIDIA cuDNN for CUDA 12",
                    depends=(exact("libcudnn9-cuda-12", version), exact("libcudnn9-dev-cuda-12", version))),
        ]
    for version in NCCL_VERSIONS:
        packages += [
            Package("libnccl2", version, "NVIDIA Collective Communication Library (NCCL) Runtime",
                    section="multiverse/libs"),
            Package("libnccl-dev", version, "NVIDIA Collective Communication Library (NCCL) Development Files",
                    depends=(exact("libnccl2", version),)),
        ]
    dcgm_unit = {"%s/nvidia-dcgm.service" % UNITDIR: unit("NVIDIA DCGM service")}
    stand_in = b"#!/usr/bin/python3\n" + DCGM_STAND_IN.read_bytes()
    exporter_unit = (
        "[Unit]\nDescription=NVIDIA DCGM exporter (accelops.gpu test mirror stand-in)\n"
        "Wants=nvidia-dcgm.service\nAfter=nvidia-dcgm.service\n\n"
        "[Service]\nType=simple\nExecStart=/usr/bin/dcgm-exporter -f %s\nRestart=on-failure\n\n"
        "[Install]\nWantedBy=multi-user.target\n" % DCGM_EXPORTER_COUNTERS).encode()
    counters = (
        b"# Format\n# DCGM FIELD, Prometheus metric type, help message\n\n"
        b"DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\n"
        b"DCGM_FI_DEV_POWER_USAGE, gauge, Power draw (in W).\n"
        b"DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %).\n"
        b"DCGM_FI_DEV_FB_USED, gauge, Framebuffer memory used (in MiB).\n"
        b"DCGM_FI_DEV_XID_ERRORS, gauge, Value of the last XID error encountered.\n")
    packages += [
        Package("datacenter-gpu-manager", DCGM3_VERSION, "NVIDIA Data Center GPU Manager (DCGM) 3",
                files=dict(dcgm_unit), conflicts=("datacenter-gpu-manager-4-core",)),
        Package("datacenter-gpu-manager-4-core", DCGM4_VERSION, "NVIDIA Data Center GPU Manager (DCGM) 4, core",
                depends=("python3",), files={**dcgm_unit, "/usr/bin/dcgmi": (stand_in, 0o755)},
                conflicts=("datacenter-gpu-manager",), replaces=("datacenter-gpu-manager",)),
        Package("datacenter-gpu-manager-4-cuda12", DCGM4_VERSION,
                "NVIDIA Data Center GPU Manager (DCGM) 4, CUDA 12 support",
                depends=(exact("datacenter-gpu-manager-4-core", DCGM4_VERSION),)),
        Package("datacenter-gpu-manager-exporter", DCGM_EXPORTER_VERSION,
                "NVIDIA DCGM exporter for Prometheus", depends=(at_least("datacenter-gpu-manager-4-core", "1:4"),),
                files={"/usr/bin/dcgm-exporter": (stand_in, 0o755), DCGM_EXPORTER_COUNTERS: counters,
                       "%s/nvidia-dcgm-exporter.service" % UNITDIR: exporter_unit},
                conffiles=(DCGM_EXPORTER_COUNTERS,)),
    ]
    return packages


def stand_in_program(name, line):
    """A stand-in for one of the container toolkit's programs: it says its version and does nothing else."""
    return (("#!/bin/sh\n# %s of the accelops.gpu test mirror: a stand-in that only says its version.\n"
             "case \"$1\" in --version | -v | version) echo \"%s\" ;; esac\nexit 0\n") % (name, line)).encode()


def container_toolkit_packages():
    """nvidia-container-toolkit and what it depends on, in each release, with NVIDIA's dependency shape: the
    programs nvidia-ctk, nvidia-container-runtime and nvidia-cdi-hook (in -base), nvidia-container-runtime-hook, and
    nvidia-container-cli with its library; each program a stand-in script."""
    packages = []
    for version in CONTAINER_TOOLKIT_VERSIONS:
        release = version.split("-", maxsplit=1)[0]
        base = {"/usr/bin/nvidia-ctk": "NVIDIA Container Toolkit CLI version %s" % release,
                "/usr/bin/nvidia-container-runtime": "NVIDIA Container Runtime version %s" % release,
                "/usr/bin/nvidia-cdi-hook": "NVIDIA CDI Hook version %s" % release}
        packages += [
            Package("libnvidia-container1", version, "NVIDIA container runtime library", section="utils",
                    files={"%s/libnvidia-container.so.%s" % (LIBDIR, release): b"accelops.gpu test mirror stand-in\n"},
                    symlinks={"%s/libnvidia-container.so.1" % LIBDIR: "libnvidia-container.so.%s" % release}),
            Package("libnvidia-container-tools", version, "NVIDIA container runtime library (command-line tools)",
                    section="utils",
                    depends=(at_least("libnvidia-container1", version), "libnvidia-container1 (<< 2.0.0)"),
                    files={"/usr/bin/nvidia-container-cli": (stand_in_program(
                        "nvidia-container-cli", "cli-version: %s" % release), 0o755)}),
            Package("nvidia-container-toolkit-base", version, "NVIDIA Container Toolkit Base", section="utils",
                    files={path: (stand_in_program(os.path.basename(path), line), 0o755)
                           for path, line in base.items()}),
            Package("nvidia-container-toolkit", version, "NVIDIA Container toolkit", section="utils",
                    depends=(exact("nvidia-container-toolkit-base", version),
                             at_least("libnvidia-container-tools", version), "libnvidia-container-tools (<< 2.0.0)"),
                    files={"/usr/bin/nvidia-container-runtime-hook": (stand_in_program(
                        "nvidia-container-runtime-hook", "NVIDIA Container Runtime Hook version %s" % release),
                        0o755)}),
        ]
    return packages


def keyring_package(distro, keyring, base_url):
    """cuda-keyring: the signing key, the source list entry that uses it, and NVIDIA's repository pin."""
    sources = "/etc/apt/sources.list.d/cuda-%s-%s.list" % (distro, ARCH_DIR)
    entry = "deb [signed-by=%s] %s/%s/%s/ /\n" % (KEYRING_PATH, base_url.rstrip("/"), distro, ARCH_DIR)
    return Package("cuda-keyring", KEYRING_VERSION, "NVIDIA CUDA Keyring", arch="all", section="multiverse/admin",
                   files={KEYRING_PATH: keyring, sources: entry.encode(), PIN_PATH: REPOSITORY_PIN.encode()},
                   conffiles=(sources, PIN_PATH))


def catalogue(distro, fake_nvml, keyring, base_url):
    """Every package of one distribution's repository."""
    flavour = DISTROS[distro]
    drivers = debian_driver_packages if flavour == "debian" else ubuntu_driver_packages
    packages = []
    for branch, releases in DRIVER_BRANCHES.items():
        for release in releases:
            packages += drivers(branch, release, releases[0], fake_nvml)
    packages += pinning_packages() + cuda_packages() + library_packages() + container_toolkit_packages()
    packages.append(keyring_package(distro, keyring, base_url))
    names = [package.filename for package in packages]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise SystemExit("cudamirror: two packages with the same file name: %s" % ", ".join(duplicates))
    return packages


# --- building ------------------------------------------------------------------------------------------------


def run(args, check=True, **kwargs):
    return subprocess.run(args, check=check, **kwargs)


def ensure_tools():
    """Install the Debian tools this needs when one is missing (quietly, only then)."""
    wanted = {"dpkg-deb": "dpkg", "apt-ftparchive": "apt-utils", "gpg": "gnupg", "gpg-agent": "gnupg",
              "gpgconf": "gnupg"}
    missing = sorted({package for tool, package in wanted.items() if not shutil.which(tool)})
    if not missing:
        return
    if os.geteuid() != 0:
        raise SystemExit("cudamirror: missing %s; install as root: apt-get install %s"
                         % (", ".join(missing), " ".join(missing)))
    print("cudamirror: installing %s" % " ".join(missing), file=sys.stderr)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for command in (["apt-get", "update", "-qq"],
                    ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing]):
        result = run(command, check=False, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if result.returncode:
            sys.stderr.write(result.stdout)
            raise SystemExit("cudamirror: %s failed" % " ".join(command))


def build_deb(package, workdir, dest):
    """Lay the package out under workdir and let dpkg-deb build dest from it."""
    tree = Path(tempfile.mkdtemp(prefix="%s." % package.name, dir=workdir))
    debian = tree / "DEBIAN"
    debian.mkdir()
    (debian / "control").write_text(package.control(), encoding="utf-8")
    if package.conffiles:
        (debian / "conffiles").write_text("".join(path + "\n" for path in package.conffiles), encoding="utf-8")
    for name, text in package.control_files.items():
        path = debian / name
        path.write_text(text, encoding="utf-8")
        path.chmod(0o755 if text.startswith("#!") else 0o644)
    for path, value in package.files.items():
        data, mode = content(value)
        target = tree / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        target.chmod(mode)
    for path, link in package.symlinks.items():
        target = tree / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(link)
    for directory in [tree, *(p for p in tree.rglob("*") if p.is_dir() and not p.is_symlink())]:
        directory.chmod(0o755)
    env = dict(os.environ, SOURCE_DATE_EPOCH=SOURCE_DATE_EPOCH)
    run(["dpkg-deb", "--root-owner-group", "-Zgzip", "-z6", "--build", str(tree), str(dest)],
        env=env, stdout=subprocess.DEVNULL)
    shutil.rmtree(tree)


def build_pool(repositories, workdir):
    """Build every distinct package once; returns digest -> path of the built file."""
    pool = workdir / "pool"
    pool.mkdir()
    unique = {}
    for packages in repositories.values():
        for package in packages:
            unique.setdefault(package.digest(), package)
    built = {digest: pool / digest / package.filename for digest, package in unique.items()}
    for path in built.values():
        path.parent.mkdir()
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as executor:
        jobs = [executor.submit(build_deb, package, workdir, built[digest]) for digest, package in unique.items()]
        for job in jobs:
            job.result()
    return built


def packages_index(repo):
    """Packages for a flat repository: apt-ftparchive run inside it, so Filename is ./<file>.deb like NVIDIA's."""
    output = run(["apt-ftparchive", "packages", "."], cwd=repo, capture_output=True, text=True).stdout
    stanzas = [stanza.strip("\n") for stanza in output.split("\n\n") if stanza.strip()]
    return "".join(stanza + "\n\n" for stanza in sorted(stanzas))


def release_file(repo, files, origin="NVIDIA", label="NVIDIA CUDA"):
    """Release in the form NVIDIA's repository tools write it: no Suite or Components (a flat repository),
    Origin/Label that the cuda-repository-pin-600 pin matches, MD5Sum/SHA1/SHA256 and no by-hash downloads."""
    lines = [
        "Origin: %s" % origin,
        "Label: %s" % label,
        "Architecture: %s" % ARCH_DIR,
        "Date: %s" % email.utils.formatdate(usegmt=True),
    ]
    for title, algorithm in (("MD5Sum", "md5"), ("SHA1", "sha1"), ("SHA256", "sha256")):
        lines.append("%s:" % title)
        for name in files:
            data = (repo / name).read_bytes()
            lines.append(" %s %16d %s" % (hashlib.new(algorithm, data).hexdigest(), len(data), name))
    lines.append("Acquire-By-Hash: no")
    return "\n".join(lines) + "\n"


class SigningKey:
    """The throw-away OpenPGP key in OUTDIR/.gnupg: created once, reused by every later build."""

    def __init__(self, home):
        self.home = home
        self.env = dict(os.environ, GNUPGHOME=str(home))
        self.fingerprint = None

    def gpg(self, *args, check=True):
        return run(["gpg", "--batch", "--quiet", "--no-tty", *args], check=check, env=self.env, capture_output=True)

    def ensure(self):
        self.home.mkdir(parents=True, exist_ok=True)
        self.home.chmod(0o700)
        self.fingerprint = self.find()
        if not self.fingerprint:
            self.gpg("--pinentry-mode", "loopback", "--passphrase", "", "--quick-generate-key", KEY_UID,
                     "ed25519", "sign", "never")
            self.fingerprint = self.find()
        return self.fingerprint

    def find(self):
        listing = self.gpg("--with-colons", "--list-secret-keys", check=False).stdout.decode()
        seen_secret_key = False
        for line in listing.splitlines():
            fields = line.split(":")
            if fields[0] == "sec":
                seen_secret_key = True
            elif fields[0] == "fpr" and seen_secret_key:
                return fields[9]
        return None

    def export(self, armor=False):
        return self.gpg(*(["--armor"] if armor else []), "--export", self.fingerprint).stdout

    def sign(self, release):
        """InRelease (clear-signed) and Release.gpg (detached, ASCII-armored) next to Release, like NVIDIA's."""
        common = ("--yes", "--local-user", self.fingerprint, "--digest-algo", "SHA512")
        self.gpg(*common, "--armor", "--detach-sign", "--output", str(release.with_name("Release.gpg")), str(release))
        self.gpg(*common, "--clearsign", "--output", str(release.with_name("InRelease")), str(release))

    def stop_agent(self):
        run(["gpgconf", "--kill", "gpg-agent"], env=self.env, check=False,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def assemble(distro, packages, built, staging, key):
    """One repository directory: the packages, their indexes, the signed Release, the public key, the pin."""
    repo = staging / distro / ARCH_DIR
    repo.mkdir(parents=True)
    for package in packages:
        source = built[package.digest()]
        try:
            os.link(source, repo / package.filename)
        except OSError:
            shutil.copyfile(source, repo / package.filename)
    index = packages_index(repo).encode()
    (repo / "Packages").write_bytes(index)
    (repo / "Packages.gz").write_bytes(gzip.compress(index, compresslevel=9, mtime=0))
    archive = distro.endswith("-archive")
    labels = ("accelops.gpu", ARCHIVE_LABEL) if archive else ("NVIDIA", "NVIDIA CUDA")
    (repo / "Release").write_text(release_file(repo, ("Packages", "Packages.gz"), *labels), encoding="utf-8")
    key.sign(repo / "Release")
    if archive:
        return
    # NVIDIA publishes the key as <last 8 hex digits of the fingerprint>.pub (3bf863cc.pub) and the pin file
    # as cuda-<distro>.pin; both are what cuda-keyring installs too.
    (repo / ("%s.pub" % key.fingerprint[-8:].lower())).write_bytes(key.export(armor=True))
    (repo / ("cuda-%s.pin" % distro)).write_text(REPOSITORY_PIN, encoding="utf-8")


def sha256_file(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def inputs_digest(fake_nvml, base_url):
    digest = hashlib.sha256()
    for part in (sha256_file(__file__), sha256_file(FAKE_DKMS), sha256_file(DCGM_STAND_IN), sha256_file(fake_nvml),
                 base_url):
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()


def is_complete(outdir, inputs):
    """True when OUTDIR holds every file of a build of exactly these inputs."""
    try:
        stamp = json.loads((outdir / ".stamp").read_text(encoding="utf-8"))
        fingerprint = (outdir / "fingerprint").read_text(encoding="utf-8").strip()
    except (OSError, ValueError):
        return False
    if stamp.get("inputs") != inputs or stamp.get("fingerprint") != fingerprint:
        return False
    if not any((outdir / ".gnupg" / "private-keys-v1.d").glob("*.key")):
        return False
    return all((outdir / name).is_file() for name in stamp.get("files", ()))


def build(outdir, fake_nvml, base_url):
    inputs = inputs_digest(fake_nvml, base_url)
    if is_complete(outdir, inputs):
        return False
    ensure_tools()
    key = SigningKey(outdir / ".gnupg")
    workdir = Path(tempfile.mkdtemp(prefix=".build.", dir=outdir))
    try:
        key.ensure()
        keyring = key.export()
        nvml = Path(fake_nvml).read_bytes()
        repositories = {distro: catalogue(distro, nvml, keyring, base_url) for distro in DISTROS}
        repositories.update({"%s-archive" % distro: archive_packages(distro) for distro in ARCHIVES})
        built = build_pool(repositories, workdir)
        staging = workdir / "repos"
        for distro, packages in repositories.items():
            assemble(distro, packages, built, staging, key)
        # Swap the new tree in with two renames, so a server never sees a half-written repository.
        live = outdir / "repos"
        if live.exists():
            live.rename(workdir / "old-repos")
        staging.rename(live)
        (outdir / "cuda-archive-keyring.gpg").write_bytes(keyring)
        (outdir / "fingerprint").write_text(key.fingerprint + "\n", encoding="utf-8")
        files = sorted(str(path.relative_to(outdir)) for path in live.rglob("*") if path.is_file())
        files += ["cuda-archive-keyring.gpg", "fingerprint"]
        stamp = {"inputs": inputs, "fingerprint": key.fingerprint, "files": files}
        (outdir / ".stamp").write_text(json.dumps(stamp, indent=1) + "\n", encoding="utf-8")
    finally:
        key.stop_agent()
        shutil.rmtree(workdir, ignore_errors=True)
    return True


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--fake-nvml", type=Path, default=None,
                        help="libnvidia-ml.so.1 to ship in the driver's NVML package (default: %s, built if needed)"
                        % DEFAULT_FAKE_NVML.relative_to(ROOT))
    parser.add_argument("--base-url", default=None,
                        help="URL at which OUTDIR/repos is served (default: http://127.0.0.1:$MIRROR_PORT/cuda/repos)")
    args = parser.parse_args(argv)
    if args.fake_nvml is None:
        run([str(FAKE_NVML_BUILD), str(DEFAULT_FAKE_NVML.parent)])
        args.fake_nvml = DEFAULT_FAKE_NVML
    if not args.fake_nvml.is_file():
        parser.error("no fake NVML library at %s" % args.fake_nvml)
    base_url = args.base_url or "http://127.0.0.1:%s/cuda/repos" % os.environ.get("MIRROR_PORT", "18080")
    outdir = args.outdir.resolve()
    outdir.mkdir(parents=True, exist_ok=True)
    if build(outdir, args.fake_nvml.resolve(), base_url):
        fingerprint = (outdir / "fingerprint").read_text(encoding="utf-8").strip()
        print("cudamirror: built %s (%s), signed by %s" % (outdir / "repos", ", ".join(DISTROS), fingerprint))


if __name__ == "__main__":
    main()
