# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: loads pynvml and wraps one NVML session per module run."""

from __future__ import annotations

import os
import sys
import traceback

# Where the accelops.gpu.nvml_python role installs nvidia-ml-py on a managed host: a virtual environment of the
# system Python, outside the distribution's site-packages (PEP 668). Modules run under the system Python, so they
# add that environment's site-packages to sys.path when pynvml is not importable on its own.
NVML_VENV = "/opt/accelops-gpu/nvml"
PYTHONPATH_ENV = "ACCELOPS_GPU_PYTHONPATH"
MISSING_LIB_HINT = (
    "nvidia-ml-py (import name pynvml) is not installed for %s: run the accelops.gpu.nvml_python role, "
    "or install nvidia-ml-py into a virtual environment at %s"
) % (sys.executable, NVML_VENV)


def _candidate_paths():
    paths = [p for p in os.environ.get(PYTHONPATH_ENV, "").split(os.pathsep) if p]
    paths.append(os.path.join(NVML_VENV, "lib", "python%d.%d" % sys.version_info[:2], "site-packages"))
    return paths


def _import_pynvml():
    try:
        import pynvml  # pylint: disable=import-outside-toplevel
        return pynvml, None
    except ImportError:
        first_error = traceback.format_exc()
    added = [p for p in _candidate_paths() if os.path.isdir(p) and p not in sys.path]
    if not added:
        return None, first_error
    sys.path.extend(added)
    try:
        import pynvml  # pylint: disable=import-outside-toplevel
        return pynvml, None
    except ImportError:
        return None, traceback.format_exc()


pynvml, PYNVML_IMPORT_ERROR = _import_pynvml()
HAS_PYNVML = pynvml is not None

# NVML return codes (nvml.h); kept here so the module works with any nvidia-ml-py release.
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18

# Lookups for which NOT_FOUND is an answer, not a fault.
LOOKUPS = frozenset(("nvmlSystemGetProcessName", "nvmlDeviceGetMigDeviceHandleByIndex"))

# A value this GPU or driver cannot give: reported as null, never as an error.
UNAVAILABLE = frozenset((NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_FUNCTION_NOT_FOUND))

INIT_REASONS = {
    NVML_ERROR_LIBRARY_NOT_FOUND: "libnvidia-ml.so.1 was not found: the NVIDIA driver is not installed",
    NVML_ERROR_DRIVER_NOT_LOADED: "the NVIDIA kernel driver is not loaded (libnvidia-ml.so.1 is present)",
    NVML_ERROR_NO_PERMISSION: "no permission to open the NVIDIA device files",
    NVML_ERROR_LIB_RM_VERSION_MISMATCH: (
        "driver/library version mismatch: the installed NVML library is not the loaded NVIDIA kernel module's release "
        "(the driver changed and the node has not rebooted)"),
}


class GpuLost(Exception):
    """The GPU fell off the bus or stopped answering (NVML_ERROR_GPU_IS_LOST)."""


class NvmlCallError(Exception):
    """An NVML call failed for a reason other than 'not supported'."""

    def __init__(self, function, code, message):
        super().__init__("%s: %s (NVML error %s)" % (function, message, code))
        self.function = function
        self.code = code
        self.message = message


class NvmlSession:
    """One NVML init per module run; every call goes through :meth:`call`, which counts calls and maps errors.

    ``lib`` is the pynvml module (injectable for tests that wrap it).
    """

    def __init__(self, lib=None):
        self.lib = lib if lib is not None else pynvml
        self.calls = 0
        self.active = False
        # The NVML error code of a failed init (None: not tried, or it worked).
        self.init_error = None
        # Errors that query() read as None: an NVML error is never silently good news, so callers report them.
        self.errors = []

    def open(self):
        """Initialise NVML; return ``(nvml_available, driver_loaded, reason)``. Never raises NVML errors."""
        if self.lib is None:
            return False, False, MISSING_LIB_HINT
        self.calls += 1
        try:
            self.lib.nvmlInit()
        except self.lib.NVMLError as exc:
            code = getattr(exc, "value", None)
            self.init_error = code
            reason = INIT_REASONS.get(code) or "NVML initialisation failed: %s (NVML error %s)" % (exc, code)
            return code != NVML_ERROR_LIBRARY_NOT_FOUND, False, reason
        self.active = True
        return True, True, None

    def close(self):
        if self.active:
            self.active = False
            try:
                self.lib.nvmlShutdown()
            except self.lib.NVMLError:
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def call(self, function, *args):
        """Call ``pynvml.<function>(*args)``.

        Returns None where NVML says the value is not supported or the driver lacks the entry point; raises
        :class:`GpuLost` for a lost GPU and :class:`NvmlCallError` for anything else.
        """
        self.calls += 1
        wrapper = getattr(self.lib, function, None)
        if wrapper is None:
            return None  # an nvidia-ml-py release older than this entry point
        try:
            return wrapper(*args)
        except self.lib.NVMLError as exc:
            code = getattr(exc, "value", None)
            if code in UNAVAILABLE:
                return None
            if code == NVML_ERROR_GPU_IS_LOST:
                raise GpuLost(function) from None
            raise NvmlCallError(function, code, str(exc)) from None

    def change(self, function, *args):
        """Call an NVML function that must do what it is asked (a setter, a create, a destroy, a read whose answer
        the caller needs): any error raises, "not supported" and a missing entry point included, so that nothing
        counts as done that NVML did not do."""
        self.calls += 1
        wrapper = getattr(self.lib, function, None)
        if wrapper is None:
            raise NvmlCallError(function, NVML_ERROR_FUNCTION_NOT_FOUND, "not in this nvidia-ml-py release")
        try:
            return wrapper(*args)
        except self.lib.NVMLError as exc:
            code = getattr(exc, "value", None)
            if code == NVML_ERROR_GPU_IS_LOST:
                raise GpuLost(function) from None
            raise NvmlCallError(function, code, str(exc)) from None

    def query(self, function, *args):
        """Like :meth:`call`, but any error other than a lost GPU reads as None (for optional facts).

        The error is kept in :attr:`errors` (as ``function: message (NVML error N)``), except the answers that
        mean "no such thing" for a lookup: a process of another PID namespace has no name here.
        """
        try:
            return self.call(function, *args)
        except NvmlCallError as exc:
            if not (exc.code == NVML_ERROR_NOT_FOUND and function in LOOKUPS):
                self.errors.append(str(exc))
            return None
