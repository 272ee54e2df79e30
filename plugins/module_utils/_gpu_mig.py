# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: MIG layouts (GPU instances with one compute instance each), planned
against NVML's profile table and placements, validated before any instance is created or destroyed."""

from __future__ import annotations

import ctypes
import re
from collections import Counter

from ansible_collections.accelops.gpu.plugins.module_utils._gpu_apply import (
    FAULTS,
    ConfigError,
    apply_every_gpu,
    label,
    validate_every_gpu,
)
from ansible_collections.accelops.gpu.plugins.module_utils._nvml import NVML_ERROR_NOT_FOUND, NvmlCallError

# NVML_GPU_INSTANCE_PROFILE_* and NVML_COMPUTE_INSTANCE_PROFILE_* indexes to ask NVML about; the ids NVML answers
# with are what creation takes.
GPU_INSTANCE_PROFILE_INDEXES = range(0x12)
COMPUTE_INSTANCE_PROFILE_INDEXES = range(0x9)
COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED = 0
MAX_PLACEMENTS = 16
PROFILE_NAME = re.compile(r"^(?:MIG\s+)?(\d+g\.\d+gb(?:\+\w+)?(?:-\w+)?)$")
LAYOUT_ENTRY = re.compile(r"\A[0-9]{1,2}g\.[0-9]{1,4}gb(?:\+[a-z]{1,8})?(?:-[a-z0-9]{1,8})?\Z")


def check_layout(layout, field="layout"):
    """Refuse a layout entry that is not a GPU-instance profile name (``1g.10gb``, ``1g.10gb+me``), before NVML."""
    for n, name in enumerate(layout):
        if not isinstance(name, str) or not LAYOUT_ENTRY.match(name):
            raise ConfigError("%s[%d]: %r is not a MIG GPU-instance profile name such as 1g.10gb, 3g.40gb or 1g.10gb+me"
                              % (field, n, name))


def profile_name(raw):
    """NVML's ``MIG 1g.10gb`` as ``1g.10gb``; None for a name that is not a GPU-instance profile."""
    text = raw.decode() if isinstance(raw, bytes) else (raw or "")
    match = PROFILE_NAME.match(text.strip())
    return match.group(1) if match else None


def fit(wanted, placements, occupied=()):
    """Place the profiles in ``wanted`` on the memory slices not ``occupied``.

    ``placements`` maps a profile name to its possible ``(start, size)`` placements. Returns ``[(name, start,
    size), ...]``, largest first (the order to create them in), each at its lowest free placement, or None when the
    profiles cannot all fit.
    """
    order = sorted(wanted, key=lambda name: (-placements[name][0][1], name))

    def place(position, used):
        if position == len(order):
            return []
        name = order[position]
        for start, size in sorted(placements[name]):
            slots = set(range(start, start + size))
            if slots & used:
                continue
            rest = place(position + 1, used | slots)
            if rest is not None:
                return [(name, start, size), *rest]
        return None

    return place(0, set(occupied))


def plan_layout(desired, current, placements):
    """What to keep, destroy and create so that the GPU holds exactly the ``desired`` profiles.

    ``current`` lists instances as dicts with ``profile``, ``start``, ``size``, ``whole`` (one compute instance
    spanning it) and ``processes``. Matching instances are kept where the rest still fits around them (busy ones
    first); otherwise the GPU is laid out anew.
    """
    remaining = Counter(desired)
    keep, destroy = [], []
    for instance in sorted(current, key=lambda i: (not i["processes"], i["start"])):
        if instance["whole"] and remaining[instance["profile"]] > 0:
            remaining[instance["profile"]] -= 1
            keep.append(instance)
        else:
            destroy.append(instance)
    occupied = [s for i in keep for s in range(i["start"], i["start"] + i["size"])]
    create = fit(list(remaining.elements()), placements, occupied)
    if create is None:
        keep, destroy, create = [], list(current), fit(desired, placements)
    return {"keep": keep, "destroy": destroy, "create": create}


