# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The _kernel_headers_missing filter, internal to the roles (no compatibility promise),
documented in _kernel_headers_missing.yml."""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError

from ansible_collections.accelops.gpu.plugins.module_utils._numbers import shown

# A kernel release as uname -r writes it: 6.1.0-28-amd64, 6.8.0-45-generic, 5.14.0-427.13.1.el9_4.x86_64+debug.
KERNEL = re.compile(r"\A[0-9][A-Za-z0-9._+~-]*\Z")
# RHEL's variant kernels carry their flavour after a +; their headers are kernel-<flavour>-devel.
RPM_FLAVOUR = re.compile(r"\A(?P<release>.+?)(?:\+(?P<flavour>debug|rt|64k|rt-debug|64k-debug))?\Z")


def _rpm_headers(kernel, packages):
    match = RPM_FLAVOUR.match(kernel)
    name = "kernel-%s-devel" % match["flavour"] if match["flavour"] else "kernel-devel"
    installed = {"%s-%s.%s" % (p.get("version"), p.get("release"), p.get("arch"))
                 for p in packages.get(name) or [] if isinstance(p, dict)}
    return "%s-%s" % (name, match["release"]), match["release"] in installed


def kernel_headers_missing(kernels, packages, family):
    """The header packages of the kernels whose headers are not installed, in the kernels' order."""
    if not isinstance(kernels, (list, tuple)) or not all(isinstance(k, str) and KERNEL.match(k) for k in kernels):
        raise AnsibleFilterError("_kernel_headers_missing: kernels must be a list of kernel releases such as "
                                 "6.1.0-28-amd64, got %s" % shown(kernels))
    if not isinstance(packages, dict):
        raise AnsibleFilterError("_kernel_headers_missing: packages must be ansible_facts.packages (package_facts), "
                                 "got %s" % type(packages).__name__)
    if family not in ("Debian", "RedHat"):
        raise AnsibleFilterError("_kernel_headers_missing: family must be Debian or RedHat, got %s" % shown(family))
    missing = []
    for kernel in kernels:
        if family == "Debian":
            name = "linux-headers-%s" % kernel
            installed = name in packages
        else:
            name, installed = _rpm_headers(kernel, packages)
        if not installed:
            missing.append(name)
    return missing


class FilterModule:
    def filters(self):
        return {"_kernel_headers_missing": kernel_headers_missing}
