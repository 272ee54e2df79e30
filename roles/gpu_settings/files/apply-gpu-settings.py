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


def settings_pass(session, config, check, state_dir, say):
    from ansible_collections.accelops.gpu.plugins.module_utils import _gpu_config as gc

    memory = gc.LockedClocksMemory(state_dir)
    if not check:
        memory.save({})  # the driver has just loaded: nothing is locked, whatever an earlier boot remembered
    configurator = gc.GpuConfigurator(session, memory)
    gpus = configurator.inventory()
    rules = [(["all"], config.get("settings") or {}, "settings.")] + [
        (rule.get("gpus", ["all"]), rule, "per_gpu[%d]." % n) for n, rule in enumerate(config.get("per_gpu") or [])]
    desired = gc.desired_per_gpu(rules, gpus)
    differs = failed = False
    for index in sorted(desired):
        gpu, label = gpus[index], "GPU %d" % index
        if gpu["lost"]:
            say("%s: lost, left out" % label)
            failed = True
            continue
        current = configurator.read(gpu)
        errors = configurator.validate(desired[index], current, label)
        if errors:
            say("; ".join(errors))
            failed = True
            continue
        changes = configurator.plan(desired[index], current)
        if check:
            changes.pop("locked_clocks_mhz", None)  # cannot be read back, so never reported as differing
        if changes:
            differs = True
            if not check:
                configurator.apply(gpu, changes, label)
        say("%s: %s" % (label, ("%s %s" % ("differs" if check else "set", ", ".join(sorted(changes))))
                        if changes else "as configured"))
    return differs, failed


def mig_pass(session, config, check, say):
    from ansible_collections.accelops.gpu.plugins.module_utils import _gpu_config as gc
    from ansible_collections.accelops.gpu.plugins.module_utils import _gpu_mig as gm

    manager = gm.MigManager(session)
    gpus = gc.inventory(session)
    differs = failed = False
    for layout in config.get("mig_layouts") or []:
        for index in gc.resolve_targets(layout.get("gpus", ["all"]), gpus):
            gpu, label = gpus[index], "GPU %d" % index
            modes = session.query("nvmlDeviceGetMigMode", gpu["handle"]) if not gpu["lost"] else None
            if not modes or not modes[0]:
                say("%s: MIG mode is not on, layout left out" % label)
                failed = True
                continue
            table = manager.profiles(gpu["handle"])
            placements = {name: table[name]["placements"] for name in table}
            if set(layout["layout"]) - set(table) or gm.fit(layout["layout"], placements) is None:
                say("%s: layout %s does not fit this GPU" % (label, " + ".join(layout["layout"])))
                failed = True
                continue
            current = manager.instances(gpu["handle"], table, manager.processes(gpu["handle"]))
            plan = gm.plan_layout(layout["layout"], current, placements)
            changing = bool(plan["destroy"] or plan["create"])
            if changing and not check:
                for instance in plan["destroy"]:
                    manager.destroy(instance, label)
                for spot in plan["create"]:
                    manager.create(gpu["handle"], table[spot[0]], spot, label)
            differs = differs or changing
            say("%s: MIG layout %s" % (label, ("differs" if check else "laid out") if changing else "as configured"))
    return differs, failed


def main(argv):
    check, lib, paths = arguments(argv)
    if len(paths) != 1:
        sys.stderr.write(__doc__)
        return EXIT_USAGE
    sys.path.insert(0, lib)
    from ansible_collections.accelops.gpu.plugins.module_utils import _nvml
    from ansible_collections.accelops.gpu.plugins.module_utils._gpu_config import ConfigError

    with open(paths[0], encoding="utf-8") as handle:
        config = json.load(handle)
    state_dir = os.environ.get("ACCELOPS_GPU_STATE_DIR", "/run/accelops-gpu")
    with _nvml.NvmlSession() as session:
        _available, loaded, reason = session.open()
        if not loaded:
            print("NVML is not usable: %s" % reason)
            return EXIT_FAILED
        try:
            differs, failed = settings_pass(session, config, check, state_dir, print)
            mig_differs, mig_failed = mig_pass(session, config, check, print)
        except ConfigError as exc:
            print(exc)
            return EXIT_FAILED
    if failed or mig_failed:
        return EXIT_FAILED
    return EXIT_DIFFERS if check and (differs or mig_differs) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
