# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: desired GPU settings against NVML's current ones, validated first."""

from __future__ import annotations

import json
import math
import os
import re
import stat
import tempfile

from ansible_collections.accelops.gpu.plugins.module_utils import _nvml
from ansible_collections.accelops.gpu.plugins.module_utils._gpu_apply import (
    FAULTS,
    ApplyFailed,
    ConfigError,
    apply_every_gpu,
    describe_fault,
    label,
    validate_every_gpu,
)
from ansible_collections.accelops.gpu.plugins.module_utils._numbers import shown, whole
from ansible_collections.accelops.gpu.plugins.module_utils._nvml import NVML_ERROR_NO_PERMISSION, GpuLost, NvmlCallError

COMPUTE_MODES = {"default": 0, "prohibited": 2, "exclusive_process": 3}
COMPUTE_MODE_NAMES = {0: "default", 1: "exclusive_thread", 2: "prohibited", 3: "exclusive_process"}
SETTINGS = ("persistence_mode", "power_limit_w", "compute_mode", "ecc_mode", "mig_mode", "locked_clocks_mhz")
# ECC and MIG mode changes are stored as pending by the driver and take effect at the next GPU reset or reboot.
PENDING_SETTINGS = ("ecc_mode", "mig_mode")
NVML_CLOCK_GRAPHICS = 0
LOCKED_CLOCKS_FILE = "locked-clocks.json"
# The locked clocks of a GPU when the memory file is unreadable: a reset then always resets.
UNKNOWN_LOCK = "unknown"
# The memory holds one small entry per GPU: a larger file is not one this module wrote (then nothing is known).
MAX_MEMORY_BYTES = 1024 * 1024


class Unavailable(ConfigError):
    """The GPUs cannot be read at all (no pynvml, no driver): an error, except in check mode, where an earlier role
    of the same run may be what installs them."""


def diff_by_gpu(results):
    """Ansible's before/after diff from per-GPU results with ``index``, ``before`` and ``after``."""
    return {"before": {"GPU %d" % r["index"]: r["before"] for r in results},
            "after": {"GPU %d" % r["index"]: r["after"] for r in results}}


def run_in_session(module, work, what, predicted):
    """Exit the module with ``work(session)``'s result from one NVML session.

    Without pynvml or a usable driver the module fails, or, in check mode, warns that ``what`` cannot be compared
    and exits with ``predicted`` (a change). A :class:`ConfigError` fails the module with its message.
    """
    try:
        if not _nvml.HAS_PYNVML:
            raise Unavailable(_nvml.MISSING_LIB_HINT)
        with _nvml.NvmlSession() as session:
            _available, loaded, reason = session.open()
            if not loaded:
                raise Unavailable("NVML is not usable on this host: %s" % reason)
            result = work(session)
    except Unavailable as exc:
        if not module.check_mode:
            module.fail_json(msg=str(exc))
        module.warn("check mode: %s; %s cannot be compared, a real run would apply it" % (exc, what))
        module.exit_json(changed=True, **predicted)
    except ApplyFailed as exc:
        module.fail_json(msg=str(exc), **failed_result(module, exc))
    except ConfigError as exc:
        module.fail_json(msg=str(exc))
    except FAULTS as exc:  # a fault outside the phases that name their GPU: nothing was applied yet
        module.fail_json(msg=describe_fault("NVML", "reading the GPUs", exc) + "; nothing was changed")
    module.exit_json(**result)


def failed_result(module, exc):
    """What a module returns when a change failed part-way: whether anything changed, and on which GPUs."""
    result = dict(changed=exc.changed, gpus=exc.results)
    if module._diff:
        result["diff"] = diff_by_gpu(exc.results)
    return result


