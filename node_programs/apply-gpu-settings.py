# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Re-apply at boot what the NVIDIA driver forgets when it loads: persistence mode, power limit, compute mode,
locked clocks, and the MIG layout (GPU instances do not survive a reboot or a driver reload).

Installed by the accelops.gpu.gpu_settings role and run by accelops-gpu-settings.service with the Python of the
accelops.gpu.nvml_python virtual environment (which has pynvml). It uses the same planning code as the collection's
gpu_config and gpu_mig modules, installed beside it by the role.

Usage: apply-gpu-settings [--check] [--lib DIR] CONFIG.json

CONFIG: {"settings": {<gpu_config settings for every GPU>}, "per_gpu": [{"gpus": [...], <settings>}, ...],
"mig_layouts": [{"gpus": [...], "layout": ["3g.40gb", ...]}, ...]}. With --check nothing changes and the exit code
is 3 when something differs. Locked clocks cannot be read back through NVML; they are always set again here.
"""

import json
import os
import sys

EXIT_FAILED, EXIT_USAGE, EXIT_DIFFERS = 1, 2, 3
DEFAULT_LIB = "/usr/local/lib/accelops-gpu"


def arguments(argv):
    check, lib, paths = False, DEFAULT_LIB, []
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--check":
            check = True
        elif arg == "--lib" and args:
            lib = args.pop(0)
        else:
            paths.append(arg)
    return check, lib, paths


def check_config(config):
    """Everything in the configuration that needs no GPU, before any GPU is touched: shapes, types, selectors,
    layouts. Raises ConfigError naming the field."""
    from ansible_collections.accelops.gpu.plugins.module_utils import _gpu_config as gc
    from ansible_collections.accelops.gpu.plugins.module_utils import _gpu_mig as gm

    if not isinstance(config, dict):
        raise gc.ConfigError("the configuration must be a JSON object with settings, per_gpu and mig_layouts")
    unknown = sorted(set(config) - {"_comment", "settings", "per_gpu", "mig_layouts"})
    if unknown:
        raise gc.ConfigError("%s: unknown key; known: settings, per_gpu, mig_layouts" % ", ".join(unknown))
    settings = {} if config.get("settings") is None else config["settings"]
    gc.check_setting_types(settings, "settings.")
    gc.normalise_settings(settings, "settings.")
    for name in ("per_gpu", "mig_layouts"):
        if not isinstance([] if config.get(name) is None else config[name], list):
            raise gc.ConfigError("%s: must be a list, got %s" % (name, type(config[name]).__name__))
    for n, rule in enumerate(config.get("per_gpu") or []):
        prefix = "per_gpu[%d]." % n
        gc.check_setting_types(rule, prefix, extra=("gpus",))
        gc.check_rules([(rule.get("gpus"), rule, prefix)])
    for n, layout in enumerate(config.get("mig_layouts") or []):
        prefix = "mig_layouts[%d]" % n
        if not isinstance(layout, dict) or sorted(set(layout) - {"gpus"}) != ["layout"]:
            raise gc.ConfigError("%s: must be a mapping of gpus (optional) and layout" % prefix)
        if not isinstance(layout["layout"], list):
            raise gc.ConfigError("%s.layout: must be a list of MIG profiles" % prefix)
        try:
            gc.check_selectors(layout.get("gpus", ["all"]))
        except gc.ConfigError as exc:
            raise gc.ConfigError("%s.%s" % (prefix, exc)) from None
        gm.check_layout(layout["layout"], prefix + ".layout")


def mig_targets(session, config):
    """The GPUs each MIG layout names, resolved and their layouts checked against the GPUs (MIG mode, profiles, fit,
    busy instances) before any pass changes anything; a GPU named by two layouts is refused."""
    from ansible_collections.accelops.gpu.plugins.module_utils import _gpu_config as gc
    from ansible_collections.accelops.gpu.plugins.module_utils import _gpu_mig as gm

    layouts = config.get("mig_layouts") or []
    if not layouts:
        return []
    gpus = gc.inventory(session)
    targets, seen = [], {}
    for n, layout in enumerate(layouts):
        try:
            indexes = gc.resolve_targets(layout.get("gpus", ["all"]), gpus)
        except gc.ConfigError as exc:
            raise gc.ConfigError("mig_layouts[%d].%s; nothing was changed" % (n, exc)) from None
        for index in indexes:
            if index in seen:
                raise gc.ConfigError("mig_layouts[%d] and mig_layouts[%d] both name GPU %d; nothing was changed"
                                     % (seen[index], n, index))
            seen[index] = n
        targets.append([gpus[i] for i in indexes])
    manager = gm.MigManager(session)
    for layout, chosen in zip(layouts, targets):
        # In check mode: it plans and refuses, and changes nothing.
        gm.lay_out(manager, [g for g in chosen if not g["lost"]], layout["layout"], False, True)
    return targets


def report(results, check, say, what):
    """One line per GPU, as before: "GPU 0: set power_limit_w", "GPU 1: MIG layout as configured"."""
    for result in results:
        if not result["changed"]:
            state = "as configured"
        elif what == "settings":
            state = "%s %s" % ("differs" if check else "set", ", ".join(sorted(result["changed"])))
        else:
            state = "differs" if check else "laid out"
        say("GPU %d: %s%s" % (result["index"], "MIG layout " if what == "mig" else "", state))


def settings_pass(session, config, check, state_dir, say):
    """The gpu_config policy over every GPU: validate all, then apply; lost GPUs are left out and reported."""
    from ansible_collections.accelops.gpu.plugins.module_utils import _gpu_config as gc

    rules = [(["all"], config.get("settings") or {}, "settings.")] + [
        (rule.get("gpus", ["all"]), rule, "per_gpu[%d]." % n) for n, rule in enumerate(config.get("per_gpu") or [])]
    if not any(gc.normalise_settings(settings, prefix) for _selectors, settings, prefix in rules):
        return False, False
    memory = gc.LockedClocksMemory(state_dir)
    memory.check()
    if not check:
        memory.save({})  # the driver has just loaded: nothing is locked, whatever an earlier boot remembered
    configurator = gc.GpuConfigurator(session, memory)
    try:
        results, lost = gc.configure(configurator, rules, check, skip_lost=True, unreadable_clocks=True)
    except gc.ApplyFailed as exc:
        report(exc.results[:-1], check, say, "settings")
        raise
    for index in lost:
        say("GPU %d: lost, left out" % index)
    report(results, check, say, "settings")
    return any(r["changed"] for r in results), bool(lost)


def mig_pass(session, config, targets_per_layout, check, say):
    """The gpu_mig policy for each layout: validate every GPU it names, then lay them out."""
    from ansible_collections.accelops.gpu.plugins.module_utils import _gpu_config as gc
    from ansible_collections.accelops.gpu.plugins.module_utils import _gpu_mig as gm

    manager = gm.MigManager(session)
    differs = failed = False
    for layout, targets in zip(config.get("mig_layouts") or [], targets_per_layout):
        for gpu in targets:
            if gpu["lost"]:
                say("GPU %d: lost, MIG layout left out" % gpu["index"])
                failed = True
        try:
            results, _plans = gm.lay_out(manager, [g for g in targets if not g["lost"]], layout["layout"], False,
                                         check)
        except gc.ApplyFailed as exc:
            report(exc.results[:-1], check, say, "mig")
            raise
        report(results, check, say, "mig")
        differs = differs or any(r["changed"] for r in results)
    return differs, failed


def main(argv):
    check, lib, paths = arguments(argv)
    if len(paths) != 1:
        sys.stderr.write(__doc__)
        return EXIT_USAGE
    sys.path.insert(0, lib)
    from ansible_collections.accelops.gpu.plugins.module_utils import _nvml
    from ansible_collections.accelops.gpu.plugins.module_utils._gpu_apply import FAULTS, ConfigError, describe_fault

    try:
        with open(paths[0], encoding="utf-8") as handle:
            config = json.load(handle)
    except (OSError, ValueError) as exc:
        print("cannot read %s: %s" % (paths[0], exc))
        return EXIT_FAILED
    try:
        check_config(config)
    except ConfigError as exc:
        print("%s: %s; nothing was changed" % (paths[0], exc))
        return EXIT_FAILED
    state_dir = os.environ.get("ACCELOPS_GPU_STATE_DIR", "/run/accelops-gpu")
    with _nvml.NvmlSession() as session:
        _available, loaded, reason = session.open()
        if not loaded:
            print("NVML is not usable: %s" % reason)
            return EXIT_FAILED
        # Each pass says what it did; a failure names its pass, so that "nothing was changed" in the MIG pass is not
        # read as undoing the settings pass before it.
        stage = "MIG layouts"
        try:
            targets = mig_targets(session, config)  # every GPU selector resolved before any pass changes anything
            stage = "settings"
            differs, failed = settings_pass(session, config, check, state_dir, print)
            stage = "MIG layouts"
            mig_differs, mig_failed = mig_pass(session, config, targets, check, print)
        except ConfigError as exc:  # nothing changed in this pass, or ApplyFailed: what changed before the failure
            print("%s: %s" % (stage, exc))
            return EXIT_FAILED
        except FAULTS as exc:
            print("%s: %s" % (stage, describe_fault("NVML", "reading the GPUs", exc)))
            return EXIT_FAILED
    if failed or mig_failed:
        return EXIT_FAILED
    return EXIT_DIFFERS if check and (differs or mig_differs) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
