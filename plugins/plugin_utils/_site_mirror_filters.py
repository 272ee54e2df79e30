# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The _site_mirror_needs filter, internal to the site_mirror role (no compatibility promise), documented in
plugins/filter/_site_mirror_needs.py: what an inventory's GPU nodes install from NVIDIA's CUDA repository and from
PyPI, worked out from each node's variables as the roles read them.

The package names are the roles' own (their vars/Debian.yml files, passed in as ``names``); the rules that join a
name to a variable are the roles' rules, tested against the roles' files in tests/unit/plugins/filter."""

from __future__ import annotations

import re
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

_BRANCH = re.compile(r"\A[0-9]{3}\Z")
_RELEASE = re.compile(r"\A[0-9]{3}\.[0-9]+(?:\.[0-9]+)?\Z")
_CUDA = re.compile(r"\A[0-9]+\.[0-9]+\Z")
_PACKAGE_VERSION = re.compile(r"\A[0-9][0-9A-Za-z.+~:-]*\Z")
_PIN = re.compile(r"\A[0-9][0-9A-Za-z.+!-]*\Z")
# From this branch on NVIDIA's packages carry no branch suffix (roles/nvidia_driver/vars/main.yml).
_UNSUFFIXED_FROM = 590


class SiteMirrorError(AnsibleFilterError):
    """A node's variable from which no package can be named; the message names the host and the variable."""


def _truthy(value):
    if isinstance(value, str):
        return value.strip().lower() in ("true", "yes", "on", "1")
    return bool(value)


def _cuda_key(version):
    return tuple(int(part) for part in version.split("."))


class _Host:
    def __init__(self, name, variables, defaults):
        self.name, self.variables, self.defaults = name[:100], variables, defaults

    def get(self, variable):
        if variable in self.variables and self.variables[variable] is not None:
            return self.variables[variable]
        if variable in self.defaults:
            return self.defaults[variable]
        raise SiteMirrorError("_site_mirror_needs: %s: %s is not set and no role gives it a default"
                              % (self.name, variable))

    def text(self, variable, pattern, allowed, empty=False):
        value = str(self.get(variable)).strip()
        if (empty and not value) or pattern.match(value):
            return value
        raise SiteMirrorError("_site_mirror_needs: %s: %s is %.80r; allowed: %s"
                              % (self.name, variable, value, allowed))


def _driver(host, names):
    branch = host.text("nvidia_driver_branch", _BRANCH, "a driver branch of three digits, such as 570")
    release = host.text("nvidia_driver_version", _RELEASE, "a driver release of the branch, such as 570.124.06",
                        empty=True)
    pinning = "nvidia-driver-pinning-%s" % (release or branch)
    modules = str(host.get("nvidia_driver_kernel_modules")).strip()
    flavours = {"open": ["open"], "proprietary": ["proprietary"]}.get(modules, ["open", "proprietary"])
    packages = [pinning, names["library"]]
    for flavour in flavours:
        packages += names["packages"][flavour]
    if _truthy(host.get("nvidia_driver_persistenced")):
        packages.append(names["persistenced"])
    if str(host.get("nvidia_driver_fabricmanager")).strip().lower() != "false":
        packages.append("nvidia-fabricmanager" + ("" if int(branch) >= _UNSUFFIXED_FROM else "-" + branch))
    return packages, [pinning]


def _toolkit(host, names):
    versions = host.get("cuda_toolkit_versions")
    if isinstance(versions, (str, bytes)) or not isinstance(versions, (list, tuple)) or not versions:
        raise SiteMirrorError("_site_mirror_needs: %s: cuda_toolkit_versions is %.80r; allowed: a list of CUDA "
                              "releases such as ['12.8']"
                              % (host.name, versions))
    wanted = []
    for given in versions:
        version = str(given).strip()
        if not _CUDA.match(version):
            raise SiteMirrorError("_site_mirror_needs: %s: cuda_toolkit_versions has %.80r; allowed: CUDA releases "
                                  "such as 12.8"
                                  % (host.name, version))
        wanted.append(version)
    default = host.text("cuda_toolkit_default", _CUDA, "one of cuda_toolkit_versions, or empty", empty=True)
    default = default or max(wanted, key=_cuda_key)
    major = default.split(".")[0]
    packages = ["cuda-toolkit-%s" % version.replace(".", "-") for version in wanted]
    if _truthy(host.get("cuda_toolkit_cudnn")):
        packages += [name.replace("{major}", major) for name in names["cudnn"]]
    if _truthy(host.get("cuda_toolkit_nccl")):
        # NCCL's builds carry the CUDA release in the package version (2.26.2-1+cuda12.8): the newest such build.
        packages += ["%s=*+cuda%s" % (name, default) for name in names["nccl"]]
    return packages