def resolve_targets(selectors, gpus):
    """Indexes of the GPUs that ``selectors`` name (``all``, indexes as strings or ints, UUIDs), in index order."""
    by_uuid = {gpu["uuid"].lower(): gpu["index"] for gpu in gpus if gpu.get("uuid")}
    indexes = [gpu["index"] for gpu in gpus]
    selectors = check_selectors(selectors)
    if selectors == ["all"]:
        return indexes
    chosen = set()
    for selector in selectors:
        index = whole(selector)
        if index is not None:
            if index not in indexes:
                raise ConfigError("gpus: index %s is out of range; this node has GPUs %s"
                                  % (selector, describe_range(indexes)))
            chosen.add(index)
        elif selector.lower() in by_uuid:
            chosen.add(by_uuid[selector.lower()])
        elif selector.upper().startswith("GPU-"):
            raise ConfigError("gpus: no GPU with UUID %s on this node; its GPUs are %s"
                              % (selector, ", ".join(sorted(by_uuid))))
        else:
            raise ConfigError("gpus: '%s' is neither 'all', a GPU index nor a GPU UUID (GPU-...)" % selector)
    return sorted(chosen)


def check_selectors(selectors):
    """The selectors as stripped strings, checked for what needs no GPU: not empty, 'all' alone, each one 'all', an
    index in ASCII digits (an int, not a bool) or text without control characters."""
    if isinstance(selectors, (str, bytes, dict)) or not isinstance(selectors, (list, tuple)):
        raise ConfigError("gpus: give a list of 'all', GPU indexes or UUIDs, got %s" % shown(selectors))
    if not selectors:
        raise ConfigError("gpus: give 'all' or a list of GPU indexes or UUIDs, got an empty list")
    checked = []
    for selector in selectors:
        if isinstance(selector, bool) or not isinstance(selector, (int, str)) or (
                isinstance(selector, int) and whole(selector) is None):
            raise ConfigError("gpus: %s is neither 'all', a GPU index nor a GPU UUID (GPU-...)" % shown(selector))
        text = str(selector).strip(" ")
        readable = text.isprintable() and text.isascii() and len(text) <= 64 and not text.lstrip("-").isdigit()
        if whole(text) is None and not readable:
            raise ConfigError("gpus: %s is neither 'all', a GPU index (ASCII digits) nor a GPU UUID (GPU-...)"
                              % shown(selector))
        checked.append(text)
    if "all" in checked and len(checked) > 1:
        raise ConfigError("gpus: 'all' cannot be combined with other selectors, got %s" % ", ".join(checked))
    return checked


def describe_range(indexes):
    if not indexes:
        return "none"
    return "%d-%d" % (indexes[0], indexes[-1]) if len(indexes) > 1 else str(indexes[0])


def normalise_clocks(value, field="locked_clocks_mhz"):
    """``{"min": int, "max": int}``, ``"reset"`` or None from the user's ``locked_clocks_mhz``."""
    if value is None:
        return None
    if isinstance(value, str):
        if value.strip(" ").lower() == "reset":
            return "reset"
        raise ConfigError("%s: give {min: MHz, max: MHz} or 'reset', got '%s'" % (field, value))
    if not isinstance(value, dict) or set(value) != {"min", "max"}:
        raise ConfigError("%s: give exactly the keys min and max (MHz), or 'reset', got %s" % (field, value))
    low, high = whole_mhz(value["min"]), whole_mhz(value["max"])
    if low is None or high is None:
        raise ConfigError("%s: min and max must be whole MHz (ASCII digits), got %s" % (field, value))
    if low <= 0 or high <= 0 or low > high:
        raise ConfigError("%s: need 0 < min <= max, got min %d and max %d" % (field, low, high))
    return {"min": low, "max": high}


WATTS = re.compile(r"\A[0-9]{1,7}(?:\.[0-9]{1,3})?\Z")


def parse_watts(value, field="power_limit_w"):
    """Watts as a float from a number (not a bool, finite) or ASCII decimal text such as ``450`` or ``450.5``."""
    if isinstance(value, str) and WATTS.match(value.strip(" ")):
        return float(value.strip(" "))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if (isinstance(value, int) and value.bit_length() <= 64) or (isinstance(value, float) and math.isfinite(value)):
            return float(value)
    raise ConfigError("%s must be a number of watts (ASCII digits), got %s" % (field, shown(value)))


