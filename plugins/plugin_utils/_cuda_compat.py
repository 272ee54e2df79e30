# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: which driver a CUDA needs, and which CUDA PyTorch and TensorFlow use."""

from __future__ import annotations

import re

# The compatibility knowledge, as published. docs/compatibility.md says how to update it.
COMPAT = {
    # Minimum Linux x86_64 driver of each CUDA Toolkit release: NVIDIA's CUDA Toolkit release notes, Table 3
    # "CUDA Toolkit and Corresponding Driver Versions" (column "Toolkit Driver Version", Linux x86_64),
    # https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/ (the 13.2 Update 2 edition lists every row below).
    # One list per major.minor: the GA release first, then Update 1, Update 2, ... (toolkit x.y.N is Update N).
    "toolkit_driver": {
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

_NUMERIC = re.compile(r"^\d+(\.\d+)*$")


class CompatError(ValueError):
    """A version the tables cannot answer for; the message names what was given and the nearest valid choice."""


def _text(value):
    # YAML may hand over 12.4 as a float or 580 as an int; bool is an int in Python, but never a version.
    if value is None or isinstance(value, bool):
        return ""
    return str(value).strip()


def _shown(value):
    """repr() of what was given; a str subclass (a templated value) shows as a plain string."""
    return repr(str(value)) if isinstance(value, str) else repr(value)


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
    if not _NUMERIC.match(text) or "." not in text:
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


def _channel_cuda(channel):
    """cu124 -> (12, 4); cu130 -> (13, 0)."""
    digits = channel[2:]
    return (int(digits[:-1]), int(digits[-1]))


def _channel(numbers):
    return "cu%d%d" % (numbers[0], numbers[1])


def _describe(channel):
    return "%s (CUDA %s)" % (channel, _dotted(_channel_cuda(channel)))


def cuda_min_driver(cuda, compat="toolkit"):
    """The minimum Linux x86_64 driver for a CUDA release: "12.4" -> "550.54.14", "12.4.1" -> "550.54.15".

    compat="toolkit" is NVIDIA's driver for that toolkit release (every feature works); compat="minor" is the
    minimum for CUDA minor version compatibility, the same for a whole CUDA major (some features need the newer
    driver, and PTX newer than the driver cannot be JIT-compiled).
    """
    if compat not in COMPAT_MODES:
        raise CompatError("compat must be one of %s, got %s" % (", ".join(COMPAT_MODES), _shown(compat)))
    numbers = _cuda(cuda)
    release = numbers[:2]
    known = _known("toolkit_driver")
    if release not in known:
        raise CompatError("CUDA %s is not in the table (CUDA %s to %s); nearest: %s" % (
            _text(cuda), _dotted(known[0]), _dotted(known[-1]), _dotted(_nearest(release, known))))
    updates = COMPAT["toolkit_driver"][_dotted(release)]
    update = numbers[2] if len(numbers) == 3 else 0
    if update >= len(updates):
        names = ", ".join("%s.%d" % (_dotted(release), n) for n in range(len(updates)))
        raise CompatError("CUDA %s is not a release: CUDA %s has %s; nearest: %s.%d" % (
            _text(cuda), _dotted(release), names, _dotted(release), len(updates) - 1))
    if compat == "minor":
        return COMPAT["minor_compat_driver"][str(release[0])]
    return updates[update]


def cuda_max_for_driver(driver):
    """The newest CUDA major.minor whose toolkit (GA) driver minimum this driver meets: "550.54.15" -> "12.4"."""
    numbers = _numbers(driver, "driver")
    known = _known("toolkit_driver")
    best = None
    for release in known:
        if not _newer(_key(COMPAT["toolkit_driver"][_dotted(release)][0]), numbers):
            best = release
    if best is None:
        oldest = _dotted(known[0])
        need = COMPAT["toolkit_driver"][oldest][0]
        raise CompatError("driver %s is older than any CUDA in the table: the oldest, CUDA %s, needs >= %s; "
                          "nearest: CUDA %s (driver >= %s)" % (_text(driver), oldest, need, oldest, need))
    return _dotted(best)


def torch_cuda_channel(cuda, torch=None, exact=False, compat="toolkit"):
    """The PyTorch wheel channel (cu124, ...) for a CUDA version.

    Without torch: over every release in the table. With torch: that release's channels. The answer is the newest
    channel not newer than the CUDA given (a cuXYZ wheel needs a driver that supports CUDA X.YZ, and runs on any
    newer one), so CUDA 12.8 with torch 2.5 gives cu124. Where there is none, compat="minor" takes the nearest newer
    channel of the same CUDA major: the wheels bring their own CUDA runtime, which runs on any driver of its major
    through CUDA minor version compatibility, so CUDA 12.4 with torch 2.13 gives cu126 (and CUDA 13.0 with torch 2.13
    still cu130, not the newer cu132). exact=True asks for the channel of exactly that CUDA.
    """
    if compat not in COMPAT_MODES:
        raise CompatError("compat must be one of %s, got %s" % (", ".join(COMPAT_MODES), _shown(compat)))
    release = _cuda(cuda)[:2]
    if _text(torch) == "":
        channels = sorted({c for cs in COMPAT["torch_channels"].values() for c in cs if c != "cpu"},
                          key=_channel_cuda)
        missing = "no torch release in the table has a wheel for CUDA %s: the channels are" % _text(cuda)
    else:
        wanted = _release(torch, "torch")
        known = _known("torch_channels")
        if wanted not in known:
            raise CompatError("torch %s is not in the table (torch %s to %s); nearest: %s" % (
                _text(torch), _dotted(known[0]), _dotted(known[-1]), _dotted(_nearest(wanted, known))))
        channels = [c for c in COMPAT["torch_channels"][_dotted(wanted)] if c != "cpu"]
        missing = "torch %s has no wheel for CUDA %s: its channels are" % (_text(torch), _text(cuda))
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
    wanted = _release(tf_version, "tensorflow")
    known = _known("tensorflow_build")
    if wanted not in known:
        raise CompatError("tensorflow %s is not in the table (tensorflow %s to %s); nearest: %s" % (
            _text(tf_version), _dotted(known[0]), _dotted(known[-1]), _dotted(_nearest(wanted, known))))
    return dict(COMPAT["tensorflow_build"][_dotted(wanted)])


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
