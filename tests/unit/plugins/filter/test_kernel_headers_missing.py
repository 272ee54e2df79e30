"""kernel_headers_missing for Debian's and RHEL's package facts."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.accelops.gpu.plugins.plugin_utils._kernel_headers_missing_filters import (
    FilterModule,
    kernel_headers_missing,
)

DEBIAN = {"linux-headers-6.1.0-28-amd64": [{"version": "6.1.119-1", "arch": "amd64"}], "bash": [{"version": "5.2"}]}
RHEL = {"kernel-devel": [{"version": "5.14.0", "release": "427.13.1.el9_4", "arch": "x86_64"}],
        "kernel-debug-devel": [{"version": "5.14.0", "release": "503.11.1.el9_5", "arch": "x86_64"}]}


@pytest.mark.parametrize(("kernels", "packages", "family", "missing"), [
    (["6.1.0-28-amd64", "6.1.0-29-amd64"], DEBIAN, "Debian", ["linux-headers-6.1.0-29-amd64"]),
    (["6.1.0-28-amd64"], DEBIAN, "Debian", []),
    ([], {}, "Debian", []),
    (["6.8.0-45-generic"], {}, "Debian", ["linux-headers-6.8.0-45-generic"]),
    # kernel-devel of one kernel is not the headers of another
    (["5.14.0-427.13.1.el9_4.x86_64", "5.14.0-503.11.1.el9_5.x86_64"], RHEL, "RedHat",
     ["kernel-devel-5.14.0-503.11.1.el9_5.x86_64"]),
    (["5.14.0-503.11.1.el9_5.x86_64+debug", "5.14.0-427.13.1.el9_4.x86_64+rt"], RHEL, "RedHat",
     ["kernel-rt-devel-5.14.0-427.13.1.el9_4.x86_64"]),
    (["5.14.0-427.13.1.el9_4.x86_64+64k"], RHEL, "RedHat", ["kernel-64k-devel-5.14.0-427.13.1.el9_4.x86_64"]),
])
def test_missing_headers(kernels, packages, family, missing):
    assert kernel_headers_missing(kernels, packages, family) == missing


@pytest.mark.parametrize(("args", "message"), [
    (("6.1.0-28-amd64", {}, "Debian"), "kernels must be a list of kernel releases"),
    ((["6.1.0-28-amd64; reboot"], {}, "Debian"), "kernels must be a list of kernel releases"),
    (([""], {}, "Debian"), "kernels must be a list of kernel releases"),
    ((["*"], {}, "Debian"), "kernels must be a list of kernel releases"),
    ((["6.1.0-28-amd64"], [], "Debian"), "packages must be ansible_facts.packages"),
    ((["6.1.0-28-amd64"], {}, "Suse"), "family must be Debian or RedHat"),
])
def test_bad_input_names_the_argument(args, message):
    with pytest.raises(AnsibleFilterError, match=message):
        kernel_headers_missing(*args)


def test_filter_is_registered():
    assert FilterModule().filters()["_kernel_headers_missing"] is kernel_headers_missing
