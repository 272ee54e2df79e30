# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: which driver a CUDA needs, and which CUDA PyTorch and TensorFlow use."""

from __future__ import annotations

import re

from ansible_collections.accelops.gpu.plugins.plugin_utils._errors import CompatError

# The compatibility knowledge, as published. docs/compatibility.md says how to update it.
COMPAT = {
    # Minimum Linux x86_64 driver of each CUDA Toolkit release: NVIDIA's CUDA Toolkit release notes, Table 3
    # "CUDA Toolkit and Corresponding Driver Versions" (column "Toolkit Driver Version", Linux x86_64),
    # https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/ (the 13.2 Update 2 edition lists every row below).
    # One list per major.minor: the GA release first, then Update 1, Update 2, ... (toolkit x.y.N is Update N).
    "toolkit_driver": {
        # CUDA 11.0's GA release is 11.0.2 (11.0.1 was a release candidate), its Update 1 11.0.3: here the list
        # index is the update, as for every other row. 11.1 prints its drivers without the last part.
        "11.0": ["450.51.05", "450.51.06"],  # Table 3: CUDA 11.0.2 GA, 11.0.3 Update 1
        "11.1": ["455.23", "455.32"],  # Table 3: CUDA 11.1 GA, Update 1 (as printed)
        "11.2": ["460.27.03", "460.32.03", "460.32.03"],  # Table 3: CUDA 11.2 GA, Update 1, Update 2
        "11.3": ["465.19.01", "465.19.01"],  # Table 3: CUDA 11.3 GA, Update 1
        # The R470 long-term branch: CUDA 11.4 is the newest CUDA of Kepler-era fleets that stay on 470.
        "11.4": ["470.42.01", "470.57.02", "470.57.02", "470.82.01", "470.82.01"],  # Table 3: 11.4 GA, Updates 1-4
        "11.5": ["495.29.05", "495.29.05", "495.29.05"],  # Table 3: CUDA 11.5 GA, Update 1, Update 2
        "11.6": ["510.39.01", "510.47.03", "510.47.03"],  # Table 3: CUDA 11.6 GA, Update 1, Update 2
        "11.7": ["515.43.04", "515.48.07"],  # Table 3: CUDA 11.7 GA, Update 1
        "11.8": ["520.61.05"],  # Table 3: CUDA 11.8 GA
        "12.0": ["525.60.13", "525.85.12"],  # Table 3: CUDA 12.0 GA, Update 1
        "12.1": ["530.30.02", "530.30.02"],  # Table 3: CUDA 12.1 GA, Update 1
        "12.2": ["535.54.03", "535.86.09", "535.104.05"],  # Table 3: CUDA 12.2 GA, Update 1, Update 2
        "12.3": ["545.23.06", "545.23.08"],  # Table 3: CUDA 12.3 GA, Update 1
        "12.4": ["550.54.14", "550.54.15"],  # Table 3: CUDA 12.4 GA, Update 1
        "12.5": ["555.42.02", "555.42.06"],  # Table 3: CUDA 12.5 GA, Update 1
        "12.6": ["560.28.03", "560.35.03", "560.35.03", "560.35.05"],  # Table 3: CUDA 12.6 GA, Updates 1-3
        # There is no CUDA 12.7.
        "12.8": ["570.26", "570.124.06"],  # Table 3: CUDA 12.8 GA (570.26, as printed), Update 1
        "12.9": ["575.51.03", "575.57.08"],  # Table 3: CUDA 12.9 GA, Update 1
        "13.0": ["580.65.06", "580.82.07", "580.95.05"],  # Table 3: CUDA 13.0 GA, Update 1, Update 2
        "13.1": ["590.44.01", "590.48.01"],  # Table 3: CUDA 13.1 GA, Update 1
        "13.2": ["595.45.04", "595.58.03", "595.71.05"],  # Table 3: CUDA 13.2 GA, Update 1, Update 2
        # The 13.3 edition of the release notes, Table 3 ("CUDA 13.3 GA >=610.43.02", "CUDA 13.3 Update 1
        # >=610.43.02"): https://docs.nvidia.com/cuda/archive/13.3.0/cuda-toolkit-release-notes/index.html; NVIDIA's
        # redistributable manifests give the same driver for both (cuda_compat 610.43.02 in
        # https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.3.0.json and redistrib_13.3.1.json).
        "13.3": ["610.43.02", "610.43.02"],  # Table 3: CUDA 13.3 GA, Update 1
        # Not here: CUDA 13.4 (its GA release is 13.4.1; NVIDIA no longer bundles the Linux driver with it) and 13.5,
        # whose Table 3 rows were not at hand. Until they are, the filters refuse them and name min_drivers.
    },
    # Minimum Linux x86_64 driver for CUDA minor version compatibility, per CUDA major: the same release notes,
    # Table 2 "CUDA Toolkit and Minimum Required Driver Version for CUDA Minor Version Compatibility".
    "minor_compat_driver": {
        "11": "450.80.02",  # Table 2 of the 11.x/12.x notes: 11.x >= 450.80.02 (the 13.x notes print ">= 450")
        "12": "525.60.13",  # Table 2 of the 12.x notes: 12.x >= 525.60.13 (the 13.x notes print ">= 525")
        "13": "580",  # Table 2 of the 13.x notes: 13.x ">= 580", a driver branch; NVIDIA gives no finer number
    },
    # Wheel channels (https://download.pytorch.org/whl/<channel>) of each PyTorch release on Linux x86_64: pytorch.org
    # "Get started / Previous PyTorch Versions", cross-checked with the "Release Compatibility Matrix" (stable and
    # experimental CUDA) in pytorch/pytorch RELEASE.md. Patch releases (2.5.0, 2.5.1) share their minor's channels.
    "torch_channels": {
        "2.1": ["cu118", "cu121", "cpu"],  # RELEASE.md: stable CUDA 11.8, experimental 12.1
        "2.2": ["cu118", "cu121", "cpu"],  # RELEASE.md: stable CUDA 11.8, experimental 12.1
        "2.3": ["cu118", "cu121", "cpu"],  # RELEASE.md: stable CUDA 11.8, experimental 12.1
        "2.4": ["cu118", "cu121", "cu124", "cpu"],  # RELEASE.md: stable 11.8, 12.1, experimental 12.4
        "2.5": ["cu118", "cu121", "cu124", "cpu"],  # RELEASE.md: stable 11.8, 12.1, 12.4
        "2.6": ["cu118", "cu124", "cu126", "cpu"],  # RELEASE.md: stable 11.8, 12.4, experimental 12.6
        "2.7": ["cu118", "cu126", "cu128", "cpu"],  # RELEASE.md: stable 11.8, 12.6, experimental 12.8
        "2.8": ["cu126", "cu128", "cu129", "cpu"],  # RELEASE.md: stable 12.6, 12.8, experimental 12.9
        "2.9": ["cu126", "cu128", "cu130", "cpu"],  # RELEASE.md: stable 12.6, 12.8, experimental 13.0
        "2.10": ["cu126", "cu128", "cu130", "cpu"],  # RELEASE.md: stable 12.6, 12.8, experimental 13.0
        "2.11": ["cu126", "cu128", "cu130", "cpu"],  # RELEASE.md: stable 12.6, 12.8, 13.0
        "2.12": ["cu126", "cu130", "cu132", "cpu"],  # RELEASE.md: stable 12.6, 13.0, experimental 13.2
        "2.13": ["cu126", "cu130", "cu132", "cpu"],  # RELEASE.md: stable 12.6, 13.0, experimental 13.2
    },
    # CUDA and cuDNN each TensorFlow release was built and tested with on Linux: tensorflow.org "Build from source",
    # section "Tested build configurations", Linux GPU table (https://www.tensorflow.org/install/source#gpu).
    "tensorflow_build": {
        "2.14": {"cuda": "11.8", "cudnn": "8.7"},  # tensorflow-2.14.0
        "2.15": {"cuda": "12.2", "cudnn": "8.9"},  # tensorflow-2.15.0
        "2.16": {"cuda": "12.3", "cudnn": "8.9"},  # tensorflow-2.16.1 (the first 2.16 release on PyPI)
        "2.17": {"cuda": "12.3", "cudnn": "8.9"},  # tensorflow-2.17.0
        "2.18": {"cuda": "12.5", "cudnn": "9.3"},  # tensorflow-2.18.0
        # 2.19 and 2.20: not confirmed from a copy of the table; both lie between the 2.18 and 2.21 rows, which agree
        # on CUDA 12.5 / cuDNN 9.3. Check https://www.tensorflow.org/install/source#gpu when updating.
        "2.19": {"cuda": "12.5", "cudnn": "9.3"},  # tensorflow-2.19.0 (unconfirmed, see above)
        "2.20": {"cuda": "12.5", "cudnn": "9.3"},  # tensorflow-2.20.0 (unconfirmed, see above)
        "2.21": {"cuda": "12.5", "cudnn": "9.3"},  # tensorflow-2.21.0
    },
    # GPU architectures as NVML names them (nvmlDeviceGetArchitecture; module_utils/_pci.py gives the same names from
    # the PCI device id before any driver), oldest first, with the compute capabilities of their chips.
    # - driver_branches: the first and the last driver branch that supports the architecture (None: open).
    #   The last: NVIDIA's Unix driver deprecation schedule, "The release 580 series will be the last to support GPUs
    #   based on the Maxwell, Pascal, and Volta architectures"; R470 is the last branch for Kepler (NVIDIA's 2021
    #   notice). The first: the branch of the first CUDA release that builds for the architecture (Table 3 above;
    #   sm_cuda below), as NVIDIA ships support for a new architecture with that CUDA's driver.
    # - open_kernel_modules: NVIDIA Driver Installation Guide, "Kernel Modules": "Open GPU kernel modules are supported
    #   only on Turing and newer generations"; NVIDIA's "Transitions Fully Towards Open-Source GPU Kernel Modules":
    #   "For cutting-edge platforms such as NVIDIA Grace Hopper or NVIDIA Blackwell, you must use the open-source GPU
    #   kernel modules" (Grace Hopper's GPU is a Hopper: the table cannot tell it from an H100 and says "supported").
    "architectures": {
        "kepler": {"compute_capabilities": ["3.0", "3.2", "3.5", "3.7"], "driver_branches": [None, "470"],
                   "open_kernel_modules": "unsupported"},
        "maxwell": {"compute_capabilities": ["5.0", "5.2", "5.3"], "driver_branches": [None, "580"],
                    "open_kernel_modules": "unsupported"},
        "pascal": {"compute_capabilities": ["6.0", "6.1", "6.2"], "driver_branches": [None, "580"],
                   "open_kernel_modules": "unsupported"},
        "volta": {"compute_capabilities": ["7.0", "7.2"], "driver_branches": [None, "580"],
                  "open_kernel_modules": "unsupported"},
        "turing": {"compute_capabilities": ["7.5"], "driver_branches": [None, None],
                   "open_kernel_modules": "supported"},
        "ampere": {"compute_capabilities": ["8.0", "8.6", "8.7"], "driver_branches": ["450", None],
                   "open_kernel_modules": "supported"},
        "ada": {"compute_capabilities": ["8.9"], "driver_branches": ["520", None], "open_kernel_modules": "supported"},
        "hopper": {"compute_capabilities": ["9.0"], "driver_branches": ["520", None],
                   "open_kernel_modules": "supported"},
        "blackwell": {"compute_capabilities": ["10.0", "10.3", "11.0", "12.0", "12.1"],
                      "driver_branches": ["570", None], "open_kernel_modules": "required"},
    },
    # The CUDA releases whose nvcc builds for a compute capability (sm_XY): first and last major.minor; None where the
    # range is open (older than this table, or still supported). CUDA release notes, "Deprecated or Dropped Features"
    # and "New Features": sm_30/sm_32 removed in 11.0, sm_35/sm_37 in 12.0, sm_50 to sm_72 (Maxwell, Pascal, Volta)
    # in 13.0 ("CUDA Toolkit 12.x series will continue to support building applications for these architectures,
    # offline compilation and library support will be removed in the next major CUDA Toolkit version release");
    # sm_80 new in 11.0, sm_86 in 11.1, sm_87 in 11.4, sm_89 and sm_90 in 11.8, sm_100 and sm_120 in 12.8, sm_103 and
    # sm_121 in 12.9, sm_110 in 13.0 ("Thor SM renaming from sm_101 to sm_110 starting from CUDA 13.0").
    "sm_cuda": {
        "3.0": [None, "10.2"], "3.2": [None, "10.2"], "3.5": [None, "11.8"], "3.7": [None, "11.8"],
        "5.0": [None, "12.9"], "5.2": [None, "12.9"], "5.3": [None, "12.9"],
        "6.0": [None, "12.9"], "6.1": [None, "12.9"], "6.2": [None, "12.9"],
        "7.0": [None, "12.9"], "7.2": [None, "12.9"],
        "7.5": [None, None],
        "8.0": ["11.0", None], "8.6": ["11.1", None], "8.7": ["11.4", None], "8.9": ["11.8", None],
        "9.0": ["11.8", None],
        "10.0": ["12.8", None], "10.3": ["12.9", None], "11.0": ["13.0", None], "12.0": ["12.8", None],
        "12.1": ["12.9", None],
    },
    # The GPU code in PyTorch's Linux x86_64 wheels, per channel: rows of [first torch release, targets], the newest
    # row not newer than a torch release applies. sm_XY is a cubin, which runs on compute capability X.Y and the
    # newer X.* of its major; compute_XY is PTX, which the driver compiles for X.Y and every newer GPU.
    # TORCH_CUDA_ARCH_LIST of each channel in pytorch/pytorch .ci/manywheel/build_cuda.sh, at each release's tag.
    "torch_targets": {
        # pytorch/builder manywheel/build_cuda.sh on release/2.1 to release/2.5: "3.7;5.0;6.0;7.0;7.5;8.0;8.6;9.0" for
        # CUDA 11.8, "5.0;6.0;7.0;7.5;8.0;8.6;9.0" for CUDA 12.1 and 12.4.
        "cu118": [["2.1", ["sm_37", "sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]]],
        "cu121": [["2.1", ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]]],
        "cu124": [["2.4", ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]]],
        # pytorch/pytorch .ci/manywheel/build_cuda.sh from 2.6 on: "Only 12.6 includes Legacy Maxwell/Pascal".
        "cu126": [["2.6", ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]]],
        # 2.7: Turing and newer with Blackwell ("7.5;8.0;8.6;9.0;10.0;12.0+PTX"); 2.8 took sm_70 back ("we would like
        # to keep sm_70 architecture", pytorch/pytorch#157517); 2.11 dropped Volta from CUDA 12.8 again
        # (pytorch/pytorch#172352).
        "cu128": [["2.7", ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120"]],
                  ["2.8", ["sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]],
                  ["2.11", ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]]],
        "cu129": [["2.8", ["sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120"]]],
        # "7.5;8.0;8.6;9.0;10.0;12.0+PTX" on x86_64 (11.0, Thor, on aarch64 only).
        "cu130": [["2.9", ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120"]]],
        # Not confirmed from a copy of build_cuda.sh: taken to be CUDA 13.0's list. Check when updating.
        "cu132": [["2.12", ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120"]]],
    },
    # The GPU code of TensorFlow's Linux pip builds (tensorflow[and-cuda]), per release: the compute capabilities of
    # the official builds in tensorflow/.bazelrc ("This is the same as the official TensorFlow builds":
    # HERMETIC_CUDA_COMPUTE_CAPABILITIES="sm_60,sm_70,sm_80,sm_89,compute_90" from the hermetic-CUDA releases on).
    # 2.14 and 2.15 (sm_50, no sm_89), 2.20 and 2.21 are not confirmed from a copy of their .bazelrc.
    "tensorflow_targets": {
        "2.14": ["sm_50", "sm_60", "sm_70", "sm_80", "compute_90"],
        "2.15": ["sm_50", "sm_60", "sm_70", "sm_80", "compute_90"],
        "2.16": ["sm_60", "sm_70", "sm_80", "sm_89", "compute_90"],
        "2.17": ["sm_60", "sm_70", "sm_80", "sm_89", "compute_90"],
        "2.18": ["sm_60", "sm_70", "sm_80", "sm_89", "compute_90"],
        "2.19": ["sm_60", "sm_70", "sm_80", "sm_89", "compute_90"],
        "2.20": ["sm_60", "sm_70", "sm_80", "sm_89", "compute_90"],
        "2.21": ["sm_60", "sm_70", "sm_80", "sm_89", "compute_90"],
    },
    # The first framework release a Horovod release does not build against (pip source build on Linux), with why.
    # A row holds for its Horovod major.minor and every older release (an older one may stop at an older framework
    # already: the table does not say); newer Horovod releases have no known limit.
    "horovod_limits": {
        # Horovod 0.28.1 (June 2023) is its newest release on PyPI.
        "0.28": {
            # It compiles its PyTorch extension as C++14; torch 2.1 made C++17 a requirement (horovod/horovod#3996,
            # fixed on Horovod's main branch by #3998, in no release). Measured on Debian 12 with g++ 12: torch
            # 2.13.0 stops with "C++17 or later compatible compiler is required to use PyTorch".
            "torch": ["2.1", "torch 2.1 and newer need a C++17 build, which no Horovod release makes"],
            # TensorFlow 2.16 moved to Keras 3, which Horovod's TensorFlow and Keras integrations do not support
            # (horovod/horovod#4290, open). Measured on Debian 12 with g++ 12: tensorflow-cpu 2.21.0 stops at a
            # header TensorFlow's wheel does not ship (highwayhash/arch_specific.h).
            "tensorflow": ["2.16", "tensorflow 2.16 and newer bring Keras 3, which no Horovod release supports"],
        },
    },
}

COMPAT_MODES = ("toolkit", "minor")

# ASCII digits only: Python's int() takes other scripts' digits too. At most 6 parts of at most 9 digits: no version
# is longer, and a 5,000-digit "version" must fail as one, not in int() (which refuses 4,300 digits and more).
_NUMERIC = re.compile(r"\A[0-9]{1,9}(\.[0-9]{1,9}){0,5}\Z")
# How much of a value an error message shows.
_SHOWN = 40
# The most entries min_drivers may hold.
_MAX_MIN_DRIVERS = 64


def _text(value):
    # YAML may hand over 12.4 as a float or 580 as an int; bool is an int in Python, but never a version. Anything
    # else (a list, a dict) is no version either: its type name fails every version pattern, and str() of it is
    # never taken (nested deep enough, str() raises RecursionError; an int of 5,000 digits, ValueError).
    if value is None or isinstance(value, bool):
        return ""
    if isinstance(value, str):
        return str(value).strip()
    if isinstance(value, int):
        return str(value) if value.bit_length() <= 64 else "<int>"
    if isinstance(value, float):
        return str(value)
    return "<%s>" % type(value).__name__


def _shown(value):
    """repr() of what was given, at most _SHOWN characters of it; a str subclass (a templated value) shows as a plain
    string. Never raises: an error message must not fail in turn."""
    try:
        if isinstance(value, str):
            text = repr(str(value))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            text = _text(value)
        else:
            text = repr(value)
    except Exception:  # a RecursionError from a deeply nested list, or a __repr__ that fails
        text = "<%s>" % type(value).__name__
    if len(text) > _SHOWN:
        text = "%s... (%d characters)" % (text[:_SHOWN], len(text))
    return text


def _numbers(value, what):
    text = _text(value)
    if not _NUMERIC.match(text):
        raise CompatError("%s %s is not a version: expected numbers separated by dots, e.g. %s" % (
            what, _shown(value), {"driver": "550.54.15", "CUDA": "12.4"}.get(what, "2.5.1")))
    return tuple(int(part) for part in text.split("."))


def _pad(numbers, length=3):
    return tuple(numbers) + (0,) * (length - len(numbers))


def _newer(left, right):
    """Compare versions numerically, 570.124.06 > 570.26: never as strings."""
    width = max(len(left), len(right))
    return _pad(left, width) > _pad(right, width)


def _key(text):
    return tuple(int(part) for part in text.split("."))


def _dotted(numbers):
    return ".".join(str(n) for n in numbers)


def _cuda(value):
    numbers = _numbers(value, "CUDA")
    if len(numbers) < 2 or len(numbers) > 3:
        raise CompatError("CUDA %s is not a CUDA version: expected major.minor or major.minor.update, e.g. 12.4" % (
            _shown(value),))
    return numbers


def _release(value, what):
    """major.minor of a framework version: 2.5.1, 2.5.1+cu124 and 2.5 all give (2, 5)."""
    text = _text(value).split("+", 1)[0]
    if not _NUMERIC.match(text) or "." not in text or len(_text(value)) > 64:
        raise CompatError("%s %s is not a version: expected major.minor[.patch], e.g. %s" % (
            what, _shown(value), {"torch": "2.5.1", "horovod": "0.28.1"}.get(what, "2.16.1")))
    return _key(text)[:2]


def _nearest(wanted, known):
    """The newest of known (sorted keys) not newer than wanted, else the oldest."""
    below = [k for k in known if not _newer(k, wanted)]
    return below[-1] if below else known[0]


def _known(section):
    """The major.minor keys of a section, oldest first (2.9 before 2.10)."""
    return sorted(_key(k) for k in COMPAT[section])


def _in_table(value, what, section):
    """major.minor of a framework release that has a row in section; else a CompatError naming the nearest."""
    wanted = _release(value, what)
    known = _known(section)
    if wanted not in known:
        raise CompatError("%s %s is not in the table (%s %s to %s); nearest: %s" % (
            what, _text(value), what, _dotted(known[0]), _dotted(known[-1]), _dotted(_nearest(wanted, known))))
    return wanted


def _channel_cuda(channel):
    """cu124 -> (12, 4); cu130 -> (13, 0)."""
    digits = channel[2:]
    return (int(digits[:-1]), int(digits[-1]))


def _channel(numbers):
    return "cu%d%d" % (numbers[0], numbers[1])


def _describe(channel):
    return "%s (CUDA %s)" % (channel, _dotted(_channel_cuda(channel)))


def _first(updates):
    """The driver of a release's oldest update the table has (its GA release, unless only updates were named)."""
    return updates[min(updates)]


def _toolkit_rows(min_drivers=None):
    """The toolkit_driver section as {(major, minor): {update: driver}}, with the releases newer than the table that
    min_drivers names ({"13.4": "615.20", "13.3.2": "610.60"}: major.minor is the GA release, major.minor.N Update N).

    min_drivers may name a release the table knows only with the driver the table has, and no release older than the
    newest in the table that NVIDIA never published (12.7); no driver may be older than an older release's.
    """
    rows = {_key(release): dict(enumerate(drivers)) for release, drivers in COMPAT["toolkit_driver"].items()}
    if min_drivers is None or (isinstance(min_drivers, (dict, str, list)) and len(min_drivers) == 0):
        return rows
    if not isinstance(min_drivers, dict):
        raise CompatError("min_drivers must be a mapping of CUDA release to its minimum driver, such as "
                          "{'13.4': '615.20'}, got %s" % _shown(min_drivers))
    if len(min_drivers) > _MAX_MIN_DRIVERS:
        raise CompatError("min_drivers names %d CUDA releases; at most %d" % (len(min_drivers), _MAX_MIN_DRIVERS))
    known = sorted(rows)
    for cuda, driver in min_drivers.items():
        if isinstance(cuda, float):
            raise CompatError("min_drivers names CUDA %s as the number %s: quote it (a YAML number loses trailing "
                              "zeros: 13.10 reads as 13.1)" % (_text(cuda), _text(cuda)))
        try:  # the message names min_drivers: "CUDA 'thirteen'" alone reads as the CUDA asked about
            numbers = _cuda(cuda)
        except CompatError as error:
            raise CompatError("min_drivers: %s" % error) from None
        if isinstance(driver, float):
            raise CompatError("min_drivers gives CUDA %s's driver as the number %s: quote it (a YAML number loses "
                              "trailing zeros: 615.20 reads as 615.2)" % (_text(cuda), _text(driver)))
        try:  # and "driver 'latest'" alone as the node's driver
            _numbers(driver, "driver")
        except CompatError as error:
            raise CompatError("min_drivers: CUDA %s's %s" % (_text(cuda), error)) from None
        release, update = numbers[:2], (numbers[2] if len(numbers) == 3 else 0)
        table = rows.get(release, {}).get(update) if release in known else None
        if table is not None:
            if _pad(_key(table)) != _pad(_numbers(driver, "driver")):
                raise CompatError("min_drivers names CUDA %s with driver %s, but the table has it: driver >= %s" % (
                    _text(cuda), _text(driver), table))
            continue
        if release not in known and _newer(known[-1], release):
            raise CompatError("min_drivers names CUDA %s, which is not a CUDA release: min_drivers is for releases "
                              "newer than the table (CUDA %s to %s), or newer updates of one in it" % (
                                  _text(cuda), _dotted(known[0]), _dotted(known[-1])))
        rows.setdefault(release, {})[update] = _text(driver)
    previous = None
    for release in sorted(rows):
        for update in sorted(rows[release]):
            driver = rows[release][update]
            if previous and _newer(_key(previous[1]), _key(driver)):
                raise CompatError("min_drivers: CUDA %s.%d's driver %s is older than CUDA %s's (%s); a newer CUDA "
                                  "release never needs an older driver" % (
                                      _dotted(release), update, driver, previous[0], previous[1]))
            previous = ("%s.%d" % (_dotted(release), update), driver)
    return rows


def _named_by_override(cuda):
    return ("where NVIDIA has published its minimum driver (CUDA Toolkit release notes, table \"CUDA Toolkit and "
            "Corresponding Driver Versions\"), name it: min_drivers={'%s': '<driver>'}" % cuda)


def _cuda_release(cuda, min_drivers=None):
    """A CUDA release of the table (with the releases min_drivers names) as (major.minor, update, its minimum driver).

    The one answer to "is this a CUDA release": cuda_min_driver, cuda_too_new, torch_cuda_channel, tensorflow_for_cuda
    and gpu_support_problems(cuda=...) all ask it. A release newer than the table is refused, naming the newest the
    table knows and min_drivers, never answered with a guess; a release NVIDIA never published (12.7) is refused
    with the nearest.
    """
    numbers = _cuda(cuda)
    rows = _toolkit_rows(min_drivers)
    release, update = numbers[:2], (numbers[2] if len(numbers) == 3 else 0)
    known = sorted(rows)
    given = _text(cuda)
    if release not in rows:
        newest = known[-1]
        if _newer(release, newest):
            raise CompatError("CUDA %s is newer than the table: its newest is CUDA %s (driver >= %s), and it cannot "
                              "say which driver CUDA %s needs; %s" % (
                                  given, _dotted(newest), _first(rows[newest]), given, _named_by_override(given)))
        raise CompatError("CUDA %s is not in the table (CUDA %s to %s); nearest: %s" % (
            given, _dotted(known[0]), _dotted(newest), _dotted(_nearest(release, known))))
    updates = rows[release]
    if update not in updates:
        names = ", ".join("%s.%d" % (_dotted(release), n) for n in sorted(updates))
        last = max(updates)
        raise CompatError("CUDA %s is not a release the table knows: CUDA %s has %s; nearest: %s.%d (driver >= %s); "
                          "for a newer update, %s" % (given, _dotted(release), names, _dotted(release), last,
                                                      updates[last], _named_by_override(given)))
    return release, update, updates[update]


def cuda_min_driver(cuda, compat="toolkit", min_drivers=None):
    """The minimum Linux x86_64 driver for a CUDA release: "12.4" -> "550.54.14", "12.4.1" -> "550.54.15".

    compat="toolkit" is NVIDIA's driver for that toolkit release (every feature works); compat="minor" is the
    minimum for CUDA minor version compatibility, the same for a whole CUDA major (some features need the newer
    driver, and PTX newer than the driver cannot be JIT-compiled). min_drivers names the drivers of releases newer
    than the table ({"13.4": "615.20"}); for a CUDA major the table lacks, compat="minor" gives that driver too.
    """
    if compat not in COMPAT_MODES:
        raise CompatError("compat must be one of %s, got %s" % (", ".join(COMPAT_MODES), _shown(compat)))
    release, _update, driver = _cuda_release(cuda, min_drivers)
    if compat == "minor":
        return COMPAT["minor_compat_driver"].get(str(release[0]), driver)
    return driver


def cuda_max_for_driver(driver, min_drivers=None, older=None):
    """The newest CUDA major.minor whose toolkit (GA) driver minimum this driver meets: "550.54.15" -> "12.4".

    A driver of a branch newer than the table's newest (615 where the newest is CUDA 13.3's 610) is refused: it may
    run a CUDA the table does not know. min_drivers names the newer releases' drivers, as for cuda_min_driver. A
    driver older than every release in the table is refused too, unless older (a str, such as "") is given: then
    that is the answer (a question such as "the newest TensorFlow this driver runs" has the answer none).
    """
    if older is not None and not isinstance(older, str):
        raise CompatError("older must be a string (what to give for a driver older than the table), got %s"
                          % _shown(older))
    numbers = _numbers(driver, "driver")
    rows = _toolkit_rows(min_drivers)
    known = sorted(rows)
    best = None
    for release in known:
        if not _newer(_key(_first(rows[release])), numbers):
            best = release
    if best is None:
        if older is not None:
            return older
        oldest = known[0]
        need = _first(rows[oldest])
        raise CompatError("driver %s is older than any CUDA in the table: the oldest, CUDA %s, needs >= %s; "
                          "nearest: CUDA %s (driver >= %s)"
                          % (_text(driver), _dotted(oldest), need, _dotted(oldest), need))
    branch = max(_key(d)[0] for updates in rows.values() for d in updates.values())
    if numbers[0] > branch:
        newest = known[-1]
        raise CompatError("driver %s is newer than the table: its newest is CUDA %s (driver >= %s, branch %d), and it "
                          "cannot say which newer CUDA a branch %d driver runs; ask the driver (gpu_facts' "
                          "cuda_driver_version), or where NVIDIA has published the newer releases' minimum drivers "
                          "(CUDA Toolkit release notes), name them: min_drivers={'<cuda>': '<driver>'}" % (
                              _text(driver), _dotted(newest), _first(rows[newest]), branch, numbers[0]))
    return _dotted(best)


def cuda_too_new(cudas, driver, min_drivers=None):
    """The CUDA releases among cudas that driver is too old for, each with the driver it needs (the minimum of its
    toolkit release): ["12.4", "12.8"], "550.54.15" -> [{"cuda": "12.8", "driver": "570.26"}]. A release the table
    does not know fails as in cuda_min_driver, min_drivers included."""
    have = _numbers(driver, "driver")
    if not isinstance(cudas, (str, list, tuple)):
        raise CompatError("cudas must be a CUDA version or a list of them, got %s" % type(cudas).__name__)
    found = []
    for release in list(cudas) if isinstance(cudas, (list, tuple)) else [cudas]:
        need = cuda_min_driver(release, min_drivers=min_drivers)
        if _newer(_key(need), have):
            found.append({"cuda": _text(release), "driver": need})
    return found


def torch_cuda_channel(cuda, torch=None, exact=False, compat="toolkit", gpus=None, *, min_drivers=None):
    """The PyTorch wheel channel (cu124, ...) for a CUDA version.

    Without torch: over every release in the table. With torch: that release's channels. The answer is the newest
    channel not newer than the CUDA given (a cuXYZ wheel needs a driver that supports CUDA X.YZ, and runs on any
    newer one), so CUDA 12.8 with torch 2.5 gives cu124. Where there is none, compat="minor" takes the nearest newer
    channel of the same CUDA major: the wheels bring their own CUDA runtime, which runs on any driver of its major
    through CUDA minor version compatibility, so CUDA 12.4 with torch 2.13 gives cu126 (and CUDA 13.0 with torch 2.13
    still cu130, not the newer cu132). exact=True asks for the channel of exactly that CUDA. gpus (with torch): only
    the channels whose wheels carry code for every GPU given count (see gpu_support_problems).

    cuda must be a CUDA release cuda_min_driver answers for (the same check, min_drivers included): a CUDA newer than
    the table, or one NVIDIA never published (12.7), fails as it does there.
    """
    if compat not in COMPAT_MODES:
        raise CompatError("compat must be one of %s, got %s" % (", ".join(COMPAT_MODES), _shown(compat)))
    release = _cuda_release(cuda, min_drivers)[0]
    if _text(torch) == "" and gpus:
        raise CompatError("gpus needs torch: which GPUs a channel's wheels carry code for depends on the torch release")
    if _text(torch) == "":
        channels = sorted({c for cs in COMPAT["torch_channels"].values() for c in cs if c != "cpu"},
                          key=_channel_cuda)
        missing = "no torch release in the table has a wheel for CUDA %s: the channels are" % _text(cuda)
    else:
        wanted = _in_table(torch, "torch", "torch_channels")
        channels = [c for c in COMPAT["torch_channels"][_dotted(wanted)] if c != "cpu"]
        missing = "torch %s has no wheel for CUDA %s: its channels are" % (_text(torch), _text(cuda))
        pairs = _gpus(gpus)
        if pairs:
            fit = [c for c in channels if not _missing(torch_targets(torch, c), pairs)]
            named = ", ".join(_named(a, c) for a, c in pairs)
            if not fit:
                raise CompatError("torch %s has no CUDA wheel that runs on %s: none of its channels %s carries code "
                                  "for them; nearest: %s" % (
                                      _text(torch), named, ", ".join(channels), _nearest_torch(torch, pairs)))
            if fit != channels:
                channels = fit
                missing = "torch %s has no wheel for CUDA %s that runs on %s: its channels for them are" % (
                    _text(torch), _text(cuda), named)
    fitting = [c for c in channels if not _newer(_channel_cuda(c), release)]
    if exact and _channel(release) in channels:
        return _channel(release)
    if fitting and not exact:
        return fitting[-1]
    minor = [c for c in channels if _channel_cuda(c)[0] == release[0] and _newer(_channel_cuda(c), release)]
    if minor and compat == "minor" and not exact:
        return minor[0]
    nearest = fitting[-1] if fitting else channels[0]
    raise CompatError("%s %s; nearest: %s" % (missing, ", ".join(channels), _describe(nearest)))


def tensorflow_build(tf_version):
    """The CUDA and cuDNN a TensorFlow release was built with: "2.16.1" -> {"cuda": "12.3", "cudnn": "8.9"}."""
    wanted = _in_table(tf_version, "tensorflow", "tensorflow_build")
    return dict(COMPAT["tensorflow_build"][_dotted(wanted)])


def tensorflow_for_cuda(cuda, min_drivers=None):
    """The newest TensorFlow release in the table built with a CUDA not newer than cuda (a driver that runs that CUDA
    runs the build): "12.4" -> "2.17"; "" when there is none. cuda is checked as cuda_min_driver checks it."""
    release = _cuda_release(cuda, min_drivers)[0]
    fitting = [r for r in _known("tensorflow_build")
               if not _newer(_key(COMPAT["tensorflow_build"][_dotted(r)]["cuda"]), release)]
    return _dotted(fitting[-1]) if fitting else ""


HOROVOD_FRAMEWORKS = ("torch", "tensorflow")


def horovod_limit(horovod, framework):
    """The first release of framework ("torch" or "tensorflow") that a Horovod release does not build against.

    "0.28.1", "torch" -> {"below": "2.1", "why": "torch 2.1 and newer need a C++17 build, ..."}: Horovod 0.28.1
    builds against torch older than 2.1 only. A Horovod release newer than every row gives {} (no known limit).
    """
    if framework not in HOROVOD_FRAMEWORKS:
        raise CompatError("framework must be one of %s, got %s" % (", ".join(HOROVOD_FRAMEWORKS), _shown(framework)))
    release = _release(horovod, "horovod")
    for row in _known("horovod_limits"):
        if not _newer(release, row):
            below, why = COMPAT["horovod_limits"][_dotted(row)][framework]
            return {"below": below, "why": why}
    return {}


# GPU architectures: which driver branch, kernel modules, CUDA and framework builds a node's GPUs can use.

KERNEL_MODULES = ("open", "proprietary")


def _capability(value):
    """'9.0' -> (9, 0); a compute capability as NVML reports it (major.minor)."""
    text = _text(value)
    if not re.match(r"\A[0-9]{1,4}\.[0-9]{1,4}\Z", text):
        raise CompatError("compute capability %s is not one: expected major.minor, e.g. 9.0" % _shown(value))
    return _key(text)


def _architecture_of(capability):
    for name, row in COMPAT["architectures"].items():
        if _dotted(capability) in row["compute_capabilities"]:
            return name
    return None


def _gpu(item):
    """One GPU as (architecture, compute capability or None). item: a gpu_facts GPU or a PCI device (a dict with
    architecture and/or compute_capability), an architecture name or a compute capability. A GPU of an architecture
    the table does not know (newer than it: NVML names it, the table has no row), or whose architecture could not be
    read (null), gives (None, None); anything else that is not a GPU is refused."""
    if isinstance(item, dict):
        if "architecture" not in item and "compute_capability" not in item:
            raise CompatError("%s is not a GPU: expected architecture and/or compute_capability, as gpu_facts lists "
                              "its GPUs and PCI devices" % _shown(item))
        capability = item.get("compute_capability")
        architecture = item.get("architecture")
        if architecture is not None and not isinstance(architecture, str):
            raise CompatError("%s is not a GPU: its architecture is not a name" % _shown(item))
    elif isinstance(item, (str, int, float)) and not isinstance(item, bool):
        text = _text(item)
        if re.match(r"^[0-9]", text):
            capability, architecture = item, None
        elif re.match(r"^[A-Za-z]+$", text):
            capability, architecture = None, item
        else:
            raise CompatError("%s is not a GPU architecture name (such as volta) or a compute capability (such as "
                              "7.0)" % _shown(item))
    else:
        raise CompatError("%s is not a GPU: expected a gpu_facts GPU, an architecture name or a compute "
                          "capability" % _shown(item))
    architecture = _text(architecture).lower() or None
    if architecture is not None and architecture not in COMPAT["architectures"]:
        return None, None  # newer than the table
    capability = _capability(capability) if _text(capability) else None
    if capability is None:
        return (architecture, None) if architecture else (None, None)
    found = _architecture_of(capability)
    if found is None:
        # A compute capability the table lacks: an architecture it knows is answered for by its name alone.
        return (architecture, None) if architecture else (None, None)
    if architecture and found != architecture:
        raise CompatError("compute capability %s is not one of %s's (%s)" % (
            _dotted(capability), architecture, ", ".join(COMPAT["architectures"][architecture]
                                                         ["compute_capabilities"])))
    return found, capability


def _gpus(gpus):
    """The distinct (architecture, capability) of a node's GPUs, in the table's order."""
    if gpus is None:
        gpus = []
    elif not isinstance(gpus, (list, tuple)):
        gpus = [gpus]
    found = {_gpu(item) for item in gpus} - {(None, None)}
    # A GPU known by its architecture alone adds nothing where a GPU of that architecture has a compute capability.
    found -= {(a, None) for a, c in found if c is not None}
    order = list(COMPAT["architectures"])
    return sorted(found, key=lambda pair: (order.index(pair[0]), pair[1] or (0, 0)))


def _named(architecture, capability=None):
    title = "Ada" if architecture == "ada" else architecture.capitalize()
    return "%s (compute capability %s)" % (title, _dotted(capability)) if capability else title


def _capabilities(architecture, capability):
    """The compute capabilities a GPU may have: its own, or every one of its architecture when only that is known
    (the PCI scan, before any driver). A GPU of unknown compute capability can use what one of them can: the table
    refuses only what no chip of the architecture can use."""
    if capability:
        return [capability]
    return [_key(c) for c in COMPAT["architectures"][architecture]["compute_capabilities"]]


def _cuda_range(architecture, capability):
    """The CUDA releases that build for a GPU, as (first, last) keys, None where open: for an architecture alone, the
    widest range over its compute capabilities."""
    rows = [COMPAT["sm_cuda"][_dotted(each)] for each in _capabilities(architecture, capability)]
    firsts = [_key(first) if first else None for first, _last in rows]
    lasts = [_key(last) if last else None for _first, last in rows]
    return (None if None in firsts else min(firsts)), (None if None in lasts else max(lasts))


def _runs(targets, capability):
    """Whether code built for targets runs on a GPU of capability: a cubin (sm_XY) on X.Y and newer minors of X, PTX
    (compute_XY) on X.Y and every newer GPU."""
    for target in targets:
        kind, digits = target.split("_", 1)
        built = (int(digits[:-1]), int(digits[-1]))
        if kind == "sm" and built[0] == capability[0] and built[1] <= capability[1]:
            return True
        if kind == "compute" and not _newer(built, capability):
            return True
    return False


def gpu_architecture(gpu):
    """What the table knows of a GPU's architecture: "9.0" or "hopper" (or a gpu_facts GPU) -> {"name": "hopper",
    "compute_capabilities": [...], "driver_branches": {"first": "520", "last": None}, "open_kernel_modules":
    "supported", "cuda": {"first": "11.8", "last": None}}. cuda is for the compute capability given, else the widest
    range over the architecture's compute capabilities."""
    architecture, capability = _gpu(gpu)
    if architecture is None:
        raise CompatError("%s is not a GPU architecture or compute capability in the table: %s" % (
            _shown(gpu), ", ".join(COMPAT["architectures"])))
    row = COMPAT["architectures"][architecture]
    first, last = _cuda_range(architecture, capability)
    return {
        "name": architecture,
        "compute_capability": _dotted(capability) if capability else None,
        "compute_capabilities": list(row["compute_capabilities"]),
        "driver_branches": {"first": row["driver_branches"][0], "last": row["driver_branches"][1]},
        "open_kernel_modules": row["open_kernel_modules"],
        "cuda": {"first": _dotted(first) if first else None, "last": _dotted(last) if last else None},
    }


def _branch(value):
    numbers = _numbers(value, "driver")
    return numbers[0]


def _branch_problems(branch, architectures):
    """The architectures a driver branch does not support, with the nearest branch that supports them all; one
    message where no branch does (a node of Kepler and Blackwell GPUs)."""
    rows = {a: COMPAT["architectures"][a]["driver_branches"] for a in architectures}
    lowest = max([int(first) for first, _last in rows.values() if first] or [0])
    highest = min([int(last) for _first, last in rows.values() if last] or [10 ** 6])
    if lowest > highest:
        return ["no driver branch supports all of %s: %s" % (
            ", ".join(_named(a) for a in architectures),
            ", ".join("%s %s" % (_named(a), ("up to %s" % last) if last else ("from %s" % first))
                      for a, (first, last) in rows.items() if first or last))]
    nearest = min(max(branch, lowest), highest)
    problems = []
    for architecture, (first, last) in rows.items():
        if last and branch > int(last):
            problems.append("driver branch %d does not support %s: its last branch is %s; nearest: %d" % (
                branch, _named(architecture), last, nearest))
        elif first and branch < int(first):
            problems.append("driver branch %d does not support %s: it needs branch %s or newer; nearest: %d" % (
                branch, _named(architecture), first, nearest))
    return problems


def _kernel_modules_problems(modules, architectures):
    support = {a: COMPAT["architectures"][a]["open_kernel_modules"] for a in architectures}
    if "unsupported" in support.values() and "required" in support.values():
        only = {value: ", ".join(_named(a) for a, v in support.items() if v == value)
                for value in ("unsupported", "required")}
        return ["no kernel module flavour serves all of %s: the proprietary modules only for %s, the open ones only "
                "for %s" % (", ".join(_named(a) for a in architectures), only["unsupported"], only["required"])]
    problems = []
    for architecture, value in support.items():
        if modules == "open" and value == "unsupported":
            problems.append("the open kernel modules do not support %s (Turing and newer only); nearest: "
                            "proprietary" % _named(architecture))
        elif modules == "proprietary" and value == "required":
            problems.append("%s runs with the open kernel modules only; nearest: open" % _named(architecture))
    return problems


def _nearest_cuda(cuda, wanted_first, wanted_last):
    """The toolkit release in the table nearest to cuda inside [first, last]."""
    known = [r for r in _known("toolkit_driver")
             if (not wanted_first or not _newer(_key(wanted_first), r))
             and (not wanted_last or not _newer(r, _key(wanted_last)))]
    if not known:
        return None
    return min(known, key=lambda r: abs((r[0] * 100 + r[1]) - (cuda[0] * 100 + cuda[1])))


def _cuda_problems(cuda, pairs, min_drivers=None):
    """The GPUs a CUDA release does not build for, with the nearest release that builds for them all; one message
    where none does (Kepler and Blackwell on one node). A release newer than the table must be named in min_drivers;
    it is then taken to build for what the newest release in the table builds for (sm_cuda's open ranges), less what
    an older release dropped."""
    release = _cuda_release(cuda, min_drivers)[0]
    ranges = [(a, c, *_cuda_range(a, c)) for a, c in pairs]
    firsts = [first for _a, _c, first, _last in ranges if first]
    lasts = [last for _a, _c, _first, last in ranges if last]
    lowest, highest = (max(firsts) if firsts else None), (min(lasts) if lasts else None)
    nearest = _nearest_cuda(release, lowest and _dotted(lowest), highest and _dotted(highest))
    if len(pairs) > 1 and lowest and highest and _newer(lowest, highest):
        return ["no CUDA release in the table builds for all of %s" % ", ".join(_named(a, c) for a, c in pairs)]
    problems = []
    for architecture, capability, first, last in ranges:
        if first and _newer(first, release):
            reason = "it needs CUDA %s or newer" % _dotted(first)
        elif last and _newer(release, last):
            reason = "the last CUDA that builds for it is %s" % _dotted(last)
        else:
            continue
        problems.append("CUDA %s does not build for %s: %s; nearest: %s" % (
            _dotted(release), _named(architecture, capability), reason,
            _dotted(nearest) if nearest else "none in the table"))
    return problems


def _torch_release(torch):
    return _in_table(torch, "torch", "torch_channels")


def torch_targets(torch, channel):
    """The GPU code (sm_XY cubins, compute_XY PTX) in torch's wheels of a channel; [] for cpu."""
    release = _torch_release(torch)
    if channel not in COMPAT["torch_channels"][_dotted(release)]:
        raise CompatError("torch %s has no %s channel: its channels are %s" % (
            _text(torch), _shown(channel), ", ".join(COMPAT["torch_channels"][_dotted(release)])))
    if channel == "cpu":
        return []
    rows = [row for row in COMPAT["torch_targets"][channel] if not _newer(_key(row[0]), release)]
    if not rows:
        raise CompatError("the table does not say which GPUs torch %s's %s wheels carry" % (_text(torch), channel))
    return list(rows[-1][1])


def _missing(targets, gpus):
    """The GPUs of (architecture, capability) pairs that code built for targets does not run on, as names."""
    return [_named(a, c) for a, c in gpus
            if not any(_runs(targets, each) for each in _capabilities(a, c))]


def _torch_problem(torch, channel, gpus):
    targets = torch_targets(torch, channel)
    if channel == "cpu":
        return None
    missing = _missing(targets, gpus)
    if not missing:
        return None
    fitting = [c for c in COMPAT["torch_channels"][_dotted(_torch_release(torch))]
               if c != "cpu" and not _missing(torch_targets(torch, c), gpus)]
    return "torch %s's %s wheels carry no code for %s (they carry %s); nearest: %s" % (
        _text(torch), channel, ", ".join(missing), ", ".join(targets),
        min(fitting, key=lambda c: abs(_channel_cuda(c)[0] * 10 + _channel_cuda(c)[1]
                                       - _channel_cuda(channel)[0] * 10 - _channel_cuda(channel)[1]))
        if fitting else _nearest_torch(torch, gpus))


def _nearest_torch(torch, pairs):
    """The torch release nearest to torch with a channel whose wheels carry code for every GPU, as "torch 2.8
    (cu128)"; else the CPU build."""
    wanted = _torch_release(torch)
    found = []
    for release in _known("torch_channels"):
        for channel in COMPAT["torch_channels"][_dotted(release)]:
            if channel != "cpu" and not _missing(torch_targets(_dotted(release), channel), pairs):
                found.append((abs((release[0] - wanted[0]) * 100 + release[1] - wanted[1]), release, channel))
                break
    if not found:
        return "cpu (no torch release in the table has a channel that carries code for them)"
    _distance, release, channel = min(found)
    return "torch %s (%s)" % (_dotted(release), channel)


def _tensorflow_problem(tf_version, gpus):
    wanted = _in_table(tf_version, "tensorflow", "tensorflow_targets")
    known = _known("tensorflow_targets")
    targets = COMPAT["tensorflow_targets"][_dotted(wanted)]
    missing = _missing(targets, gpus)
    if not missing:
        return None
    fitting = [r for r in known if not _missing(COMPAT["tensorflow_targets"][_dotted(r)], gpus)]
    return "tensorflow %s's GPU build carries no code for %s (it carries %s); nearest: %s" % (
        _text(tf_version), ", ".join(missing), ", ".join(targets),
        "tensorflow %s" % _dotted(_nearest(wanted, fitting)) if fitting else "the CPU build")


def gpu_support_problems(gpus, *, driver_branch=None, kernel_modules=None, cuda=None, torch=None, torch_channel=None,
                         tensorflow=None, min_drivers=None):
    """What the node's GPUs cannot use among the choices given, one message each (empty: every GPU can use them).

    gpus: the node's GPUs (gpu_facts GPUs or PCI devices with architecture and/or compute_capability, architecture
    names, or compute capabilities); mixed nodes get the intersection. A GPU known by its architecture alone is
    refused only what no chip of that architecture can use. GPUs whose architecture is not in the table are left out.
    cuda may be a list of releases, each one cuda_min_driver answers for (min_drivers names those newer than the
    table). Each message names both sides and the nearest valid choice.
    """
    pairs = _gpus(gpus)
    architectures = []
    for pair in pairs:
        if pair[0] not in architectures:
            architectures.append(pair[0])
    problems = []
    if _text(driver_branch):
        problems += _branch_problems(_branch(driver_branch), architectures)
    if _text(kernel_modules):
        if kernel_modules not in KERNEL_MODULES:
            raise CompatError("kernel_modules must be one of %s, got %s" % (", ".join(KERNEL_MODULES),
                                                                            _shown(kernel_modules)))
        problems += _kernel_modules_problems(kernel_modules, architectures)
    for release in cuda if isinstance(cuda, (list, tuple)) else [cuda]:
        if _text(release):
            problems += _cuda_problems(release, pairs, min_drivers)
    if bool(_text(torch)) != bool(_text(torch_channel)):
        raise CompatError("torch and torch_channel go together: the GPU code of a channel's wheels depends on the "
                          "torch release")
    if _text(torch) and _text(torch_channel):
        problem = _torch_problem(torch, _text(torch_channel), pairs)
        problems += [problem] if problem else []
    if _text(tensorflow):
        problem = _tensorflow_problem(tensorflow, pairs)
        problems += [problem] if problem else []
    return problems


def torch_channels_for_gpus(torch, gpus):
    """The CUDA channels of a torch release whose wheels carry code for every GPU given, oldest CUDA first."""
    pairs = _gpus(gpus)
    release = _torch_release(torch)
    return [c for c in COMPAT["torch_channels"][_dotted(release)]
            if c != "cpu" and not _missing(torch_targets(torch, c), pairs)]