def whole_mhz(value):
    """A clock given as an int, ASCII digits or a float without a fraction; None for anything else (1500.9, a bool,
    1e400)."""
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    return whole(value.strip(" ") if isinstance(value, str) else value)


def check_setting_types(settings, prefix, extra=()):
    """For settings that no argument spec converted (the boot unit's JSON): known keys only, each of its type."""
    if not isinstance(settings, dict):
        where = prefix.rstrip(".") or "settings"
        raise ConfigError("%s: must be a mapping of settings, got %s" % (where, type(settings).__name__))
    unknown = sorted(str(k) for k in set(settings) - set(SETTINGS) - set(extra))
    if unknown:
        raise ConfigError("%s%s: unknown setting; known: %s" % (prefix, ", ".join(unknown), ", ".join(SETTINGS)))
    for setting in ("persistence_mode", "ecc_mode", "mig_mode"):
        if settings.get(setting) is not None and not isinstance(settings[setting], bool):
            raise ConfigError("%s%s: must be true or false, got %s" % (prefix, setting, shown(settings[setting])))
    power = settings.get("power_limit_w")
    if power is not None and (isinstance(power, bool) or not isinstance(power, (int, float))
                              or not math.isfinite(power)):
        raise ConfigError("%spower_limit_w: must be a number of watts, got %s" % (prefix, shown(power)))
    mode = settings.get("compute_mode")
    if mode is not None and mode not in COMPUTE_MODES:
        raise ConfigError("%scompute_mode: must be one of %s, got %s" % (prefix, ", ".join(COMPUTE_MODES), shown(mode)))


def normalise_settings(settings, prefix=""):
    """The settings of one rule without the unset ones, checked for what needs no GPU to check."""
    chosen = {k: settings[k] for k in SETTINGS if settings.get(k) is not None}
    if "power_limit_w" in chosen:
        chosen["power_limit_w"] = parse_watts(chosen["power_limit_w"], prefix + "power_limit_w")
    if "locked_clocks_mhz" in chosen:
        chosen["locked_clocks_mhz"] = normalise_clocks(chosen["locked_clocks_mhz"], prefix + "locked_clocks_mhz")
    if "power_limit_w" in chosen and chosen["power_limit_w"] <= 0:
        raise ConfigError("%spower_limit_w must be a positive number of watts, got %s"
                          % (prefix, chosen["power_limit_w"]))
    return chosen


def check_rules(rules):
    """Check ``[(selectors, settings, field prefix), ...]`` for all that needs no GPU: every selector, every setting,
    a setting in every per-GPU rule and at least one in all. Raises :class:`ConfigError`."""
    wanted = False
    for selectors, settings, prefix in rules:
        try:
            check_selectors(selectors)
        except ConfigError as exc:
            raise ConfigError(prefix + str(exc)) from None
        chosen = normalise_settings(settings, prefix)
        if prefix and not chosen:
            raise ConfigError("%sgpus: this entry sets nothing; give it at least one of %s"
                              % (prefix, ", ".join(SETTINGS)))
        wanted = wanted or bool(chosen)
    if not wanted:
        raise ConfigError("no setting given: set at least one of %s, at the top level or in per_gpu"
                          % ", ".join(SETTINGS))


def desired_per_gpu(rules, inventory):
    """Merge ``[(selectors, settings, field prefix), ...]`` in order (later rules win) into {index: settings}.

    Every rule's selectors are resolved, also those of a rule that sets nothing (a mistyped index is never silent).
    """
    desired = {}
    for selectors, settings, prefix in rules:
        chosen = normalise_settings(settings, prefix)
        try:
            indexes = resolve_targets(selectors, inventory)
        except ConfigError as exc:
            raise ConfigError(prefix + str(exc)) from None
        for index in indexes if chosen else ():
            desired.setdefault(index, {}).update(chosen)
    return desired