def _container_toolkit(host, names):
    version = host.text("container_toolkit_version", _PACKAGE_VERSION, "a package release such as 1.18.0-1")
    return ["%s=%s" % (name, version) for name in names["container_toolkit"]]


def _wheels(host):
    wheels = ["nvidia-ml-py==%s" % host.text("nvml_python_version", _PIN, "a release such as 13.615.71")]
    if _truthy(host.get("accelops_gpu_install_monitoring")):
        for name, variable in (("prometheus_client", "gpu_monitoring_prometheus_client_version"),
                               ("bcrypt", "gpu_monitoring_bcrypt_version"),
                               ("PyYAML", "gpu_monitoring_pyyaml_version")):
            wheels.append("%s==%s" % (name, host.text(variable, _PIN, "a release such as 1.2.3")))
    return wheels


def _strings(value):
    return isinstance(value, (list, tuple)) and all(isinstance(item, str) and item for item in value)


def _check_names(names):
    if (not isinstance(names, Mapping)
            or not all(isinstance(names.get(key), str) for key in ("library", "persistenced"))
            or not all(_strings(names.get(key)) for key in ("cudnn", "nccl", "container_toolkit"))
            or not isinstance(names.get("packages"), Mapping)
            or not all(_strings(names["packages"].get(key)) for key in ("open", "proprietary"))):
        raise SiteMirrorError("_site_mirror_needs: names must give library, persistenced, packages (open and "
                              "proprietary), cudnn, nccl and container_toolkit, got %.200r" % (names,))


def site_mirror_needs(hosts, defaults, names):
    """``hosts``: {host: its variables}; ``defaults``: the roles' defaults and site.yml's switches; ``names``: the
    package names of the roles' vars files. Returns the CUDA repository's packages (``apt``, each ``name``,
    ``name=version`` or ``name=GLOB``), the pinning packages among them (``preferences_from``) and the wheels."""
    if not isinstance(hosts, Mapping) or not hosts:
        raise SiteMirrorError("_site_mirror_needs: the input must map the GPU nodes to their variables, got %s"
                              % type(hosts).__name__)
    for name, variables in hosts.items():
        if not isinstance(name, str) or not isinstance(variables, Mapping):
            raise SiteMirrorError("_site_mirror_needs: the variables of %.100r are not a mapping" % (name,))
    if not isinstance(defaults, Mapping):
        raise SiteMirrorError("_site_mirror_needs: defaults must be a mapping, got %s" % type(defaults).__name__)
    _check_names(names)
    apt, preferences, wheels = [], [], []

    def add(target, items):
        target.extend(item for item in items if item not in target)

    for name in sorted(hosts):
        host = _Host(name, hosts[name], defaults)
        if _truthy(host.get("accelops_gpu_install_driver")):
            packages, pinning = _driver(host, names)
            add(apt, packages)
            add(preferences, pinning)
        if _truthy(host.get("accelops_gpu_install_toolkit")):
            add(apt, _toolkit(host, names))
        if _truthy(host.get("accelops_gpu_install_container_toolkit")):
            add(apt, _container_toolkit(host, names))
        add(wheels, _wheels(host))
    return {"apt": sorted(apt), "preferences_from": sorted(preferences), "wheels": sorted(wheels, key=str.lower),
            "hosts": sorted(hosts)}


class FilterModule:
    def filters(self):
        return {"_site_mirror_needs": site_mirror_needs}