class MigManager:
    """Reads and changes the MIG instances of GPUs through one NVML session."""

    def __init__(self, session):
        self.nvml = session
        self.lib = session.lib

    def profiles(self, handle):
        """{name: {"id", "slices", "count", "memory_mib", "placements"}} of the GPU-instance profiles offered."""
        table = {}
        for index in GPU_INSTANCE_PROFILE_INDEXES:
            info = self.nvml.call("nvmlDeviceGetGpuInstanceProfileInfo", handle, index)
            name = profile_name(info.name) if info is not None else None
            if name is None or name in table:
                continue
            array = (self.lib.c_nvmlGpuInstancePlacement_t * MAX_PLACEMENTS)()
            count = ctypes.c_uint(MAX_PLACEMENTS)
            self.nvml.change("nvmlDeviceGetGpuInstancePossiblePlacements", handle, info.id, array, ctypes.byref(count))
            table[name] = {"id": info.id, "slices": info.sliceCount, "count": info.instanceCount,
                           "memory_mib": info.memorySizeMB,
                           "placements": [(array[n].start, array[n].size) for n in range(count.value)]}
        return table

    def instances(self, handle, table, processes):
        """The GPU instances on the GPU, each with its compute instances and the processes running on it."""
        found = []
        for name, profile in table.items():
            refs = (self.lib.c_nvmlGpuInstance_t * max(profile["count"], 1))()
            count = ctypes.c_uint(0)
            self.nvml.change("nvmlDeviceGetGpuInstances", handle, profile["id"], refs, ctypes.byref(count))
            for n in range(count.value):
                info = self.nvml.change("nvmlGpuInstanceGetInfo", refs[n])
                cis = self.compute_instances(refs[n])
                found.append({
                    "handle": refs[n], "id": info.id, "profile": name, "start": info.placement.start,
                    "size": info.placement.size, "compute_instances": cis,
                    "whole": len(cis) == 1 and cis[0]["slices"] == profile["slices"],
                    "processes": [p for p in processes if p["gpu_instance_id"] == info.id],
                })
        return sorted(found, key=lambda i: i["start"])

    def compute_instance_profiles(self, gpu_instance):
        profiles = []
        for index in COMPUTE_INSTANCE_PROFILE_INDEXES:
            info = self.nvml.call("nvmlGpuInstanceGetComputeInstanceProfileInfo", gpu_instance, index,
                                  COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
            if info is not None and all(p["id"] != info.id for p in profiles):
                profiles.append({"id": info.id, "slices": info.sliceCount, "count": info.instanceCount})
        return profiles

    def compute_instances(self, gpu_instance):
        found = []
        for profile in self.compute_instance_profiles(gpu_instance):
            refs = (self.lib.c_nvmlComputeInstance_t * max(profile["count"], 1))()
            count = ctypes.c_uint(0)
            self.nvml.change("nvmlGpuInstanceGetComputeInstances", gpu_instance, profile["id"], refs,
                             ctypes.byref(count))
            found.extend({"handle": refs[n], "slices": profile["slices"]} for n in range(count.value))
        return found

    def processes(self, handle):
        """The compute processes of a GPU with their GPU instance; None when NVML cannot list them (then no instance
        can be known to be idle). Read with call(): a list NVML fails to give stops a plan, never reads as empty."""
        procs = self.nvml.call("nvmlDeviceGetComputeRunningProcesses_v3", handle)
        if procs is None:  # a driver before R510
            procs = self.nvml.call("nvmlDeviceGetComputeRunningProcesses_v2", handle)
        if procs is None:
            return None
        return [{"pid": p.pid, "gpu_instance_id": p.gpuInstanceId} for p in procs]

    def destroy(self, instance, label, mark=None):
        """Destroy an instance's compute instances, then the instance. ``mark(False)`` follows each compute instance
        destroyed (the instance is no longer whole), ``mark(True)`` the instance itself."""
        mark = mark or (lambda complete: None)
        try:
            for ci in instance["compute_instances"]:
                self.nvml.change("nvmlComputeInstanceDestroy", ci["handle"])
                mark(False)
            self.nvml.change("nvmlGpuInstanceDestroy", instance["handle"])
            mark(True)
        except NvmlCallError as exc:
            raise ConfigError("%s: destroying the %s instance (GPU instance %d) failed: %s"
                              % (label, instance["profile"], instance["id"], exc.message)) from None

    def create(self, handle, profile, spot, label, mark=None):
        """Create the GPU instance ``spot`` = (profile name, start, size) with one compute instance spanning it.
        ``mark(False)`` follows the GPU instance (it exists, not yet usable), ``mark(True)`` its compute instance."""
        mark = mark or (lambda complete: None)
        name, start, size = spot
        placement = self.lib.c_nvmlGpuInstancePlacement_t()
        placement.start, placement.size = start, size
        try:
            gpu_instance = self.nvml.change("nvmlDeviceCreateGpuInstanceWithPlacement", handle, profile["id"],
                                            ctypes.byref(placement))
            mark(False)
            whole = [p for p in self.compute_instance_profiles(gpu_instance) if p["slices"] == profile["slices"]]
            if not whole:
                raise ConfigError("%s: the %s instance offers no compute instance spanning it" % (label, name))
            self.nvml.change("nvmlGpuInstanceCreateComputeInstance", gpu_instance, whole[0]["id"])
            mark(True)
        except NvmlCallError as exc:
            raise ConfigError("%s: creating a %s instance at memory slice %d failed: %s"
                              % (label, name, start, exc.message)) from None

    def devices(self, handle):
        """The MIG devices of a GPU as schedulers and containers see them; ``index`` is the slot NVML hands the
        device out at (nvmlDeviceGetMigDeviceHandleByIndex), the ``j`` of nvidia-ctk's CDI name ``i:j``."""
        found = []
        for slot in range(self.nvml.call("nvmlDeviceGetMaxMigDeviceCount", handle) or 0):
            try:
                mig = self.nvml.call("nvmlDeviceGetMigDeviceHandleByIndex", handle, slot)
            except NvmlCallError as exc:
                if exc.code == NVML_ERROR_NOT_FOUND:  # an empty slot
                    continue
                raise
            if mig is None:
                continue
            name = self.nvml.query("nvmlDeviceGetName", mig)
            name = name.decode() if isinstance(name, bytes) else name
            uuid = self.nvml.query("nvmlDeviceGetUUID", mig)
            found.append({
                "index": slot,
                "uuid": uuid.decode() if isinstance(uuid, bytes) else uuid,
                "name": name,
                "profile": (name or "").rsplit("MIG ", 1)[-1] or None,
                "gpu_instance_id": self.nvml.query("nvmlDeviceGetGpuInstanceId", mig),
                "compute_instance_id": self.nvml.query("nvmlDeviceGetComputeInstanceId", mig),
            })
        return found


def check_gpu(manager, gpu, layout, force):
    """Return (plan, problems) for one GPU; the plan is None when a problem prevents planning."""
    where, handle = label(gpu), gpu["handle"]
    modes = manager.nvml.call("nvmlDeviceGetMigMode", handle)
    if modes is None:
        return None, ["%s: MIG is not supported on this GPU" % where]
    if not modes[0]:
        state = "enabled but waits for a GPU reset" if modes[1] else "off"
        return None, ["%s: MIG mode is %s; enable it with accelops.gpu.gpu_config (mig_mode: true) and reset the GPU"
                      % (where, state)]
    table = manager.profiles(handle)
    unknown = sorted(set(layout) - set(table))
    if unknown:
        return None, ["%s: profile %s is not offered; this GPU offers %s"
                      % (where, ", ".join(unknown), ", ".join(sorted(table, key=lambda n: (table[n]["slices"], n))))]
    too_many = ["%d x %s (at most %d)" % (n, name, table[name]["count"])
                for name, n in sorted(Counter(layout).items()) if n > table[name]["count"]]
    placements = {name: table[name]["placements"] for name in table}
    if too_many or fit(layout, placements) is None:
        return None, ["%s: layout %s does not fit this GPU's memory slices and placements%s"
                      % (where, " + ".join(layout), (": " + ", ".join(too_many)) if too_many else "")]
    processes = manager.processes(handle)
    current = manager.instances(handle, table, processes or [])
    # Every MIG device belongs to a GPU instance: one that no profile accounts for means the profile table NVML gave
    # is not the whole truth, and a plan made from it would be wrong.
    unlisted = sorted({d["gpu_instance_id"] for d in manager.devices(handle) if d["gpu_instance_id"] is not None}
                      - {i["id"] for i in current})
    if unlisted:
        return None, ["%s: GPU instance %s has MIG devices but no profile NVML describes; the layout cannot be planned"
                      % (where, ", ".join(str(i) for i in unlisted))]
    plan = plan_layout(layout, current, placements)
    if processes is None and plan["destroy"] and not force:
        return plan, ["%s: NVML cannot list the processes on this GPU, so %s would be destroyed without knowing that "
                      "they are idle; set force: true to destroy them anyway"
                      % (where, ", ".join(spot_name(i["profile"], i["start"]) for i in plan["destroy"]))]
    busy = [i for i in plan["destroy"] if i["processes"]]
    if busy and not force:
        return plan, ["%s: the %s instance (GPU instance %d) would be destroyed but runs processes %s; set force: true "
                      "to destroy it anyway" % (where, i["profile"], i["id"],
                                                ", ".join(str(p["pid"]) for p in i["processes"])) for i in busy]
    return dict(plan, current=current, table=table, busy=busy), []


def spot_name(name, start):
    return "%s@%d" % (name, start)


def lay_out(manager, targets, layout, force, check_mode):
    """Validate every target GPU, then make each hold exactly ``layout``: the one policy of gpu_mig and the boot
    script. Busy instances are destroyed first, so that NVML's refusal (it refuses while a process runs) comes before
    anything else is destroyed. Returns a result per GPU (index, uuid, before, after, destroyed, created, changed);
    raises :class:`ConfigError` (nothing changed) or ``ApplyFailed``, whose results say exactly which instances were
    destroyed and created before the failure."""

    def recorder(done, what, spot):
        """``mark(complete)`` for one instance: "partly <what> <spot>" after its first NVML step, "<what> <spot>"
        once it is done, so that a failure between the two steps is reported as it left the instance."""
        def mark(complete):
            partly, entry = "partly %s %s" % (what, spot), "%s %s" % (what, spot)
            if partly in done:
                done[done.index(partly)] = entry if complete else partly
            elif entry not in done:
                done.append(entry if complete else partly)
        return mark

    def apply_one(gpu, plan, done):
        for instance in sorted(plan["destroy"], key=lambda i: not i["processes"]):
            spot = spot_name(instance["profile"], instance["start"])
            manager.destroy(instance, label(gpu), recorder(done, "destroyed", spot))
        for spot in plan["create"]:
            mark = recorder(done, "created", spot_name(spot[0], spot[1]))
            manager.create(gpu["handle"], plan["table"][spot[0]], spot, label(gpu), mark)

    def report(gpu, plan, done):
        planned = (["destroyed " + spot_name(i["profile"], i["start"]) for i in plan["destroy"]]
                   + ["created " + spot_name(name, start) for name, start, _size in plan["create"]])
        made = planned if done is None else list(done)
        destroyed = [m.split(" ", 1)[1] for m in made if m.startswith("destroyed ")]
        created = [m.split(" ", 1)[1] for m in made if m.startswith("created ")]
        # A partly destroyed instance is still there, without its compute instance; a partly created one is there,
        # without one yet: both count as instances (as in before), neither as whole.
        partly_created = [m.split(" ", 2)[2] for m in made if m.startswith("partly created ")]
        before = sorted(i["profile"] for i in plan["current"])
        after = list(before)
        for spot in destroyed:
            after.remove(spot.split("@")[0])
        after = sorted(after + [spot.split("@")[0] for spot in created + partly_created])
        return {"index": gpu["index"], "uuid": gpu["uuid"], "before": before, "after": after,
                "destroyed": destroyed, "created": created, "changed": made}

    plans = validate_every_gpu(targets, lambda gpu: check_gpu(manager, gpu, layout, force))
    return apply_every_gpu(targets, plans, apply_one, report, check_mode), plans


def devices_or_none(manager, gpu):
    """The MIG devices of a GPU after a change, or None when NVML cannot list them now."""
    try:
        return manager.devices(gpu["handle"])
    except FAULTS:
        return None
