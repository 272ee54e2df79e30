# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the accelops.gpu collection: the one way GPUs are changed (gpu_config, gpu_mig, the boot script):
read and validate every GPU, change nothing when any is wrong, then apply GPU by GPU and say exactly what was
changed when a change fails part-way."""

from __future__ import annotations

from ansible_collections.accelops.gpu.plugins.module_utils._nvml import GpuLost, NvmlCallError

# What can go wrong on the node while GPUs are read or changed, besides a refused request.
FAULTS = (GpuLost, NvmlCallError, OSError)


class ConfigError(Exception):
    """Invalid input or a request this node cannot satisfy; nothing has been changed."""


class ApplyFailed(ConfigError):
    """A change failed part-way. ``results`` are the per-GPU results up to and including the GPU that failed, each
    saying what was changed on it; ``changed`` whether anything was."""

    def __init__(self, message, results, changed):
        super().__init__(message)
        self.results = results
        self.changed = changed


def label(gpu):
    return "GPU %d" % gpu["index"]


def describe_fault(where, doing, exc):
    """One line for a fault while ``doing`` something on ``where`` (a GPU label)."""
    if isinstance(exc, GpuLost):
        return "%s: the GPU was lost while %s (%s)" % (where, doing, exc)
    if isinstance(exc, NvmlCallError):
        return "%s: %s failed: %s" % (where, doing, exc)
    if isinstance(exc, OSError):
        return "%s: %s failed: %s" % (where, doing, exc.strerror or exc)
    return "%s: %s" % (where, exc)


def validate_every_gpu(targets, check_one):
    """``{index: plan}`` from ``check_one(gpu) -> (plan, [problems])`` for every target.

    A fault while reading a GPU is a problem naming that GPU. Any problem raises :class:`ConfigError` naming all of
    them; nothing has been changed then.
    """
    plans, problems = {}, []
    for gpu in targets:
        try:
            plan, found = check_one(gpu)
        except FAULTS as exc:
            plan, found = None, [describe_fault(label(gpu), "reading its current state", exc)]
        plans[gpu["index"]] = plan
        problems.extend(found)
    if problems:
        raise ConfigError("nothing was changed: " + "; ".join(problems))
    return plans


def apply_every_gpu(targets, plans, apply_one, report, check_mode):
    """Apply the plans GPU by GPU; return ``[report(gpu, plan, done), ...]``.

    ``apply_one(gpu, plan, done)`` changes one GPU and appends to ``done`` the name of each change once it is made.
    In check mode nothing is applied and ``done`` is None (every planned change). ``report`` returns the GPU's
    result entry with a ``changed`` list. When a change fails, :class:`ApplyFailed` says which GPU failed doing
    what, what had been changed on it and on the GPUs before it, and which GPUs were left as they were.
    """
    results = []
    for position, gpu in enumerate(targets):
        plan, done = plans[gpu["index"]], []
        try:
            if check_mode:
                done = None
            else:
                apply_one(gpu, plan, done)
        except (ConfigError, *FAULTS) as exc:
            results.append(report(gpu, plan, done))
            raise ApplyFailed(failure_message(exc, gpu, results, targets[position + 1:]), results,
                              any(r["changed"] for r in results)) from None
        results.append(report(gpu, plan, done))
    return results


def failure_message(exc, gpu, results, untouched):
    if isinstance(exc, ConfigError):
        first = str(exc)
    else:
        first = describe_fault(label(gpu), "applying its changes", exc)
    changed = ["GPU %d (%s)" % (r["index"], ", ".join(r["changed"])) for r in results if r["changed"]]
    left = [r["index"] for r in results if not r["changed"]] + [g["index"] for g in untouched]
    return "%s. Changed before the failure: %s. Not changed: %s." % (
        first, "; ".join(changed) or "nothing",
        ", ".join("GPU %d" % i for i in sorted(left)) or "no other GPU")
