# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The _dkms_unbuilt filter, internal to the roles (no compatibility promise),
documented in _dkms_unbuilt.yml."""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError

from ansible_collections.accelops.gpu.plugins.module_utils._numbers import shown

# dkms 3 writes "nvidia/570.124.06, 6.8.0-45-generic, x86_64: installed"; dkms 2 wrote
# "nvidia, 570.124.06, 6.8.0-45-generic, x86_64: installed". Either may be followed by a warning in parentheses.
LINE = re.compile(r"\A(?P<module>[^/,\s]+)(?:/|,\s*)(?P<version>[^,\s]+),\s*(?P<kernel>[^,\s]+),\s*[^:\s]+:\s*"
                  r"(?P<state>[A-Za-z-]+)")


def _lines(status):
    if isinstance(status, dict):
        status = status.get("stdout_lines", status.get("stdout", ""))
    if isinstance(status, str):
        return status.splitlines()
    if isinstance(status, (list, tuple)) and all(isinstance(line, str) for line in status):
        return list(status)
    raise AnsibleFilterError("_dkms_unbuilt: the input must be what `dkms status` printed (its registered result, "
                             "its lines or its text), got %s" % type(status).__name__)


def dkms_unbuilt(status, kernels, version, module=r"\Anvidia(-current)?(-open)?\Z"):
    """The kernels (in the order given) for which `dkms status` shows no installed build of the module's version."""
    if not isinstance(kernels, (list, tuple)) or not all(isinstance(kernel, str) and kernel for kernel in kernels):
        raise AnsibleFilterError("_dkms_unbuilt: kernels must be a list of kernel releases such as 6.1.0-28-amd64, "
                                 "got %s" % shown(kernels))
    if not isinstance(version, str) or not version:
        raise AnsibleFilterError("_dkms_unbuilt: version must be the driver's release such as 570.124.06, got %s"
                                 % shown(version))
    try:
        pattern = re.compile(module)
    except (re.error, TypeError) as error:
        raise AnsibleFilterError("_dkms_unbuilt: module must be a regular expression for the DKMS module's name, "
                                 "got %s (%s)" % (shown(module), error)) from error
    installed = set()
    for line in _lines(status):
        match = LINE.match(line.strip())
        # RHEL's weak-updates link a build to compatible kernels: "installed-weak from <kernel>".
        if (match and match["state"] in ("installed", "installed-weak") and match["version"] == version
                and pattern.search(match["module"])):
            installed.add(match["kernel"])
    return [kernel for kernel in kernels if kernel not in installed]


class FilterModule:
    def filters(self):
        return {"_dkms_unbuilt": dkms_unbuilt}