def inventory(nvml):
    """Every GPU of an open NVML session as {index, uuid, handle, lost}.

    A count NVML cannot give, or a GPU it cannot hand out, is a :class:`ConfigError` (nothing has been changed):
    never zero GPUs.
    """
    try:
        count = nvml.call("nvmlDeviceGetCount")
    except NvmlCallError as exc:
        raise ConfigError("cannot count the GPUs: %s; nothing was changed" % exc) from None
    if count is None:
        raise ConfigError("cannot count the GPUs: NVML does not answer nvmlDeviceGetCount; nothing was changed")
    gpus = []
    for index in range(count):
        entry = {"index": index, "handle": None, "uuid": None, "lost": False}
        try:
            entry["handle"] = nvml.call("nvmlDeviceGetHandleByIndex", index)
            uuid = nvml.call("nvmlDeviceGetUUID", entry["handle"])
            entry["uuid"] = uuid.decode() if isinstance(uuid, bytes) else uuid
        except GpuLost:
            entry["lost"] = True
        except NvmlCallError as exc:
            raise ConfigError("GPU %d: cannot identify it: %s; nothing was changed" % (index, exc)) from None
        gpus.append(entry)
    return gpus


def lock_key(gpu):
    """The memory's key for a GPU: its UUID, in lower case (a memory edited by hand may have another case)."""
    return gpu["uuid"].lower() if gpu["uuid"] else None


def valid_lock(lock):
    """Whether a remembered lock is one this module writes: {min, max} of whole MHz, min <= max."""
    return (isinstance(lock, dict) and set(lock) == {"min", "max"}
            and all(isinstance(lock[k], int) and not isinstance(lock[k], bool) and lock[k] > 0 for k in lock)
            and lock["min"] <= lock["max"])


