# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Re-apply the GPU settings that the NVIDIA driver forgets when it loads.

Installed by the accelops.gpu.gpu_settings role and run at boot by accelops-gpu-settings.service with the Python of
the accelops.gpu.nvml_python virtual environment (which has pynvml).

Usage: apply-gpu-settings [--check] CONFIG.json

CONFIG holds {"rules": [{"gpus": ["all" | index | UUID, ...], "persistence_mode": bool, "power_limit_w": number,
"compute_mode": "default" | "exclusive_process" | "prohibited", "locked_clocks_mhz": {"min": MHz, "max": MHz} |
"reset"}, ...]}; later rules win. With --check nothing is changed and the exit code is 3 when something differs.
Locked clocks cannot be read back through NVML: they are applied on every run and not compared under --check.
"""

import json
import sys

import pynvml

COMPUTE_MODES = {"default": 0, "prohibited": 2, "exclusive_process": 3}
EXIT_FAILED, EXIT_DIFFERS = 1, 3


def targets(selectors, count, uuids):
    chosen = set()
    for raw in selectors:
        selector = str(raw)
        if selector == "all":
            chosen.update(range(count))
        elif selector.isdigit() and int(selector) < count:
            chosen.add(int(selector))
        elif selector.lower() in uuids:
            chosen.add(uuids[selector.lower()])
        else:
            raise ValueError("no GPU %s on this node" % selector)
    return sorted(chosen)


def desired_state(rules, count, uuids):
    """Per GPU index, the final value of each setting after all rules."""
    state = {index: {} for index in range(count)}
    for rule in rules:
        settings = {k: v for k, v in rule.items() if k != "gpus" and v is not None}
        for index in targets(rule.get("gpus", ["all"]), count, uuids):
            state[index].update(settings)
    return state


def apply(handle, settings, check):
    """Return the list of settings that differed (and were set unless ``check``)."""
    differs = []
    if "persistence_mode" in settings:
        want = int(bool(settings["persistence_mode"]))
        if pynvml.nvmlDeviceGetPersistenceMode(handle) != want:
            differs.append("persistence_mode")
            if not check:
                pynvml.nvmlDeviceSetPersistenceMode(handle, want)
    if "power_limit_w" in settings:
        want = round(float(settings["power_limit_w"]) * 1000)
        if pynvml.nvmlDeviceGetPowerManagementLimit(handle) != want:
            differs.append("power_limit_w")
            if not check:
                pynvml.nvmlDeviceSetPowerManagementLimit(handle, want)
    if "compute_mode" in settings:
        want = COMPUTE_MODES[settings["compute_mode"]]
        if pynvml.nvmlDeviceGetComputeMode(handle) != want:
            differs.append("compute_mode")
            if not check:
                pynvml.nvmlDeviceSetComputeMode(handle, want)
    clocks = settings.get("locked_clocks_mhz")
    if clocks and not check:
        if clocks == "reset":
            pynvml.nvmlDeviceResetGpuLockedClocks(handle)
        else:
            pynvml.nvmlDeviceSetGpuLockedClocks(handle, int(clocks["min"]), int(clocks["max"]))
    return differs


def main(argv):
    check = "--check" in argv
    paths = [a for a in argv if a != "--check"]
    if len(paths) != 1:
        sys.stderr.write(__doc__)
        return 2
    with open(paths[0]) as handle:
        rules = json.load(handle).get("rules", [])
    pynvml.nvmlInit()
    failed = differed = False
    try:
        count = pynvml.nvmlDeviceGetCount()
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        uuids = {}
        for index, handle in enumerate(handles):
            try:
                uuids[pynvml.nvmlDeviceGetUUID(handle).lower()] = index
            except pynvml.NVMLError:
                pass
        try:
            desired = desired_state(rules, count, uuids)
        except ValueError as exc:
            print("%s: %s" % (paths[0], exc))
            return EXIT_FAILED
        for index, settings in sorted(desired.items()):
            if not settings:
                continue
            try:
                differs = apply(handles[index], settings, check)
            except pynvml.NVMLError as exc:
                print("GPU %d: %s" % (index, exc))
                failed = True
                continue
            differed = differed or bool(differs)
            verb = "differs" if check else "set"
            print("GPU %d: %s" % (index, ("%s %s" % (verb, ", ".join(differs))) if differs else "as configured"))
    finally:
        pynvml.nvmlShutdown()
    if failed:
        return EXIT_FAILED
    return EXIT_DIFFERS if check and differed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
