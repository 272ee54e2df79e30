"""dkms_unbuilt over what dkms 2 and dkms 3 print."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.accelops.gpu.plugins.plugin_utils._dkms_unbuilt_filters import FilterModule, dkms_unbuilt

KERNELS = ["6.1.0-901-amd64", "6.1.0-902-amd64"]

DKMS3 = """\
nvidia-current-open/550.54.15, 6.1.0-901-amd64, x86_64: installed
nvidia-current-open/550.54.15, 6.1.0-902-amd64, x86_64: installed (WARNING! Diff between built and installed module!)
"""


def test_every_kernel_installed_leaves_none():
    assert dkms_unbuilt(DKMS3, KERNELS, "550.54.15") == []


@pytest.mark.parametrize("status", [
    "nvidia-current-open/550.54.15, 6.1.0-901-amd64, x86_64: installed\n",
    "nvidia-current-open/550.54.15, 6.1.0-901-amd64, x86_64: installed\n"
    "nvidia-current-open/550.54.15, 6.1.0-902-amd64, x86_64: built\n",
    "nvidia-current-open/550.54.15, 6.1.0-901-amd64, x86_64: installed\nnvidia-current-open/550.54.15: added\n",
    # an old release's build for the kernel does not count
    "nvidia-current-open/550.54.15, 6.1.0-901-amd64, x86_64: installed\n"
    "nvidia-current-open/550.40.07, 6.1.0-902-amd64, x86_64: installed\n",
    # nor another module's
    "nvidia-current-open/550.54.15, 6.1.0-901-amd64, x86_64: installed\n"
    "nvidia-fs/2.20.5, 6.1.0-902-amd64, x86_64: installed\n",
])
def test_a_kernel_without_an_installed_build_is_named(status):
    assert dkms_unbuilt(status, KERNELS, "550.54.15") == ["6.1.0-902-amd64"]


def test_dkms2_format_and_registered_result():
    result = {"stdout_lines": ["nvidia, 570.124.06, 6.8.0-45-generic, x86_64: installed"], "rc": 0}
    assert dkms_unbuilt(result, ["6.8.0-45-generic", "6.8.0-47-generic"], "570.124.06") == ["6.8.0-47-generic"]


@pytest.mark.parametrize("name", ["nvidia", "nvidia-open", "nvidia-current", "nvidia-current-open"])
def test_the_names_nvidias_packages_register(name):
    assert dkms_unbuilt(["%s/590.48.01, 6.12.0-1, x86_64: installed" % name], ["6.12.0-1"], "590.48.01") == []


def test_weak_updates_count_as_installed():
    status = ("nvidia/570.124.06, 5.14.0-427.el9.x86_64, x86_64: installed\n"
              "nvidia/570.124.06, 5.14.0-503.el9.x86_64, x86_64: installed-weak from 5.14.0-427.el9.x86_64\n")
    assert dkms_unbuilt(status, ["5.14.0-427.el9.x86_64", "5.14.0-503.el9.x86_64"], "570.124.06") == []


def test_empty_status_names_every_kernel_in_order():
    assert dkms_unbuilt("", list(reversed(KERNELS)), "550.54.15") == list(reversed(KERNELS))


def test_another_module_by_pattern():
    assert dkms_unbuilt("nvidia-fs/2.20.5, 6.1.0-901-amd64, x86_64: installed", KERNELS[:1], "2.20.5",
                        module=r"\Anvidia-fs\Z") == []


@pytest.mark.parametrize(("args", "message"), [
    ((42, KERNELS, "550.54.15"), "the input must be what `dkms status` printed"),
    (("", "6.1.0-901-amd64", "550.54.15"), "kernels must be a list of kernel releases"),
    (("", [""], "550.54.15"), "kernels must be a list of kernel releases"),
    (("", KERNELS, ""), "version must be the driver's release"),
    (("", KERNELS, "550.54.15", "(["), "module must be a regular expression"),
])
def test_bad_input_names_the_argument(args, message):
    with pytest.raises(AnsibleFilterError, match=message.replace("`", ".").replace("(", r"\(")):
        dkms_unbuilt(*args)


def test_filter_is_registered():
    assert FilterModule().filters()["_dkms_unbuilt"] is dkms_unbuilt