class LockedClocksMemory:
    """NVML has no getter for locked clocks: remember what was set, per GPU UUID, in a file under /run, which a
    reboot clears along with the locks themselves."""

    def __init__(self, state_dir):
        self.state_dir = state_dir
        self.path = os.path.join(state_dir, LOCKED_CLOCKS_FILE)

    def check(self):
        """Refuse a state directory that cannot hold the memory, before any clock is locked."""
        where = self.state_dir
        if not where or "\x00" in where or not os.path.isabs(where):
            raise ConfigError("state_dir: give an absolute directory path, got %r; nothing was changed" % (where,))
        if os.path.lexists(where) and not os.path.isdir(where):
            raise ConfigError("state_dir: %s exists and is not a directory; nothing was changed" % where)
        try:
            mode = os.lstat(self.path).st_mode
        except FileNotFoundError:
            return
        except OSError as exc:
            raise ConfigError("state_dir: cannot read %s: %s; nothing was changed"
                              % (self.path, exc.strerror or exc)) from None
        if not stat.S_ISREG(mode):
            raise ConfigError("state_dir: %s is %s, not a regular file; nothing was changed"
                              % (self.path, "a symbolic link" if stat.S_ISLNK(mode) else "not a plain file"))

    def load(self):
        """What was locked, by GPU UUID; None when the file is there but is not what this module writes (then
        nothing is known, and every GPU's clocks count as possibly locked)."""
        try:
            # Never through a link, never blocked by a fifo put in its place after check().
            descriptor = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise ConfigError("state_dir: cannot read %s: %s; nothing was changed"
                              % (self.path, exc.strerror or exc)) from None
        with os.fdopen(descriptor, encoding="utf-8") as handle:
            if not stat.S_ISREG(os.fstat(descriptor).st_mode):
                raise ConfigError("state_dir: %s is not a regular file; nothing was changed" % self.path)
            try:
                data = json.loads(handle.read(MAX_MEMORY_BYTES + 1))
            except (OSError, ValueError, RecursionError):
                return None
        if not isinstance(data, dict):
            return None
        # A value this module does not write (null, a number, a range it would refuse) is not known: unknown.
        return {str(uuid).lower(): lock if lock == UNKNOWN_LOCK or valid_lock(lock) else UNKNOWN_LOCK
                for uuid, lock in data.items()}

    def save(self, data):
        directory = os.path.dirname(self.path)
        if not os.path.isdir(directory):
            os.makedirs(directory, 0o755)
        # A new file of a name no one could have prepared (O_EXCL), renamed over the memory: rename replaces a link
        # put in its place, it never writes through one.
        descriptor, tmp = tempfile.mkstemp(prefix=LOCKED_CLOCKS_FILE + ".", dir=directory)
        try:
            with os.fdopen(descriptor, "w") as handle:
                os.fchmod(descriptor, 0o644)
                json.dump(data, handle, sort_keys=True)
            os.rename(tmp, self.path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise


class GpuConfigurator:
    """Reads, validates, plans and applies settings for the targeted GPUs of one NVML session."""

    def __init__(self, session, memory):
        self.nvml = session
        self.memory = memory
        memory.check()
        self.locked = memory.load()
        self.memory_lost = self.locked is None
        if self.memory_lost:
            self.locked = {}

    def inventory(self):
        return inventory(self.nvml)

    def read(self, gpu):
        """Current settings of one GPU; a setting NVML does not support here is None, any other NVML error raises."""
        q, h = self.nvml.call, gpu["handle"]
        persistence = q("nvmlDeviceGetPersistenceMode", h)
        limits = q("nvmlDeviceGetPowerManagementLimitConstraints", h)
        limit = q("nvmlDeviceGetPowerManagementLimit", h)
        ecc = q("nvmlDeviceGetEccMode", h)
        mig = q("nvmlDeviceGetMigMode", h)
        mem_clocks = q("nvmlDeviceGetSupportedMemoryClocks", h)
        graphics = q("nvmlDeviceGetSupportedGraphicsClocks", h, max(mem_clocks)) if mem_clocks else None
        return {
            "persistence_mode": None if persistence is None else bool(persistence),
            "power_limit_w": None if limit is None else limit / 1000.0,
            "power_limit_min_w": limits[0] / 1000.0 if limits else None,
            "power_limit_max_w": limits[1] / 1000.0 if limits else None,
            "compute_mode": COMPUTE_MODE_NAMES.get(q("nvmlDeviceGetComputeMode", h)),
            "ecc_mode": bool(ecc[0]) if ecc else None,
            "ecc_mode_pending": bool(ecc[1]) if ecc else None,
            "mig_mode": bool(mig[0]) if mig else None,
            "mig_mode_pending": bool(mig[1]) if mig else None,
            "locked_clocks_mhz": self.locked.get(lock_key(gpu)),
            "supported_graphics_clocks_mhz": sorted(graphics) if graphics else None,
            "max_graphics_clock_mhz": q("nvmlDeviceGetMaxClockInfo", h, NVML_CLOCK_GRAPHICS),
        }

    @staticmethod
    def validate(desired, current, label):
        """Every reason why ``desired`` cannot be applied to this GPU, as messages naming the GPU and setting."""
        errors = []
        for setting in ("persistence_mode", "compute_mode", "ecc_mode", "mig_mode"):
            if desired.get(setting) is not None and current[setting] is None:
                errors.append("%s: %s is not supported on this GPU" % (label, setting))
        power = desired.get("power_limit_w")
        if power is not None:
            low, high = current["power_limit_min_w"], current["power_limit_max_w"]
            if low is None or high is None:
                errors.append("%s: power_limit_w is not supported on this GPU (no power management)" % label)
            elif not low <= power <= high:
                errors.append("%s: power_limit_w %s is outside this GPU's range %g-%g W" % (label, power, low, high))
        clocks = desired.get("locked_clocks_mhz")
        if isinstance(clocks, dict):
            supported = current["supported_graphics_clocks_mhz"]
            ceiling = current["max_graphics_clock_mhz"]
            if supported:
                for end in ("min", "max"):
                    if clocks[end] not in supported:
                        nearest = sorted(supported, key=lambda c, v=clocks[end]: abs(c - v))[:2]
                        errors.append("%s: locked_clocks_mhz.%s %d MHz is not a supported graphics clock; nearest: %s"
                                      % (label, end, clocks[end], ", ".join(str(c) for c in sorted(nearest))))
            elif ceiling:
                if clocks["max"] > ceiling:
                    errors.append("%s: locked_clocks_mhz.max %d MHz is above this GPU's maximum of %d MHz"
                                  % (label, clocks["max"], ceiling))
            else:
                errors.append("%s: locked_clocks_mhz is not supported on this GPU" % label)
        return errors

    @staticmethod
    def view(current, changes=None):
        """The user-facing state of one GPU, with ``changes`` applied (pending settings land in *_pending)."""
        state = {k: current[k] for k in ("persistence_mode", "power_limit_w", "compute_mode", "ecc_mode",
                                         "ecc_mode_pending", "mig_mode", "mig_mode_pending", "locked_clocks_mhz")}
        for setting, (_before, after) in (changes or {}).items():
            state[setting + "_pending" if setting in PENDING_SETTINGS else setting] = after
        return state

    @staticmethod
    def reset_pending(state):
        """Settings stored by the driver that take effect only after a GPU reset or reboot."""
        return [s for s in PENDING_SETTINGS if state[s] is not None and state[s + "_pending"] != state[s]]

    @staticmethod
    def plan(desired, current):
        """``{setting: (before, after)}`` for what must change; pending settings compare with the pending value."""
        changes = {}
        for setting in ("persistence_mode", "compute_mode"):
            if desired.get(setting) is not None and desired[setting] != current[setting]:
                changes[setting] = (current[setting], desired[setting])
        power = desired.get("power_limit_w")
        if power is not None and (current["power_limit_w"] is None or abs(power - current["power_limit_w"]) >= 0.001):
            changes["power_limit_w"] = (current["power_limit_w"], desired["power_limit_w"])
        for setting in PENDING_SETTINGS:
            if desired.get(setting) is not None and desired[setting] != current[setting + "_pending"]:
                changes[setting] = (current[setting + "_pending"], desired[setting])
        clocks = desired.get("locked_clocks_mhz")
        if clocks == "reset" and current["locked_clocks_mhz"] is not None:
            changes["locked_clocks_mhz"] = (current["locked_clocks_mhz"], None)
        elif isinstance(clocks, dict) and clocks != current["locked_clocks_mhz"]:
            changes["locked_clocks_mhz"] = (current["locked_clocks_mhz"], clocks)
        return changes

    def apply(self, gpu, changes, where, done):
        """Apply ``changes`` to one GPU in SETTINGS order, appending each setting to ``done`` once NVML took it.

        A locked clock range is remembered before it is set (NVML cannot read it back, so a lock that was set but
        not remembered could never be reset by this module) and forgotten again when NVML refuses it.
        """
        h = gpu["handle"]
        steps = {
            "persistence_mode": lambda v: self.nvml.change("nvmlDeviceSetPersistenceMode", h, int(v)),
            "power_limit_w": lambda v: self.nvml.change("nvmlDeviceSetPowerManagementLimit", h, round(v * 1000)),
            "compute_mode": lambda v: self.nvml.change("nvmlDeviceSetComputeMode", h, COMPUTE_MODES[v]),
            "ecc_mode": lambda v: self.nvml.change("nvmlDeviceSetEccMode", h, int(v)),
            "mig_mode": lambda v: self.nvml.change("nvmlDeviceSetMigMode", h, int(v)),
            "locked_clocks_mhz": lambda v: (self.nvml.change("nvmlDeviceResetGpuLockedClocks", h) if v is None else
                                            self.nvml.change("nvmlDeviceSetGpuLockedClocks", h, v["min"], v["max"])),
        }
        for setting in SETTINGS:
            if setting not in changes:
                continue
            after = changes[setting][1]
            remembered = dict(self.locked)
            if setting == "locked_clocks_mhz" and after is not None:
                self.locked[lock_key(gpu)] = after
                self.save_or_fail(where, remembered)
            try:
                steps[setting](after)
            except NvmlCallError as exc:
                if setting == "locked_clocks_mhz" and after is not None:
                    self.locked = remembered
                    self.save_quietly()
                hint = " (run as root: become: true)" if exc.code == NVML_ERROR_NO_PERMISSION else ""
                raise ConfigError("%s: setting %s to %s failed: %s%s" % (where, setting, after, exc.message, hint)) \
                    from None
            done.append(setting)
            if setting == "locked_clocks_mhz" and after is None:
                self.locked.pop(lock_key(gpu), None)
                self.save_or_fail(where, None)

    def save_or_fail(self, where, restore):
        try:
            self.memory.save(self.locked)
        except OSError as exc:
            if restore is not None:
                self.locked = restore
            raise ConfigError("%s: cannot remember the locked clocks in %s: %s"
                              % (where, self.memory.path, exc.strerror or exc)) from None

    def save_quietly(self):
        try:
            self.memory.save(self.locked)
        except OSError:
            pass


def configure(configurator, rules, check_mode, skip_lost, unreadable_clocks=False):
    """Validate every targeted GPU, then apply what differs: the one policy of gpu_config and the boot script.

    Returns ``(results, lost)``: a result per configured GPU (index, uuid, before, after, changed, pending) and the
    indexes of lost GPUs left out. A lost target fails before any change unless ``skip_lost``. With
    ``unreadable_clocks`` a check leaves locked clocks out of the comparison (after a reboot nothing remembers them).
    Raises :class:`ConfigError` (nothing changed) or :class:`ApplyFailed` (what changed before the failure).
    """
    inventory = configurator.inventory()
    if configurator.memory_lost:
        # Nothing is known of any GPU's lock: each stays unknown (in the memory written next) until it is set or reset.
        for gpu in inventory:
            if gpu["uuid"]:
                configurator.locked.setdefault(lock_key(gpu), UNKNOWN_LOCK)
    desired = desired_per_gpu(rules, inventory)
    targets = [inventory[i] for i in sorted(desired)]
    lost = [gpu["index"] for gpu in targets if gpu["lost"]]
    if lost and not skip_lost:
        raise ConfigError("GPU %s is lost; nothing was changed (skip_lost: true handles the others)"
                          % ", ".join(str(i) for i in lost))
    targets = [gpu for gpu in targets if not gpu["lost"]]

    def check_one(gpu):
        current = configurator.read(gpu)
        errors = configurator.validate(desired[gpu["index"]], current, label(gpu))
        if desired[gpu["index"]].get("locked_clocks_mhz") is not None and not gpu["uuid"]:
            errors.append("%s: locked_clocks_mhz needs the GPU's UUID, under which the lock is remembered, and NVML "
                          "gives none" % label(gpu))
        changes = configurator.plan(desired[gpu["index"]], current)
        if unreadable_clocks and check_mode:
            changes.pop("locked_clocks_mhz", None)
        return {"current": current, "changes": changes}, errors

    def apply_one(gpu, plan, done):
        if plan["changes"]:
            configurator.apply(gpu, plan["changes"], label(gpu), done)

    def report(gpu, plan, done):
        made = plan["changes"] if done is None else {s: plan["changes"][s] for s in done}
        after = configurator.view(plan["current"], made)
        return {"index": gpu["index"], "uuid": gpu["uuid"], "before": configurator.view(plan["current"]),
                "after": after, "changed": [s for s in SETTINGS if s in made],
                "pending": configurator.reset_pending(after)}

    plans = validate_every_gpu(targets, check_one)
    return apply_every_gpu(targets, plans, apply_one, report, check_mode), lost
